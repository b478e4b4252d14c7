import type { StandbyProgress } from '../metrics.js'
import type { RecordWriter } from '../state/checkpoint-store.js'
import type { Clock } from '../time/clock.js'
import type { Scheduler } from '../time/scheduler.js'
import type { Logger } from '../util/logger.js'
import { ChangelogReader } from './changelog-reader.js'
import type { RestoreConsumer } from './changelog-reader.js'
import type { ChangelogTopics } from './changelog-topics.js'
import { NO_COMMIT } from './commit-numbers.js'
import type { CommitMark } from './commit-numbers.js'
import type { LocalTaskRecords, TaskChangelogPartitions, Watermarks } from './local-task-records.js'

/** Records moved from a standby's reader to its local records per step. */
const BATCH = 2000
/** How long a standby closing waits for the group's marks before it checkpoints with the ones it has. */
const CLOSING_MARKS_WAIT_MS = 5_000

/** What the standby tasks need of the runtime. */
export interface StandbyParts {
  readonly local: LocalTaskRecords
  readonly logger: Logger
  readonly clock: Clock
  readonly scheduler: Scheduler
  /** How often each standby's local records are checkpointed (the commit interval, as Kafka Streams). */
  readonly checkpointIntervalMs: number
  /** A task's partition of each of its changelog topics. */
  partitionsOf(taskId: string): TaskChangelogPartitions
  topicsOf(taskId: string): ChangelogTopics
  /** A reader's view of the instance's one restore consumer. */
  channel(): RestoreConsumer
  watermarks(topic: string, partition: number): Promise<Watermarks>
  /**
   * At least once: each task's mark, from the group's offsets of its inputs (none: the task was never
   * committed). Absent under exactly-once, where the restore consumer reads committed records only.
   */
  readonly marks?: (taskIds: readonly string[]) => Promise<ReadonlyMap<string, CommitMark>>
  fail(err: unknown): void
}

interface Standby {
  readonly id: string
  readonly reader: ChangelogReader
  readonly writer: RecordWriter
  /** At least once: the mark its local records follow. */
  mark: CommitMark | undefined
  /** Records written to its local records, in all, and at its last checkpoint. */
  applied: number
  checkpointed: number
  closed: boolean
}

/**
 * The standby tasks a streams group gives this instance (Kafka Streams' `StandbyTask`): each keeps its
 * task's local records (`LocalTaskRecords`, the state directory) up with the task's changelog topics,
 * read from where its local records reach (or the beginning) on through the owner's writes, without
 * processing input. Every `checkpointIntervalMs`, and when it closes, it writes where its records reach,
 * so that the task, once active here, restores its local records and only the changelog's tail.
 *
 * At least once its reader follows the group's mark (`ChangelogReader.follow`): the owner writes a
 * commit's records before the group takes its offsets, so a record is applied only once the group's
 * mark covers its commit, and one the mark voids (a commit a crash cut short) never is. The marks are
 * read again from the group at each checkpoint and when a standby closes.
 *
 * Changes are applied one after the other: standbys that go are closed (and checkpointed) before the
 * caller goes on to start active tasks, which may be the same tasks.
 */
export class StandbyTasks {
  private readonly standbys = new Map<string, Standby>()
  private queue: Promise<void> = Promise.resolve()
  private cancelTimer: (() => void) | undefined
  private stopped = false

  constructor(private readonly parts: StandbyParts) {}

  /** The standby tasks running here. */
  ids(): string[] {
    return [...this.standbys.keys()]
  }

  /** Each standby task here, with the changelog records it applied. */
  progress(): StandbyProgress[] {
    return [...this.standbys.values()].map((s) => ({ taskId: s.id, applied: s.applied }))
  }

  /**
   * The standby tasks the group gives this instance now. Resolves once those no longer given are closed
   * and checkpointed; the new ones start after that, in the background.
   */
  update(taskIds: ReadonlySet<string>): Promise<void> {
    const closed = this.enqueue(() => this.close([...this.standbys.keys()].filter((id) => !taskIds.has(id))))
    void this.enqueue(() => this.start([...taskIds].filter((id) => !this.standbys.has(id))))
    return closed
  }

  /** Closes every standby, checkpointing it; none starts afterwards. */
  stop(): Promise<void> {
    this.stopped = true
    this.cancelTimer?.()
    this.cancelTimer = undefined
    return this.enqueue(() => this.close([...this.standbys.keys()]))
  }

  private enqueue(step: () => Promise<void>): Promise<void> {
    const done = this.queue.then(step)
    this.queue = done.catch((err: unknown) => this.parts.fail(err))
    return this.queue
  }

