import { PunctualError } from '../errors.js'
import type { TaskMetrics } from '../metrics.js'
import type { StreamTask } from '../processor/internal/task.js'
import type { ChangelogRecord } from './changelog.js'
import { ChangelogRestorer } from './changelog-records.js'
import { createTask } from './task-factory.js'
import type { TaskDefinition, TaskFactoryConfig } from './task-factory.js'

/**
 * The runtime's active tasks, as assignment changes them (Kafka Streams' TaskManager). A task assigned
 * is built from its last commit, restored before it processes anything, and initialized; a task revoked
 * is committed (by the runtime, with every other task) and closed. The embedded runtime assigns every
 * task at start. A task lost (closed without a commit) needs its uncommitted output taken back, which
 * the embedded log cannot do yet: there is no `lose`.
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
   * Builds, restores and initializes the given tasks (those already active are left as they are). A task
   * is rebuilt from `changelogs(id)` when that gives records (a changelog it was committed to), else
   * from its last commit.
   */
  assign(ids: readonly string[], changelogs?: (taskId: string) => Iterable<ChangelogRecord> | undefined): void {
    const created: StreamTask[] = []
    for (const id of ids) {
      if (this.find(id) !== undefined) continue
      const def = this.definition(id)
      const records = changelogs?.(id) ?? this.kept.get(id)
      const restored = records === undefined ? undefined : new ChangelogRestorer(this.config.committer.codecFor(def.subtopology.id, def.subtopology.stores)).applyAll(records).checkpoint()
      const task = createTask(def, this.config, restored)
      this.kept.delete(id)
      created.push(task)
      this.active.push(task)
    }
    for (const task of created) task.init()
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
