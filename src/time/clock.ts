import type { Scheduler } from './scheduler.js'

/** Source of wall-clock time in epoch milliseconds. Injected everywhere so tests control time. */
export interface Clock {
  now(): number
}

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
    assertTime(startMs, 'ManualClock start')
    this.current = startMs
  }

  now(): number {
    return this.current
  }

  /** Moves the clock forward by `ms`, running each scheduled callback that comes due on the way. */
  advance(ms: number): number {
    if (!Number.isSafeInteger(ms) || ms < 0) {
      throw new RangeError(`ManualClock.advance: ms must be a non-negative integer, got ${ms}`)
    }
    const target = this.current + ms
    for (let next = this.pending[0]; next !== undefined && next.due <= target; next = this.pending[0]) {
      this.pending.shift()
      if (next.due > this.current) this.current = next.due
      next.callback()
    }
    this.current = target
    return this.current
  }

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

function assertTime(t: number, what: string): void {
  if (!Number.isSafeInteger(t)) throw new RangeError(`${what}: must be an integer epoch millisecond, got ${t}`)
}
