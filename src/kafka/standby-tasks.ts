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
import type { StandbyPosition } from './streams-group/task-offsets.js'
import type { LocalTaskRecords, TaskChangelogPartitions, Watermarks } from './local-task-records.js'

/** Records moved from a standby's reader to its local records per step. */
const BATCH = 2000
/** How long a standby waits for the group's marks before it goes on with the ones it has (or starts later). */
const MARKS_WAIT_MS = 5_000
/**
 * A standby with nothing new still records where it stands this often: the age of that record is how
 * old its local state looks to a restore (`LOCAL_STATE_MAX_AGE_MS`).
 */
const REFRESH_MS = 60 * 60 * 1000
/** A full reader (`ChangelogReader.full`) whose mark released nothing asks the group again after this long. */
const FULL_RETRY_MS = 1_000

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
  /** A reader's view of the standbys' consumer. */
  channel(): RestoreConsumer
  watermarks(topic: string, partition: number): Promise<Watermarks>
  /**
   * At least once: each task's mark, from the group's offsets of its inputs (none: the task was never
   * committed). Absent under exactly-once, where the changelogs are read committed.
   */
  readonly marks?: (taskIds: readonly string[]) => Promise<ReadonlyMap<string, CommitMark>>
  /** Whether the task runs here as an active task, or is restoring or closing: its standby waits. */
  busy(taskId: string): boolean
  /** Settles once the commit under way (whose local half may write a task that just left) is done. */
  settled(): Promise<void>
  /** Closes the standbys' consumer. */
  close(): Promise<void>
  fail(err: unknown): void
}

