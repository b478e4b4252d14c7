import { PunctualError } from '../errors.js'
import type { RestoreProgress, TaskMetrics } from '../metrics.js'
import type { StreamTask } from '../processor/internal/task.js'
import type { ChangelogRecord } from './changelog.js'
import { ChangelogRestorer } from './changelog-records.js'
import { isChangelogSource, recordsSource } from './changelog-source.js'
import type { ChangelogSource } from './changelog-source.js'
import { createTask, inMemoryStores, readsOnDisk } from './task-factory.js'
import type { TaskDefinition, TaskFactoryConfig } from './task-factory.js'
import { changelogRestore } from './task-restore.js'
import type { TaskRestore } from './task-restore.js'

/** Entries a restore reads per step while a stopping runtime finishes it. */
const FINISH_BATCH = 10_000
/** A restoring task reports its progress (`TaskEvent` 'restoring') at most this often. */
const PROGRESS_EVERY_MS = 1000

export type { RestoreProgress } from '../metrics.js'

/** A task being restored: what it is read from, and how far. */
interface Restoring {
  readonly def: TaskDefinition
  readonly from: 'changelog' | 'stateDirectory'
  readonly restore: TaskRestore
  /** The records this manager kept for the task (given back if it is revoked before it is restored). */
  readonly kept: ChangelogRecord[] | undefined
  readonly started: number
  /** Waiting for its source to have records (`whenReadable`). */
  waiting: boolean
  /** When its progress was last reported. */
  reported: number
}

/**
 * The runtime's active tasks, as assignment changes them (Kafka Streams' TaskManager). A task assigned
 * is restored before it processes anything: from its changelog records or its last commit in the state
 * directory, in bounded steps the runtime takes between processing slices (`restoreStep`), reporting
 * progress, while the other tasks go on; then it is built and initialized. A task with nothing to
 * restore starts at once. A task revoked is committed (by the runtime, with every other task) and
 * closed. The embedded runtime assigns every task at start. A task lost is closed without a commit
 * (`lose`).
 */
export class TaskManager {
  /** Metrics of tasks no longer active, so counts do not go back when a task leaves. */
  private readonly retired: TaskMetrics[] = []
  /**
   * Without durable commits (the embedded runtime without a state directory), a revoked task's state as
   * changelog records (what its compacted changelog would hold), so that assigning it again rebuilds it
   * from them (a durable run restores from what it committed: the state directory, or the changelog
   * topics).
   */
  private readonly kept = new Map<string, ChangelogRecord[]>()
  /** Tasks restoring, in assignment order. */
  private readonly restoring = new Map<string, Restoring>()
  /** Assignment order of each task assigned (see `activate`). */
  private readonly order = new Map<string, number>()
  private assigned = 0
  /** The `wake` of the last restore step: a source that becomes readable calls it. */
  private wake: () => void = () => {}
  /** Who waits for a waiting source to become readable (`finishRestoring`). */
  private readonly readable: Array<() => void> = []
  /** Who waits for a restoring task to become active. */
  private readonly onActive = new Map<string, Array<() => void>>()
  private readonly byId: ReadonlyMap<string, TaskDefinition>
  /** Whether any task assigned found a local checkpoint to restore from (a restart, not a fresh start). */
  resumed = false

  constructor(
    definitions: readonly TaskDefinition[],
    private readonly config: TaskFactoryConfig,
    /** The active tasks, in assignment order: the runtime's array, which its task loop iterates. */
    readonly active: StreamTask[],
  ) {
    this.byId = new Map(definitions.map((d) => [d.id, d]))
  }

  /** Every task the topology defines, by id. */
  allIds(): string[] {
    return [...this.byId.keys()]
  }

  activeIds(): string[] {
    return this.active.map((t) => t.taskId.toString())
  }