  private async start(ids: readonly string[]): Promise<void> {
    if (ids.length === 0 || this.stopped) return
    const { local, logger } = this.parts
    const marks = await this.parts.marks?.(ids)
    await local.load(
      ids.map((id) => this.parts.partitionsOf(id)),
      (t, p) => this.parts.watermarks(t, p),
      (id) => marks?.get(id),
    )
    for (const id of ids) {
      const mark = marks === undefined ? undefined : (marks.get(id) ?? NO_COMMIT)
      const from = local.takeOffsets(id)
      const reader = new ChangelogReader(this.parts.channel(), this.parts.topicsOf(id), this.parts.partitionsOf(id).partition, (err) => this.parts.fail(err), from, mark, true)
      const standby: Standby = { id, reader, writer: local.tailWriter(id), mark, applied: 0, checkpointed: 0, closed: false }
      this.standbys.set(id, standby)
      reader.open((err) => this.parts.fail(new Error(`standby task ${id}: connecting its restore consumer: ${err.message}`)))
      void this.pump(standby)
      logger.info({ taskId: id }, `standby task ${id} started: it follows its changelog from ${from === undefined ? 'the beginning' : 'its local state'}`)
    }
    this.arm()
  }

  /** Moves what the reader gives into the local records, as it comes. */
  private async pump(s: Standby): Promise<void> {
    while (!s.closed) {
      await s.reader.whenReadable()
      try {
        this.drain(s)
      } catch (err) {
        if (!s.closed) this.parts.fail(err)
        return
      }
    }
  }

  private drain(s: Standby): void {
    for (;;) {
      const batch = s.reader.read(BATCH)
      if (batch.length === 0) return
      for (const record of batch) s.writer.write(record)
      s.applied += batch.length
    }
  }

  private arm(): void {
    if (this.cancelTimer !== undefined || this.stopped || this.standbys.size === 0) return
    this.cancelTimer = this.parts.scheduler.at(this.parts.clock.now() + this.parts.checkpointIntervalMs, () => {
      this.cancelTimer = undefined
      void this.enqueue(() => this.checkpointAll()).then(() => this.arm())
    })
  }

  /** Checkpoints the standbys that applied records since their last checkpoint, or hold records a newer mark may release. */
  private async checkpointAll(): Promise<void> {
    const due = [...this.standbys.values()].filter((s) => s.applied > s.checkpointed || s.reader.holding())
    if (due.length === 0) return
    const marks = await this.freshMarks(due.filter((s) => s.reader.holding()).map((s) => s.id))
    for (const s of due) await this.checkpoint(s, marks?.get(s.id))
  }

  /** The group's marks of these tasks (at least once), or undefined when not needed or not answered. */
  private async freshMarks(ids: readonly string[], waitMs?: number): Promise<ReadonlyMap<string, CommitMark> | undefined> {
    const marks = this.parts.marks
    if (marks === undefined || ids.length === 0) return undefined
    try {
      const asked = marks(ids)
      if (waitMs === undefined) return await asked
      let timer: NodeJS.Timeout | undefined
      const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), waitMs)))
      return await Promise.race([asked, late]).finally(() => clearTimeout(timer))
    } catch (err) {
      this.parts.logger.debug({ err }, "standby tasks: the group's marks were not read; their held records wait for the next checkpoint")
      return undefined
    }
  }

  /** Applies what the reader holds (and what `mark` releases), waits for the writes, then records where they reach. */
  private async checkpoint(s: Standby, mark: CommitMark | undefined): Promise<void> {
    if (mark !== undefined) {
      s.reader.follow(mark)
      s.mark = mark
    }
    this.drain(s)
    const offsets = s.reader.readTo()
    const n = s.mark?.n
    s.checkpointed = s.applied
    await s.writer.written()
    await this.parts.local.savePosition(s.id, offsets, n)
  }

  private async close(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return
    const closing = ids.map((id) => this.standbys.get(id) as Standby)
    for (const s of closing) {
      s.closed = true
      s.reader.close()
      this.standbys.delete(s.id)
    }
    const marks = await this.freshMarks(
      closing.filter((s) => s.reader.holding()).map((s) => s.id),
      CLOSING_MARKS_WAIT_MS,
    )
    for (const s of closing) {
      try {
        await this.checkpoint(s, marks?.get(s.id))
        this.parts.logger.info({ taskId: s.id, applied: s.applied }, `standby task ${s.id} closed: its local state reaches the changelog's offsets ${JSON.stringify(s.reader.readTo())}`)
      } catch (err) {
        this.parts.logger.warn({ err, taskId: s.id }, `standby task ${s.id} closed without a checkpoint: ${(err as Error).message}`)
      }
    }
    if (this.standbys.size === 0) {
      this.cancelTimer?.()
      this.cancelTimer = undefined
    }
  }
}
