import type { KeyedChanges } from '../keyed/keyed-task-state.js'
import type { StoreKey } from '../processor/api.js'
import type { StreamTask } from '../processor/internal/task.js'
import type { TaskCheckpoint } from '../processor/internal/task-config.js'
import type { CheckpointStore } from '../state/checkpoint-store.js'
import type { DurableTaskState } from '../state/checkpoint-store.js'
import type { StoreDisk } from '../state/persistent-store.js'
import type { StoreBuilder } from '../state/stores.js'
import type { ChangelogListener, TaskChangelog } from './changelog.js'
import { TaskChangelogCodec } from './changelog-records.js'

/**
 * Takes the tasks' checkpoints at each commit and, with a checkpoint store (a state directory), writes
 * what changed since the previous commit in one transaction; hands the same changes to a changelog
 * listener; restores a task's durable part at start. Keeps commit counts and durations.
 */
export class Committer {
  private readonly checkpoints = new Map<string, TaskCheckpoint>()
  /** Per sub-topology: its stores' changelog serdes. */
  private readonly codecs = new Map<number, TaskChangelogCodec>()
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
    const changelog: TaskChangelog[] = []
    for (const task of tasks) {
      const id = task.taskId.toString()
      const previous = this.checkpoints.get(id)
      const checkpoint = task.lightCheckpoint()
      this.checkpoints.set(id, checkpoint)
      const changes = task.keyedChanges()
      if (changes !== undefined && (changes.states.length > 0 || changes.timers.length > 0)) keyedChanges.set(id, changes)
      const stores = task.storeChanges()
      if (stores.size > 0) storeChanges.set(id, stores)
      if (this.changelog !== undefined) {
        const records = this.codecOf(task).commitRecords(previous, checkpoint, keyedChanges.get(id), stores)
        if (records.length > 0) changelog.push({ taskId: id, records })
      }
    }
    this.store?.save(this.checkpoints, keyedChanges, storeChanges, alsoWrite)
    if (changelog.length > 0) this.changelog?.(changelog)
    const ms = performance.now() - started
    this.commits++
    this.totalMs += ms
    if (ms > this.maxMs) this.maxMs = ms
  }

  /** The codec of a task's changelog records (one per sub-topology). */
  codecOf(task: StreamTask): TaskChangelogCodec {
    return this.codecFor(task.taskId.subtopology, task.storeBuilders())
  }

  codecFor(subtopology: number, stores: readonly StoreBuilder[]): TaskChangelogCodec {
    let codec = this.codecs.get(subtopology)
    if (codec === undefined) this.codecs.set(subtopology, (codec = new TaskChangelogCodec(stores)))
    return codec
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