  /**
   * Assigns the given tasks (those active or restoring are left as they are). A task with changelog
   * records (`changelogs(id)`, or what this manager kept when it revoked it) restores from them, a task
   * with a local checkpoint (the state directory's last commit: `localState`) from that, both in
   * `restoreStep`s; the others start now.
   */
  assign(ids: readonly string[], changelogs?: (taskId: string) => ChangelogSource | Iterable<ChangelogRecord> | undefined): void {
    const fresh: StreamTask[] = []
    for (const id of ids) {
      if (this.find(id) !== undefined || this.restoring.has(id)) continue
      const def = this.definition(id)
      this.order.set(id, this.assigned++)
      this.config.onTaskEvent?.({ type: 'assigned', taskId: id })
      const kept = this.kept.get(id)
      const records = changelogs?.(id) ?? kept
      this.kept.delete(id)
      const restore: TaskRestore | undefined =
        records !== undefined
          ? changelogRestore(
              isChangelogSource(records) ? records : recordsSource(records),
              // Where the local state keeps what is read, persistent stores and keyed states read it there: not loaded into memory.
              new ChangelogRestorer(this.config.committer.codecFor(def.subtopology.id, def.subtopology.stores), this.config.localState?.keepsChangelog === true ? readsOnDisk(def) : undefined),
            )
          : this.restoreLocal(id, def)
      if (restore !== undefined) {
        this.config.committer.forget(id)
        const from = records !== undefined ? 'changelog' : 'stateDirectory'
        const started = performance.now()
        this.restoring.set(id, { def, from, restore, kept: records === kept ? kept : undefined, started, waiting: false, reported: started })
        this.config.onTaskEvent?.({ type: 'restoring', taskId: id, from, restored: 0, remaining: restore.remaining() })
        continue
      }
      const task = createTask(def, this.config, undefined)
      fresh.push(task)
      this.activate(task)
    }
    // Initialized once all are built (timers go back in init, when their owners have registered).
    for (const task of fresh) task.init()
    for (const task of fresh) this.config.onTaskEvent?.({ type: 'running', taskId: task.taskId.toString(), restored: 0 })
  }

  /** A task's last local checkpoint, read in steps; undefined: it has none, or the runtime keeps no local state. */
  private restoreLocal(id: string, def: TaskDefinition): TaskRestore | undefined {
    const restore = this.config.localState?.restore(id, inMemoryStores(def))
    if (restore !== undefined) this.resumed = true
    return restore
  }

  /**
   * Reads up to `maxRecords` changelog records or state directory entries into the restoring tasks,
   * oldest assignment first; a task read to its end is built, initialized and becomes active. A source
   * with nothing to read yet is left until it says it has (`wake` is called then). Returns whether
   * another step would read anything now.
   */
  restoreStep(maxRecords: number, wake: () => void): boolean {
    this.wake = wake
    let budget = maxRecords
    let more = false
    for (const [id, r] of this.restoring) {
      if (r.waiting) continue
      if (budget <= 0) {
        more = true
        break
      }
      const read = r.restore.read(budget)
      budget -= read
      if (!r.restore.done) {
        const now = performance.now()
        if (read > 0 && now - r.reported >= PROGRESS_EVERY_MS) {
          r.reported = now
          this.config.onTaskEvent?.({ type: 'restoring', taskId: id, from: r.from, restored: r.restore.count, remaining: r.restore.remaining() })
        }
        if (read > 0 || r.restore.whenReadable === undefined) more = true
        else {
          r.waiting = true
          void r.restore.whenReadable().then(() => {
            r.waiting = false
            this.wake()
            this.readable.forEach((resolve) => resolve())
            this.readable.length = 0
          })
        }
        continue
      }
      this.restoring.delete(id)
      const task = createTask(r.def, this.config, r.restore.checkpoint())
      this.activate(task)
      task.init()
      this.config.onRestored?.({ taskId: id, from: r.from, count: r.restore.count, ms: performance.now() - r.started })
      this.config.onTaskEvent?.({ type: 'running', taskId: id, restored: r.restore.count })
      this.activated(id)
    }
    return more
  }

  /**
   * Restores now, to their end, the tasks whose sources have every record at hand (the state directory,
   * records in memory); those waiting for records go on in later steps. The embedded runtime's start.
   */
  restoreNow(): void {
    while (this.restoreStep(FINISH_BATCH, this.wake));
  }

  /** Restores every restoring task to its end (a runtime stopping with a drain). */
  async finishRestoring(): Promise<void> {
    while (this.restoring.size > 0) {
      if (this.restoreStep(FINISH_BATCH, this.wake)) {
        await new Promise((resolve) => setImmediate(resolve))
      } else if (this.restoring.size > 0) {
        // Every restoring task waits for its source.
        await new Promise<void>((resolve) => this.readable.push(resolve))
      }
    }
  }

