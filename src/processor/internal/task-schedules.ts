import { PunctualError } from '../../errors.js'
import { PunctuationType } from '../api.js'
import type { Cancellable, Punctuator, ScheduleSpec } from '../api.js'
import { compileSchedule, Punctuation, PunctuationQueue } from './punctuation.js'

/** How the schedules reach their task: its clock, stream time, and how to run a callback. */
export interface ScheduleHost {
  readonly taskId: string
  streamTimeOrUndefined(): number | undefined
  wallClockNow(): number
  /** Runs one punctuation's callback (metrics, error handling). */
  run(p: Punctuation, now: number): void
  /** Called when the earliest wall-clock due time may have moved. */
  wallClockChanged(): void
  /** How long after its due time a wall-clock punctuation fired (metrics). */
  wallClockLateness(ms: number): void
}

/**
 * A task's punctuation schedules: registration (names, validation, the `fireOnce` catch-up), the two
 * queues (stream time, wall clock) and the last fire time of each schedule, which the task checkpoints.
 */
export class TaskSchedules {
  private readonly stream = new PunctuationQueue()
  private readonly wall = new PunctuationQueue()
  private readonly active = new Map<string, Punctuation>()
  private readonly ordinals = new Map<string, number>()
  private readonly lastFires: Map<string, number>
  private readonly catchUps: Punctuation[] = []
  private seq = 0

  constructor(
    private readonly host: ScheduleHost,
    lastFires: Readonly<Record<string, number>> | undefined,
  ) {
    this.lastFires = new Map(Object.entries(lastFires ?? {}))
  }

  schedule(processorName: string, spec: ScheduleSpec, callback: Punctuator): Cancellable {
    const { rule, onMissed } = compileSchedule(spec, processorName)
    if (typeof callback !== 'function') {
      throw new PunctualError('INVALID_CONFIG', `processor "${processorName}" schedule: the callback must be a function`)
    }
    const ordinal = this.ordinals.get(processorName) ?? 0
    this.ordinals.set(processorName, ordinal + 1)
    const name = spec.name ?? `${processorName}#${ordinal}`
    if (this.active.has(name)) {
      throw new PunctualError('INVALID_CONFIG', `processor "${processorName}": a schedule named "${name}" is already active in task ${this.host.taskId}`)
    }
    const p = new Punctuation(name, processorName, spec.type, rule, onMissed, callback, this.seq++)
    const isStream = spec.type === PunctuationType.STREAM_TIME
    const now = isStream ? this.host.streamTimeOrUndefined() : this.host.wallClockNow()
    p.due = rule.first(now)
    if (onMissed === 'fireOnce' && now !== undefined) {
      const last = this.lastFires.get(name)
      if (last !== undefined && rule.missedSince(last, now)) this.catchUps.push(p)
      // Never fired: count from now, so a first due point missed in a crash before its fire was
      // committed is still caught up after the restart.
      if (last === undefined) this.lastFires.set(name, now)
    }
    this.active.set(name, p)
    const queue = isStream ? this.stream : this.wall
    if (queue.add(p) && !isStream) this.host.wallClockChanged()
    return {
      cancel: () => {
        if (p.cancelled) return
        if (this.active.get(name) === p) this.active.delete(name)
        if (queue.cancel(p) && !isStream) this.host.wallClockChanged()
      },
    }
  }

  /** The `fireOnce` catch-up calls, once, at start-up. */
  runCatchUps(): void {
    for (const p of this.catchUps.splice(0)) {
      if (p.cancelled) continue
      const now = p.type === PunctuationType.STREAM_TIME ? this.host.streamTimeOrUndefined() : this.host.wallClockNow()
      if (now !== undefined) this.fire(p, now)
    }
  }

  nextStreamDue(): number {
    return this.stream.nextDue()
  }

  nextWallDue(): number {
    return this.wall.nextDue()
  }

  punctuateStream(now: number): number {
    return this.stream.punctuate(now, this.fire)
  }

  punctuateWall(now: number): number {
    return this.wall.punctuate(now, this.fireWall)
  }

  lastFireTimes(): Record<string, number> {
    return Object.fromEntries(this.lastFires)
  }

  private readonly fire = (p: Punctuation, now: number): void => {
    this.lastFires.set(p.name, now)
    this.host.run(p, now)
  }

  /** A wall-clock punctuation fired on its timer: `due` is still the point it fires for. */
  private readonly fireWall = (p: Punctuation, now: number): void => {
    this.host.wallClockLateness(now - p.due)
    this.fire(p, now)
  }
}
