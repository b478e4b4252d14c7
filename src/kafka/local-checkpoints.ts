import type { ChangelogRecord } from '../runtime/changelog.js'
import type { Logger } from '../util/logger.js'
import { localCheckpointPath, readLocalCheckpoint, removeLocalCheckpoint, writeLocalCheckpoint } from './checkpoint-file.js'
import type { LocalCheckpoint } from './checkpoint-file.js'

/**
 * How old a checkpoint may be: Kafka's default `delete.retention.ms`, which the changelog topics keep.
 * Compaction may drop a tombstone that old, and a checkpoint older than it could keep a key whose
 * deletion the tail no longer holds.
 */
export const LOCAL_CHECKPOINT_MAX_AGE_MS = 24 * 60 * 60 * 1000

/** A task's changelog partitions: its partition of each changelog topic of its sub-topology. */
export interface TaskChangelogPartitions {
  readonly taskId: string
  readonly partition: number
  readonly topics: readonly string[]
}

/**
 * The Kafka runtime's checkpoints of tasks in its state directory, as Kafka Streams keeps a task's
 * local state and a `.checkpoint` of its changelog offsets: when a task is revoked or the instance
 * stops, after the commit, its state is written as changelog records with the end offsets of its
 * changelog partitions (read while this instance still owns the task, so no other writer is in them).
 * A task assigned again reads its checkpoint and only the changelog from those offsets.
 *
 * A checkpoint is always a correct start, however old: its state is what the changelog held up to its
 * offsets, and the tail brings everything written after. It is not used when its offsets are past a
 * partition's end (the topic was deleted and made again), when the task's changelog topics changed, or
 * when it is older than `LOCAL_CHECKPOINT_MAX_AGE_MS`.
 */
export class LocalCheckpoints {
  /** Checkpoints being written, by task: a load of the task waits for its write. */
  private readonly writes = new Map<string, Promise<void>>()
  private readonly loaded = new Map<string, LocalCheckpoint>()

  constructor(
    private readonly stateDir: string,
    /** The end offset (high watermark) of a partition, asked of the broker. */
    private readonly endOffset: (topic: string, partition: number) => Promise<number>,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** Reads the usable checkpoints of these tasks (`take` hands them out); drops the others. */
  async load(tasks: readonly TaskChangelogPartitions[]): Promise<void> {
    await Promise.all(
      tasks.map(async (task) => {
        await this.writes.get(task.taskId)
        const path = localCheckpointPath(this.stateDir, task.taskId)
        let checkpoint: LocalCheckpoint | undefined
        try {
          checkpoint = await readLocalCheckpoint(path)
        } catch (err) {
          this.logger.warn({ taskId: task.taskId, err }, `task ${task.taskId}: its local checkpoint cannot be read (${(err as Error).message}); restoring from the changelog's beginning`)
          await removeLocalCheckpoint(path)
          return
        }
        if (checkpoint === undefined) return
        const unusable = await this.unusable(task, checkpoint)
        if (unusable !== undefined) {
          this.logger.info({ taskId: task.taskId }, `task ${task.taskId}: its local checkpoint is not used (${unusable}); restoring from the changelog's beginning`)
          await removeLocalCheckpoint(path)
          return
        }
        this.loaded.set(task.taskId, checkpoint)
      }),
    )
  }

  /** A task's checkpoint read by `load`, once. */
  take(taskId: string): LocalCheckpoint | undefined {
    const checkpoint = this.loaded.get(taskId)
    this.loaded.delete(taskId)
    return checkpoint
  }

  /**
   * Saves tasks' state, just committed: reads their changelog partitions' end offsets now (the caller
   * still owns the tasks), then writes each file in the background (`written` waits for them all).
   */
  async save(tasks: ReadonlyArray<TaskChangelogPartitions & { readonly records: readonly ChangelogRecord[] }>): Promise<void> {
    let ends: Array<Record<string, number>>
    try {
      ends = await Promise.all(tasks.map(async (task) => Object.fromEntries(await Promise.all(task.topics.map(async (topic) => [topic, await this.endOffset(topic, task.partition)] as const)))))
    } catch (err) {
      // Without the offsets the state cannot be placed in the changelog: the tasks restore from its beginning.
      this.logger.warn({ err }, `the local checkpoints of ${tasks.map((t) => t.taskId).join(', ')} were not written (${(err as Error).message})`)
      return
    }
    tasks.forEach((task, i) => {
      const path = localCheckpointPath(this.stateDir, task.taskId)
      const previous = this.writes.get(task.taskId) ?? Promise.resolve()
      const write = previous
        .then(() => writeLocalCheckpoint(path, { taskId: task.taskId, offsets: ends[i] as Record<string, number>, writtenAt: this.now() }, task.records))
        .catch(async (err: unknown) => {
          this.logger.warn({ taskId: task.taskId, err }, `task ${task.taskId}: its local checkpoint was not written (${(err as Error).message})`)
          await removeLocalCheckpoint(path).catch(() => undefined)
        })
        .finally(() => {
          if (this.writes.get(task.taskId) === write) this.writes.delete(task.taskId)
        })
      this.writes.set(task.taskId, write)
    })
  }

  /** Resolves once every checkpoint being written is on disk (or failed). */
  async written(): Promise<void> {
    while (this.writes.size > 0) await Promise.all(this.writes.values())
  }

  private async unusable(task: TaskChangelogPartitions, checkpoint: LocalCheckpoint): Promise<string | undefined> {
    if (checkpoint.taskId !== task.taskId) return `it is task ${checkpoint.taskId}'s`
    const topics = Object.keys(checkpoint.offsets).sort()
    if (topics.join(',') !== [...task.topics].sort().join(',')) return `its changelog topics ${topics.join(', ')} are not the task's ${[...task.topics].sort().join(', ')}`
    const age = this.now() - checkpoint.writtenAt
    if (age > LOCAL_CHECKPOINT_MAX_AGE_MS) return `it is ${Math.round(age / 3_600_000)} h old, older than the changelogs keep tombstones`
    for (const topic of topics) {
      const offset = checkpoint.offsets[topic] as number
      const end = await this.endOffset(topic, task.partition)
      if (offset > end) return `it reaches offset ${offset} of ${topic}-${task.partition}, whose end is ${end}: the topic was made again`
    }
    return undefined
  }
}