  /** Resolves when none of the given tasks is restoring any more. */
  async restored(ids: readonly string[]): Promise<void> {
    const active = (id: string): Promise<void> =>
      new Promise((resolve) => {
        const list = this.onActive.get(id)
        if (list === undefined) this.onActive.set(id, [resolve])
        else list.push(resolve)
      })
    await Promise.all(ids.filter((id) => this.restoring.has(id)).map(active))
  }

  /** The tasks restoring, and how far each has come. */
  restoreProgress(): RestoreProgress[] {
    return [...this.restoring].map(([taskId, r]) => ({ taskId, from: r.from, restored: r.restore.count, remaining: r.restore.remaining() }))
  }

  /** The tasks restoring. */
  restoringIds(): string[] {
    return [...this.restoring.keys()]
  }

  /**
   * Closes the given tasks after the runtime committed them (`commit` runs first, for every task, in one
   * commit). Without durable commits their full checkpoints stay in memory for a later assignment.
   */
  revoke(ids: readonly string[], commit: () => void): void {
    // A task still restoring has nothing to commit: it stops restoring (records kept for it are kept still).
    for (const id of ids) {
      const r = this.restoring.get(id)
      if (r === undefined) continue
      this.restoring.delete(id)
      if (r.kept !== undefined) this.kept.set(id, r.kept)
      this.activated(id)
      this.config.onTaskEvent?.({ type: 'revoked', taskId: id })
    }
    const tasks = ids.map((id) => this.find(id)).filter((t): t is StreamTask => t !== undefined)
    if (tasks.length === 0) return
    commit()
    for (const task of tasks) {
      if (!this.config.committer.durable) this.kept.set(task.taskId.toString(), this.config.committer.codecOf(task).checkpointRecords(task.checkpoint()))
      this.remove(task)
      this.config.onTaskEvent?.({ type: 'revoked', taskId: task.taskId.toString() })
    }
  }

  /**
   * Closes the given tasks without a commit, as when another process took them over (Kafka Streams' lost
   * tasks): what they did since their last commit is dropped, and assigning them again restores them
   * from that commit. Only a runtime whose commits are durable can lose a task.
   */
  lose(ids: readonly string[]): void {
    for (const id of ids) {
      this.kept.delete(id)
      const task = this.find(id)
      if (task !== undefined) this.remove(task)
      if (task !== undefined || this.restoring.has(id)) this.config.onTaskEvent?.({ type: 'lost', taskId: id })
      this.restoring.delete(id)
      this.config.committer.forget(id)
      // Whoever waited for it to become active waits no more: it will not.
      this.activated(id)
    }
  }

  /** The metrics of every task this manager ran, active or not. */
  metrics(): TaskMetrics[] {
    return [...this.retired, ...this.active.map((t) => t.metrics)]
  }

  /**
   * Adds a task to the active ones in assignment order, however long its restore took: the order tasks
   * process in decides how their outputs interleave in a shared topic.
   */
  private activate(task: StreamTask): void {
    const at = this.order.get(task.taskId.toString()) as number
    let i = this.active.length
    while (i > 0 && (this.order.get((this.active[i - 1] as StreamTask).taskId.toString()) as number) > at) i--
    this.active.splice(i, 0, task)
  }

  /** Tells whoever waits for the task that it is no longer restoring. */
  private activated(id: string): void {
    for (const resolve of this.onActive.get(id) ?? []) resolve()
    this.onActive.delete(id)
  }

  private remove(task: StreamTask): void {
    this.active.splice(this.active.indexOf(task), 1)
    this.retired.push(task.metrics)
    task.close()
  }

  private find(id: string): StreamTask | undefined {
    return this.active.find((t) => t.taskId.toString() === id)
  }

  private definition(id: string): TaskDefinition {
    const def = this.byId.get(id)
    if (def === undefined) throw new PunctualError('INVALID_ARGUMENT', `task ${id} is not a task of this topology; its tasks: ${this.allIds().join(', ')}`)
    return def
  }
}
