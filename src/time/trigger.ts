import { Cron } from 'croner'
import { invalidConfig } from '../errors.js'

/**
 * When a schedule is due. Pure functions of time, so the same rule serves stream time and the wall clock,
 * the punctuation queue knows nothing about them, and they are tested in isolation.
 */
export interface TriggerRule {
  /** First due time for a schedule registered at `now`; `now` is undefined while stream time is unknown. */
  first(now: number | undefined): number
  /** Next due time after a firing at `now` of the point `due` (<= now): strictly after `now`. */
  next(due: number, now: number): number
  /** Whether a due point lies in (lastFire, now]: the test for the `fireOnce` missed-trigger policy. */
  missedSince(lastFire: number, now: number): boolean
  describe(): string
}

/** Interval schedule, optionally anchored at `startTime` (KIP-1146). SEMANTICS 2. */
export class IntervalRule implements TriggerRule {
  constructor(
    readonly intervalMs: number,
    readonly startTime: number | undefined,
    /** Unanchored stream-time schedules are due at 0 (fire at the first check once stream time is known). */
    private readonly unanchoredFirst: 'zero' | 'now+interval',
  ) {}

  first(now: number | undefined): number {
    const start = this.startTime
    if (start === undefined) {
      if (this.unanchoredFirst === 'zero' || now === undefined) return 0
      return now + this.intervalMs
    }
    if (now === undefined || start >= now) return start
    // Anchor in the past: the first grid point strictly after now (a point equal to now is skipped).
    return start + (Math.floor((now - start) / this.intervalMs) + 1) * this.intervalMs
  }

  next(due: number, now: number): number {
    // Missed grid points collapse into the call just made; the grid keeps its phase.
    return due + (Math.floor((now - due) / this.intervalMs) + 1) * this.intervalMs
  }

  missedSince(lastFire: number, now: number): boolean {
    const start = this.startTime
    if (start === undefined) return false
    const firstAfter = lastFire < start ? start : start + (Math.floor((lastFire - start) / this.intervalMs) + 1) * this.intervalMs
    return firstAfter <= now
  }

  describe(): string {
    return this.startTime === undefined
      ? `every ${this.intervalMs} ms`
      : `every ${this.intervalMs} ms from ${this.startTime}`
  }
}

/** A cron expression in an IANA time zone, daylight-saving correct (croner does the calendar work). */
export class CronRule implements TriggerRule {
  private readonly cron: Cron

  constructor(
    readonly expression: string,
    readonly timeZone: string,
    where: string,
  ) {
    assertTimeZone(timeZone, where)
    try {
      this.cron = new Cron(expression, { timezone: timeZone, paused: true })
    } catch (err) {
      throw invalidConfig(where, `invalid cron expression ${JSON.stringify(expression)}: ${(err as Error).message}`)
    }
    if (this.cron.nextRun(new Date(0)) === null) {
      throw invalidConfig(where, `cron expression ${JSON.stringify(expression)} never fires`)
    }
  }

  first(now: number | undefined): number {
    return this.after(now ?? 0)
  }

  next(_due: number, now: number): number {
    return this.after(now)
  }

  missedSince(lastFire: number, now: number): boolean {
    return this.after(lastFire) <= now
  }

  describe(): string {
    return `cron ${JSON.stringify(this.expression)} in ${this.timeZone}`
  }

  /** The first cron point strictly after `t`. */
  private after(t: number): number {
    const next = this.cron.nextRun(new Date(t))
    return next === null ? Infinity : next.getTime()
  }
}

function assertTimeZone(timeZone: string, where: string): void {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone })
  } catch {
    throw invalidConfig(where, `unknown IANA time zone ${JSON.stringify(timeZone)}`)
  }
}
