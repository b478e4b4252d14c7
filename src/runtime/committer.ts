import type { KeyedChanges } from '../keyed/keyed-task-state.js'
import type { StoreKey } from '../processor/api.js'
import type { StreamTask } from '../processor/internal/task.js'
import type { TaskCheckpoint } from '../processor/internal/task-config.js'
import type { CheckpointStore } from '../state/checkpoint-store.js'
import type { DurableTaskState } from '../state/checkpoint-store.js'
import type { StoreDisk } from '../state/persistent-store.js'
import type { ChangelogListener, TaskChangelog } from './changelog.js'

/**
 * Takes the tasks' checkpoints at each commit and, with a checkpoint store (a state directory), writes
 * what changed since the previous commit in one transaction; hands the same changes to a changelog
 * listener; restores a task's durable part at start. Keeps commit counts and durations.
 */
export class Committer {
  private readonly checkpoints = new Map<string, TaskCheckpoint>()
  private commits = 0
  private totalMs = 0
  private maxMs = 0
  /** Whether any task found committed state. */
  resumed = false

  constructor(
    private store: CheckpointStore | undefined,
    private readonly changelog?: ChangelogListener,
  ) {}

  get durable(): boolean {
    return this.store !== undefined
  }

  /** Whether tasks must record their state changes (for the store or the changelog). */
  get tracksChanges(): boolean {
    return this.store !== undefined || this.changelog !== undefined
  }

  /**
   * A task's last committed checkpoint, with the entries of the stores named `inMemoryStores` (stores
   * on disk read their entries there when needed).
   */
  restored(taskId: string, inMemoryStores: readonly string[]): TaskCheckpoint | undefined {
    const store = this.store
    if (store === undefined) return undefined
    const state: DurableTaskState | undefined = store.load(taskId)
    const keyed = store.loadKeyed(taskId)
    const stores = store.loadStores(taskId, inMemoryStores)
    if (state === undefined && keyed === undefined && stores === undefined) return undefined
    this.resumed = true
    return {
      streamTime: state?.streamTime,
      lastFires: state?.lastFires ?? {},
      positions: state?.positions ?? {},
      ...(keyed === undefined ? {} : { keyed }),
      ...(stores === undefined ? {} : { stores }),
    }
  }

  /** Where a persistent store of a task finds its committed entries (durable runtimes). */
  storeDisk(taskId: string, store: string): StoreDisk | undefined {
    return this.store?.storeDisk(taskId, store)
  }

  /** Input positions of every task's last commit, keyed `topic:partition` (the lowest, if tasks share a partition). */
  restoredPositions(): Map<string, number> {
    const out = new Map<string, number>()
    for (const state of this.store?.loadAll() ?? []) for (const [k, v] of Object.entries(state.positions)) out.set(k, Math.min(v, out.get(k) ?? Infinity))
    return out
  }

  /** Takes every task's checkpoint and writes the changes, plus what `alsoWrite` writes, in one transaction. */
  commit(tasks: readonly StreamTask[], alsoWrite?: () => void): void {
    const started = performance.now()
    const keyedChanges = new Map<string, KeyedChanges>()
    const storeChanges = new Map<string, Map<string, Array<[StoreKey, unknown]>>>()
    for (const task of tasks) {
      const id = task.taskId.toString()
      this.checkpoints.set(id, task.lightCheckpoint())
      const changes = task.keyedChanges()
      if (changes !== undefined && (changes.states.length > 0 || changes.timers.length > 0)) keyedChanges.set(id, changes)
      const stores = task.storeChanges()
      if (stores.size > 0) storeChanges.set(id, stores)
    }
    this.store?.save(this.checkpoints, keyedChanges, storeChanges, alsoWrite)
    if (this.changelog !== undefined && (keyedChanges.size > 0 || storeChanges.size > 0)) {
      const changes: TaskChangelog[] = []
      for (const task of tasks) {
        const taskId = task.taskId.toString()
        const stores = storeChanges.get(taskId)
        const keyed = keyedChanges.get(taskId)
        if (stores !== undefined || keyed !== undefined) changes.push({ taskId, stores: stores ?? new Map(), keyed })
      }
      this.changelog(changes)
    }
    const ms = performance.now() - started
    this.commits++
    this.totalMs += ms
    if (ms > this.maxMs) this.maxMs = ms
  }

  /** The last checkpoint of each task. */
  committed(): ReadonlyMap<string, TaskCheckpoint> {
    return this.checkpoints
  }

  stats(): { readonly commits: number; readonly meanMs: number; readonly maxMs: number } {
    return { commits: this.commits, meanMs: this.commits === 0 ? 0 : this.totalMs / this.commits, maxMs: this.maxMs }
  }

  /** Closes the store; later commits only take in-memory checkpoints. */
  close(): void {
    this.store?.close()
    this.store = undefined
  }
}
