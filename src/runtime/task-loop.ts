import type { StreamTask } from '../processor/internal/task.js'
import { Alarm } from '../time/alarm.js'
import type { Clock } from '../time/clock.js'
import type { Scheduler } from '../time/scheduler.js'

/** Records a task processes before the loop looks at the clock again. */
const BATCH = 256
/** Longest stretch of processing before the loop yields to the event loop (timers, I/O). */
const SLICE_MS = 5
/** Changelog records a run reads into restoring tasks before it processes (about a millisecond's work). */
const RESTORE_BATCH = 1000

/** What the loop needs from the runtime that owns it. */
export interface LoopHost {
  readonly tasks: readonly StreamTask[]
  readonly clock: Clock
  /** Runs the one armed timer. */
  readonly scheduler: Scheduler
  readonly commitIntervalMs: number
  /** Durable runs also commit every `commitMaxRecords` records, and while draining. */
  readonly commitMaxRecords: number
  isDurable(): boolean
  isRunning(): boolean
  /**
   * Takes a commit (checkpoints, state changes, new records) and has it written; the promise settles
   * when it is durable (then released records are freed). Undefined: done already (nothing durable).
   */
  writeCommit(): Promise<void> | undefined
  /**
   * Reads up to `maxRecords` changelog records into restoring tasks; returns whether another step would
   * read more now (a source still fetching calls `wake` when it has records).
   */
  restoreStep(maxRecords: number, wake: () => void): boolean
  /** Applies what arrived on the global stores' topics, before the tasks process. */
  updateGlobals?(): void
  /** Hands new output to subscribers, after each slice. */
  deliver(): void
  fail(err: unknown): void
}

/**
 * The task loop both runtimes run their tasks on: processes records in short slices on the event loop
 * (so timers and I/O interleave), fires wall-clock punctuations and processing-time timers through one timer armed
 * for the earliest due time (nothing polls), and decides when to commit: every `commitIntervalMs` of
 * work, every `commitMaxRecords` records in a durable run, and right after wall-clock punctuations fired.
 * What differs between the runtimes comes through its `LoopHost`: where commits go, how restores read,
 * what happens after each slice.
 */
export class TaskLoop {
  private readonly alarm: Alarm
  private runScheduled = false
  private inRun = false
  private nextCommitAt = 0
  /** Whether records were processed or written since the last commit: an idle runtime has nothing to commit. */
  private uncommitted = false
  /** Records processed since the last commit (durable mode bounds it with commitMaxRecords). */
  private recordsSinceCommit = 0
  /** The commit being made durable; no other starts before it settles. */
  private inFlight: Promise<void> | undefined
  /** A commit was due while one was in flight: it starts when that one settles. */
  private commitAgain = false
  /** Why the last commit failed, for whoever waits on it while the runtime stops. */
  private commitError: unknown

  constructor(private readonly host: LoopHost) {
    this.alarm = new Alarm(host.clock, host.scheduler, this.onAlarm)
  }

  /** A record was appended to some topic: there may be work. */
  readonly onAppend = (): void => {
    this.uncommitted = true
    this.scheduleRun()
  }

  /** A task's earliest wall-clock due time may have moved. */
  readonly onWallClockChange = (): void => {
    if (!this.inRun && this.host.isRunning()) this.rearm()
  }

  readonly scheduleRun = (): void => {
    if (this.runScheduled || !this.host.isRunning()) return
    this.runScheduled = true
    setImmediate(this.run)
  }

  /**
   * Takes a commit now and restarts the commit interval; if one is still being made durable, this one
   * starts when it settles. Processing goes on while a commit is written (its changes were taken), up to
   * `commitMaxRecords` records in a durable run.
   */
  commit(): void {
    if (this.inFlight !== undefined) {
      this.commitAgain = true
      return
    }
    const durable = this.host.writeCommit()
    this.uncommitted = false
    this.recordsSinceCommit = 0
    this.nextCommitAt = this.host.clock.now() + this.host.commitIntervalMs
    if (durable === undefined) return
    this.inFlight = durable.then(
      () => {
        this.inFlight = undefined
        if (!this.host.isRunning()) return
        // Read-committed subscribers may see what this commit made durable.
        try {
          this.host.deliver()
        } catch (err) {
          this.host.fail(err)
          return
        }
        if (this.commitAgain) {
          this.commitAgain = false
          this.commit()
        }
        this.scheduleRun()
        this.rearm()
      },
      (err: unknown) => {
        this.inFlight = undefined
        this.commitError = err
        if (this.host.isRunning()) this.host.fail(err)
      },
    )
  }

  /** Resolves once no commit is being written and no run is pending (tests on a manual clock). */
  async idle(): Promise<void> {
    for (;;) {
      await this.settled()
      if (!this.runScheduled && this.inFlight === undefined) return
      await new Promise((resolve) => setImmediate(resolve))
    }
  }

