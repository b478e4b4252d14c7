import { PunctualError } from '../errors.js'
import type { Scheduler } from './scheduler.js'

/** Source of wall-clock time in epoch milliseconds. Injected everywhere so tests control time. */
export interface Clock {
  /** The current time, epoch ms. */
  now(): number
}

/** The real wall clock (`Date.now()`): the runtimes' default `clock`. */
export const systemClock: Clock = { now: () => Date.now() }

/**
 * A clock that moves only when told to: the test kit and the scenario runner use it. It is a
 * `Scheduler` too: given to the embedded runtime as its `clock`, it also drives the runtime's timer, and
 * `advance` runs the callbacks that come due, each with the clock set to its due time, in due-time order.
 */
export class ManualClock implements Clock, Scheduler {
  private current: number
  /** Scheduled callbacks, kept sorted by due time (then by the order they were scheduled). */
  private pending: Array<{ readonly due: number; readonly seq: number; readonly callback: () => void }> = []
  private seq = 0

  constructor(startMs = 0) {
    checkWallClockStart('ManualClock', 'startMs', startMs)
    this.current = startMs
  }

  /** The clock's time, epoch ms: it changes only through `advance`. */
  now(): number {
    return this.current
  }

  /** Moves the clock forward by `ms`, running each scheduled callback that comes due on the way. */
  advance(ms: number): number {
    checkAdvance('ManualClock.advance', ms)
    const target = this.current + ms
    for (let next = this.pending[0]; next !== undefined && next.due <= target; next = this.pending[0]) {
      this.pending.shift()
      if (next.due > this.current) this.current = next.due
      next.callback()
    }
    this.current = target
    return this.current
  }

  /**
   * Runs `callback` when an `advance` reaches `dueMs` (a due time already passed: at the next `advance`,
   * even by 0). Returns a function that cancels it.
   */
  at(dueMs: number, callback: () => void): () => void {
    const entry = { due: dueMs, seq: this.seq++, callback }
    let i = this.pending.length
    while (i > 0 && (this.pending[i - 1] as typeof entry).due > dueMs) i--
    this.pending.splice(i, 0, entry)
    return () => {
      const at = this.pending.indexOf(entry)
      if (at >= 0) this.pending.splice(at, 1)
    }
  }

  /** How many scheduled callbacks wait for the clock. */
  get scheduledCount(): number {
    return this.pending.length
  }
}

/**
 * @internal Refuses a manual clock's start that is not an epoch millisecond punctual accepts elsewhere
 * (an integer >= 0, as record timestamps): a clock before the epoch would hand punctuations and
 * processing-time timers times no record or schedule may have.
 */
export function checkWallClockStart(caller: string, name: string, startMs: unknown): void {
  if (typeof startMs !== 'number' || !Number.isSafeInteger(startMs) || startMs < 0) {
    throw new PunctualError('INVALID_CONFIG', `${caller}: ${name} must be an integer epoch millisecond >= 0, got ${String(startMs)}`)
  }
}

/** @internal Refuses a step of a manual clock that is not an integer number of milliseconds >= 0: the clock never goes back. */
export function checkAdvance(caller: string, ms: unknown): void {
  if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms < 0) {
    throw new PunctualError('INVALID_ARGUMENT', `${caller}: ms must be an integer >= 0 (the clock never goes back), got ${String(ms)}`)
  }
}
