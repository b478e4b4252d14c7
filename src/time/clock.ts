/** Source of wall-clock time in epoch milliseconds. Injected everywhere so tests control time. */
export interface Clock {
  now(): number
}

export const systemClock: Clock = { now: () => Date.now() }

/** A clock that moves only when told to: the test kit and the scenario runner use it. */
export class ManualClock implements Clock {
  private current: number

  constructor(startMs = 0) {
    assertTime(startMs, 'ManualClock start')
    this.current = startMs
  }

  now(): number {
    return this.current
  }

  advance(ms: number): number {
    if (!Number.isSafeInteger(ms) || ms < 0) {
      throw new RangeError(`ManualClock.advance: ms must be a non-negative integer, got ${ms}`)
    }
    this.current += ms
    return this.current
  }
}

function assertTime(t: number, what: string): void {
  if (!Number.isSafeInteger(t)) throw new RangeError(`${what}: must be an integer epoch millisecond, got ${t}`)
}