  /** Takes a commit now; only when none is in flight (after `settled()`), so that it is not deferred. */
  commitNow(): void {
    if (this.inFlight !== undefined) throw new Error('commitNow: a commit is in flight; await settled() first')
    this.commit()
  }

  /** Resolves when no commit is being written; rejects with the error of one that failed. */
  async settled(): Promise<void> {
    while (this.inFlight !== undefined) await this.inFlight
    if (this.commitError !== undefined) throw this.commitError
  }

  /** Waits for the commit in flight, whatever its outcome, and forgets one that failed (the runtime recovered from it). */
  async discardFailedCommit(): Promise<void> {
    while (this.inFlight !== undefined) await this.inFlight
    this.commitError = undefined
    this.commitAgain = false
  }

  /** Commits once the commit in flight (if any) settled, and resolves when this one is durable. */
  async commitAndWait(): Promise<void> {
    await this.settled()
    this.commitAgain = false
    this.commit()
    await this.settled()
  }

  /** Processes everything already written; durable runs commit every commitMaxRecords on the way. */
  async drain(): Promise<void> {
    const durable = this.host.isDurable()
    const chunk = durable ? this.host.commitMaxRecords : Infinity
    for (let progressed = true; progressed; ) {
      progressed = false
      this.host.updateGlobals?.()
      for (const task of this.host.tasks) {
        const n = task.process(chunk)
        if (n === 0) continue
        progressed = true
        this.uncommitted = true
        if (durable) await this.commitAndWait()
      }
    }
  }

  /** Arms the one real timer for the earliest wall-clock due time (or the next commit). */
  rearm(): void {
    if (!this.host.isRunning()) return
    // While a commit is in flight the next one waits for it (its settling commits and re-arms), so the
    // commit interval is not a wake-up then.
    const commitDue = this.uncommitted && this.inFlight === undefined ? this.nextCommitAt : Infinity
    this.alarm.armAt(Math.min(this.nextWallClockDue(), commitDue))
  }

  disarm(): void {
    this.alarm.disarm()
  }

  private readonly run = (): void => {
    this.runScheduled = false
    if (!this.host.isRunning()) return
    this.inRun = true
    let more: boolean
    try {
      // Restoring tasks take a bounded step per run, so the active ones go on processing meanwhile.
      const restoring = this.host.restoreStep(RESTORE_BATCH, this.scheduleRun)
      more = this.runSlice() || restoring
      this.host.deliver()
    } catch (err) {
      this.host.fail(err)
      return
    } finally {
      this.inRun = false
    }
    if (more) this.scheduleRun()
    this.rearm()
  }

  /** Processes in batches for at most SLICE_MS; returns whether records are left to process. */
  private runSlice(): boolean {
    const { clock, tasks } = this.host
    const sliceEnd = clock.now() + SLICE_MS
    const durable = this.host.isDurable()
    for (;;) {
      // A durable run holds at most commitMaxRecords uncommitted records: wait for the commit in flight.
      if (durable && this.inFlight !== undefined && this.recordsSinceCommit >= this.host.commitMaxRecords) {
        // Wall-clock punctuations and processing-time timers do not wait for the commit: they are due
        // whatever the input does. Processing resumes when the commit settles (its settling runs the loop).
        const now = clock.now()
        if (now >= this.nextWallClockDue()) this.punctuateWallClock(now, false)
        this.commitAgain = true
        return false
      }
      let more = false
      this.host.updateGlobals?.()
      for (const task of tasks) {
        const n = task.process(BATCH)
        if (n > 0) {
          this.uncommitted = true
          this.recordsSinceCommit += n
        }
        if (n === BATCH) more = true
      }
      const now = clock.now()
      if (now >= this.nextWallClockDue()) this.punctuateWallClock(now)
      if (this.uncommitted && (now >= this.nextCommitAt || (durable && this.recordsSinceCommit >= this.host.commitMaxRecords))) this.commit()
      if (!more || now >= sliceEnd) return more
    }
  }

  private readonly onAlarm = (): void => {
    if (!this.host.isRunning()) return
    if (this.runScheduled) return // the scheduled run fires what is due
    this.run()
  }

  private punctuateWallClock(now: number, thenRun = true): void {
    let fired = 0
    for (const task of this.host.tasks) fired += task.punctuateWallClock(now)
    // Last fire times must be durable before the next fire could be missed: commit right away.
    if (fired > 0) this.commit()
    // Punctuations may have written records, and tasks waiting on an empty partition may be ready now.
    if (thenRun) this.scheduleRun()
  }

  private nextWallClockDue(): number {
    let due = Infinity
    for (const task of this.host.tasks) {
      const d = task.nextWallClockDue()
      if (d < due) due = d
    }
    return due
  }
}