interface Standby {
  readonly id: string
  readonly reader: ChangelogReader
  readonly writer: RecordWriter
  /** At least once: the number of the last commit its local state held when it started (0: none). */
  readonly startN: number
  /** Records written to its local records, in all, and at its last checkpoint. */
  applied: number
  checkpointed: number
  checkpointedAt: number
  /** Its reader failed: it closes and starts again at the next checkpoint. */
  failed: boolean
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
 * read again from the group at each checkpoint, when a standby closes, and when its reader is full
 * (`ChangelogReader.full`): what a standby holds in memory is bounded by `HELD_MAX` records.
 *
 * Changes are applied one after the other: standbys that go are closed (and checkpointed) before the
 * caller goes on to start active tasks, which may be the same tasks. A standby starts only once its task
 * neither runs here nor restores, and the commit under way is done (a task lost here may still have its
 * local half to write). A standby that cannot start (the group's offsets not answered) or whose reader
 * fails is tried again at the next checkpoint: a standby's trouble never stops the instance.
 */
export class StandbyTasks {
  private readonly standbys = new Map<string, Standby>()
  /** The standby tasks the group gives this instance now. */
  private wanted: ReadonlySet<string> = new Set()
  private queue: Promise<void> = Promise.resolve()
  private cancelTimer: (() => void) | undefined
  private stopped = false

  constructor(private readonly parts: StandbyParts) {}

  /** Each standby task running here, with the changelog records it applied. */
  progress(): StandbyProgress[] {
    return [...this.standbys.values()].map((s) => ({ taskId: s.id, applied: s.applied }))
  }

  /** Where each standby's local state stands in its changelogs, and their ends where known (the member's task offsets). */
  positions(): StandbyPosition[] {
    return [...this.standbys.values()].map((s) => ({ taskId: s.id, offsets: s.reader.readTo(), ends: s.reader.changelogEnds() }))
  }

  /**
   * The standby tasks the group gives this instance now. Resolves once those no longer given are closed
   * and checkpointed; the new ones start after that, in the background.
   */
  update(taskIds: ReadonlySet<string>): Promise<void> {
    this.wanted = taskIds
    const closed = this.enqueue(() => this.close([...this.standbys.keys()].filter((id) => !taskIds.has(id))))
    void this.enqueue(() => this.startWanted())
    return closed
  }

  /** Closes every standby, checkpointing it, and their consumer; none starts afterwards. */
  stop(): Promise<void> {
    this.stopped = true
    this.wanted = new Set()
    this.cancelTimer?.()
    this.cancelTimer = undefined
    return this.enqueue(async () => {
      await this.close([...this.standbys.keys()])
      await this.parts.close()
    })
  }

  private enqueue(step: () => Promise<void>): Promise<void> {
    this.queue = this.queue.then(step).catch((err: unknown) => this.parts.fail(err))
    return this.queue
  }

  /** Starts the standbys wanted that do not run and may start now; the others wait for the next checkpoint. */
  private async startWanted(): Promise<void> {
    const ids = [...this.wanted].filter((id) => !this.standbys.has(id) && !this.parts.busy(id))
    if (ids.length > 0 && !this.stopped) {
      try {
        await this.start(ids)
      } catch (err) {
        this.parts.logger.warn({ err, tasks: ids.join(',') }, `standby tasks ${ids.join(', ')} could not start (${(err as Error).message}); tried again at the next checkpoint`)
      }
    }
    this.arm()
  }

  private async start(ids: readonly string[]): Promise<void> {
    const { local, logger } = this.parts
    const marks = this.parts.marks === undefined ? undefined : await this.bounded(this.parts.marks(ids))
    if (this.parts.marks !== undefined && marks === undefined) throw new Error("the group's offsets of their inputs were not answered")
    await this.parts.settled()
    await local.load(
      ids.map((id) => this.parts.partitionsOf(id)),
      (t, p) => this.parts.watermarks(t, p),
      (id) => marks?.get(id),
    )
    for (const id of ids) {
      // Wanted no more, or its task started here meanwhile: its local state is the task's.
      if (!this.wanted.has(id) || this.parts.busy(id) || this.stopped) continue
      const mark = marks === undefined ? undefined : (marks.get(id) ?? NO_COMMIT)
      const from = local.takePosition(id)
      const standby: Standby = {
        id,
        reader: new ChangelogReader(this.parts.channel(), this.parts.topicsOf(id), this.parts.partitionsOf(id).partition, (err) => this.readerFailed(standby, err), from?.offsets, mark, true),
        writer: local.tailWriter(id),
        startN: from?.n ?? 0,
        applied: 0,
        checkpointed: 0,
        checkpointedAt: this.parts.clock.now(),
        failed: false,
        closed: false,
      }
      this.standbys.set(id, standby)
      standby.reader.open((err) => this.readerFailed(standby, err))
      void this.pump(standby)
      logger.info({ taskId: id }, `standby task ${id} started: it follows its changelog from ${from === undefined ? 'the beginning' : 'its local state'}`)
    }
  }

  private readerFailed(s: Standby, err: { message: string }): void {
    if (s.closed || s.failed) return
    s.failed = true
    this.parts.logger.warn({ taskId: s.id }, `standby task ${s.id}: reading its changelog failed (${err.message}); it starts again at the next checkpoint`)
  }

  /** Moves what the reader gives into the local records, as it comes. */
  private async pump(s: Standby): Promise<void> {
    while (!s.closed && !s.failed) {
      await s.reader.whenReadable()
      try {
        this.drain(s)
      } catch (err) {
        this.readerFailed(s, err as Error)
      }
      if (s.reader.full() && !s.closed) await this.release(s)
    }
  }

  /**
   * A full reader's records wait for a mark that covers them: the group's is read now, in turn with the
   * checkpoints. When it releases nothing (the owner has not committed since), it is read again a little later.
   */
  private async release(s: Standby): Promise<void> {
    await this.enqueue(async () => {
      if (s.closed) return
      const mark = (await this.freshMarks([s.id]))?.get(s.id)
      if (mark !== undefined) s.reader.follow(mark)
    })
    if (!s.reader.full() || s.closed) return
    await new Promise<void>((resolve) => this.parts.scheduler.at(this.parts.clock.now() + FULL_RETRY_MS, resolve))
  }

  private drain(s: Standby): void {
    for (;;) {
      const batch = s.reader.read(BATCH)
      if (batch.length === 0) return
      for (const record of batch) s.writer.write(record)
      s.applied += batch.length
    }
  }

  /** Arms the one timer for the next checkpoint, while standbys run or wait to start. */
  private arm(): void {
    if (this.cancelTimer !== undefined || this.stopped || this.wanted.size === 0) return
    this.cancelTimer = this.parts.scheduler.at(this.parts.clock.now() + this.parts.checkpointIntervalMs, () => {
      this.cancelTimer = undefined
      void this.enqueue(async () => {
        const failed = [...this.standbys.values()].filter((s) => s.failed).map((s) => s.id)
        await this.close(failed)
        await this.checkpointAll()
        await this.startWanted()
      })
    })
  }

  /** Checkpoints the standbys that applied records since their last checkpoint, hold records a newer mark may release, or were not checkpointed for long. */
  private async checkpointAll(): Promise<void> {
    const now = this.parts.clock.now()
    const due = [...this.standbys.values()].filter((s) => s.applied > s.checkpointed || s.reader.holding() || now - s.checkpointedAt >= REFRESH_MS)
    if (due.length === 0) return
    const marks = await this.freshMarks(due.filter((s) => s.reader.holding()).map((s) => s.id))
    for (const s of due) await this.checkpoint(s, marks?.get(s.id))
  }

  /** The group's marks of these tasks (at least once), or undefined when not needed or not answered in time. */
  private async freshMarks(ids: readonly string[]): Promise<ReadonlyMap<string, CommitMark> | undefined> {
    const marks = this.parts.marks
    if (marks === undefined || ids.length === 0) return undefined
    const read = await this.bounded(marks(ids))
    if (read === undefined) this.parts.logger.debug({ tasks: ids.join(',') }, "standby tasks: the group's marks were not read in time; their held records wait for the next checkpoint")
    return read
  }

  /** `promise`'s value, or undefined when it fails or takes longer than MARKS_WAIT_MS. */
  private async bounded<T>(promise: Promise<T>): Promise<T | undefined> {
    let timer: (() => void) | undefined
    const late = new Promise<undefined>((resolve) => (timer = this.parts.scheduler.at(this.parts.clock.now() + MARKS_WAIT_MS, () => resolve(undefined))))
    try {
      return await Promise.race([promise, late])
    } catch {
      return undefined
    } finally {
      timer?.()
    }
  }

  /** Applies what the reader holds (and what `mark` releases), waits for the writes, then records where they reach. */
  private async checkpoint(s: Standby, mark: CommitMark | undefined): Promise<void> {
    if (mark !== undefined) s.reader.follow(mark)
    this.drain(s)
    const offsets = s.reader.readTo()
    // At least once: the highest commit its records hold, one the group took (every record applied is covered).
    const n = this.parts.marks === undefined ? undefined : Math.max(s.startN, s.reader.highestApplied)
    s.checkpointed = s.applied
    s.checkpointedAt = this.parts.clock.now()
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
    const marks = await this.freshMarks(closing.filter((s) => s.reader.holding()).map((s) => s.id))
    for (const s of closing) {
      try {
        await this.checkpoint(s, marks?.get(s.id))
        this.parts.logger.info({ taskId: s.id, applied: s.applied }, `standby task ${s.id} closed: its local state reaches the changelog's offsets ${JSON.stringify(s.reader.readTo())}`)
      } catch (err) {
        this.parts.logger.warn({ err, taskId: s.id }, `standby task ${s.id} closed without a checkpoint: ${(err as Error).message}`)
      }
    }
    if (this.wanted.size === 0) {
      this.cancelTimer?.()
      this.cancelTimer = undefined
    }
  }
}
