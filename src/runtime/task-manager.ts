import { PunctualError } from '../errors.js'
import type { TaskMetrics } from '../metrics.js'
import type { StreamTask } from '../processor/internal/task.js'
import type { ChangelogRecord } from './changelog.js'
import { ChangelogRestorer } from './changelog-records.js'
import { isChangelogSource, recordsSource } from './changelog-source.js'
import type { ChangelogSource } from './changelog-source.js'
import { checkpointEntries, createTask, loadCheckpoint } from './task-factory.js'
import type { TaskDefinition, TaskFactoryConfig } from './task-factory.js'

/** How far a task's restore from its changelog has come. */
export interface RestoreProgress {
  readonly taskId: string
  readonly restored: number
  /** Records still to read, when the source knows. */
  readonly remaining: number | undefined
}

/** A task being rebuilt from its changelog: records read so far, folded into its last state. */
interface Restoring {
  readonly def: TaskDefinition
  readonly source: ChangelogSource
  readonly restorer: ChangelogRestorer
  readonly started: number
  /** Waiting for its source to have records (`whenReadable`). */
  waiting: boolean
}

/**
 * The runtime's active tasks, as assignment changes them (Kafka Streams' TaskManager). A task assigned
 * is built from its last commit, restored before it processes anything, and initialized: from the state
 * directory at once, or, from changelog records, in steps the runtime takes between processing slices
 * (`restoreStep`), reporting progress, while the other tasks go on; a task revoked
 * is committed (by the runtime, with every other task) and closed. The embedded runtime assigns every
 * task at start. A task lost is closed without a commit (`lose`).
 */
export class TaskManager {
  /** Metrics of tasks no longer active, so counts do not go back when a task leaves. */
  private readonly retired: TaskMetrics[] = []
  /**
   * Without a state directory, a revoked task's state as changelog records (what its compacted
   * changelog would hold), so that assigning it again rebuilds it from them (a durable run restores from
   * the state directory instead).
   */
  private readonly kept = new Map<string, ChangelogRecord[]>()
  /** Tasks restoring from changelog records, in assignment order. */
  private readonly restoring = new Map<string, Restoring>()
  /** Who waits for a restoring task to become active. */
  private readonly onActive = new Map<string, Array<() => void>>()
  private readonly byId: ReadonlyMap<string, TaskDefinition>

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
   * records (`changelogs(id)`, or what this manager kept when it revoked it) restores from them in
   * `restoreStep`s; the others are built from their last commit, restored and initialized now.
   */
  assign(ids: readonly string[], changelogs?: (taskId: string) => ChangelogSource | Iterable<ChangelogRecord> | undefined): void {
    const created: Array<{ task: StreamTask; entries: number | undefined; ms: number }> = []
    for (const id of ids) {
      if (this.find(id) !== undefined || this.restoring.has(id)) continue
      const def = this.definition(id)
      const records = changelogs?.(id) ?? this.kept.get(id)
      this.kept.delete(id)
      if (records !== undefined) {
        const codec = this.config.committer.codecFor(def.subtopology.id, def.subtopology.stores)
        this.restoring.set(id, { def, source: isChangelogSource(records) ? records : recordsSource(records), restorer: new ChangelogRestorer(codec), started: performance.now(), waiting: false })
        continue
      }
      const started = performance.now()
      const checkpoint = loadCheckpoint(def, this.config)
      const task = createTask(def, this.config, checkpoint)
      created.push({ task, entries: checkpoint === undefined ? undefined : checkpointEntries(checkpoint), ms: performance.now() - started })
      this.active.push(task)
    }
    // Initialized once all are built (timers go back in init, when their owners have registered).
    for (const { task, entries, ms } of created) {
      const started = performance.now()
      task.init()
      if (entries !== undefined) this.config.onRestored?.({ taskId: task.taskId.toString(), from: 'stateDirectory', count: entries, ms: ms + performance.now() - started })
    }
  }

  /**
   * Reads up to `maxRecords` changelog records into the restoring tasks, oldest assignment first; a task
   * whose changelog is read is built from them, initialized and becomes active. A source with nothing to
   * read yet is left until it says it has (`wake` is called then). Returns whether another step would
   * read anything now.
   */
  restoreStep(maxRecords: number, wake: () => void): boolean {
    let budget = maxRecords
    let more = false
    for (const [id, r] of this.restoring) {
      if (r.waiting) continue
      if (budget <= 0) {
        more = true
        break
      }
      const batch = r.source.read(budget)
      for (const record of batch) r.restorer.apply(record)
      budget -= batch.length
      const left = r.source.remaining()
      if (left !== 0 && (left !== undefined || batch.length > 0)) {
        if (batch.length > 0 || r.source.whenReadable === undefined) more = true
        else {
          r.waiting = true
          void r.source.whenReadable().then(() => {
            r.waiting = false
            wake()
          })
        }
        continue
      }
      this.restoring.delete(id)
      const task = createTask(r.def, this.config, r.restorer.checkpoint())
      this.active.push(task)
      task.init()
      this.config.onRestored?.({ taskId: id, from: 'changelog', count: r.restorer.applied, ms: performance.now() - r.started })
      for (const resolve of this.onActive.get(id) ?? []) resolve()
      this.onActive.delete(id)
    }
    return more
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

  /** The tasks restoring from changelog records, and how far each has come. */
  restoreProgress(): RestoreProgress[] {
    return [...this.restoring].map(([taskId, r]) => ({ taskId, restored: r.restorer.applied, remaining: r.source.remaining() }))
  }

  /**
   * Closes the given tasks after the runtime committed them (`commit` runs first, for every task, in one
   * commit). Without a state directory their full checkpoints stay in memory for a later assignment.
   */
  revoke(ids: readonly string[], commit: () => void): void {
    const tasks = ids.map((id) => this.find(id)).filter((t): t is StreamTask => t !== undefined)
    if (tasks.length === 0) return
    commit()
    for (const task of tasks) {
      if (!this.config.committer.durable) this.kept.set(task.taskId.toString(), this.config.committer.codecOf(task).checkpointRecords(task.checkpoint()))
      this.remove(task)
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
      this.restoring.delete(id)
      // Whoever waited for it to become active waits no more: it will not.
      for (const resolve of this.onActive.get(id) ?? []) resolve()
      this.onActive.delete(id)
    }
  }

  /** The metrics of every task this manager ran, active or not. */
  metrics(): TaskMetrics[] {
    return [...this.retired, ...this.active.map((t) => t.metrics)]
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
