import { invalidConfig } from '../errors.js'
import { shownValue } from '../processor/shown-value.js'

/** A window's bounds: [start, end) for time windows; [start, end] (both inclusive) for sessions. */
export interface Window {
  /** The window's start, epoch ms (inclusive). */
  readonly start: number
  /** The window's end, epoch ms: exclusive for time windows, inclusive for sessions and sliding windows. */
  readonly end: number
}

/** A windowed key: what windowed aggregations emit (Kafka Streams' Windowed<K>). */
export interface Windowed<K> {
  /** The record key the aggregation grouped by. */
  readonly key: K
  /** The window the aggregate is for. */
  readonly window: Window
}

/**
 * A read-only view of a window store for interactive queries (Kafka Streams' `ReadOnlyWindowStore`):
 * the windows a windowed aggregation holds (open windows: until their end plus the grace period; over
 * `TimeWindows`, closed ones within the store's retention). Scans iterate, as a key-value store's do:
 * `for ... of`, or `[...scan]` to keep them.
 */
export interface ReadOnlyWindowStore<K, V> {
  /** The key's aggregate in the window starting at `windowStart`, or undefined. */
  fetch(key: K, windowStart: number): V | undefined
  /** The key's windows starting from `timeFrom` to `timeTo` (both included), oldest first: [start, value]. */
  fetch(key: K, timeFrom: number, timeTo: number): IterableIterator<[number, V]>
  /** Every key's windows starting from `timeFrom` to `timeTo`, oldest window first. */
  fetchAll(timeFrom: number, timeTo: number): IterableIterator<[Windowed<K>, V]>
  /** Every window held. */
  all(): IterableIterator<[Windowed<K>, V]>
}

/** A read-only view of a session store for interactive queries (Kafka Streams' `ReadOnlySessionStore`); scans iterate. */
export interface ReadOnlySessionStore<K, V> {
  /** The key's sessions, oldest first. */
  fetch(key: K): IterableIterator<[Windowed<K>, V]>
  /** The key's sessions that end at or after `earliestSessionEndTime` and start at or before `latestSessionStartTime`. */
  findSessions(key: K, earliestSessionEndTime: number, latestSessionStartTime: number): IterableIterator<[Windowed<K>, V]>
}

/** A duration or time difference in ms, checked: an integer >= `min`, else an error naming `name` and the value. */
export function ms(name: string, v: number, min: number): number {
  if (!Number.isSafeInteger(v) || v < min) throw invalidConfig(name, `must be an integer >= ${min}, got ${shownValue(v)}`)
  return v
}

/** Tumbling (advance = size) or hopping windows [start, start + size), aligned to the epoch. */
export class TimeWindows {
  /** @internal Which kind of windows these are, for the DSL to choose its processors. */
  readonly kind = 'time' as const

  private constructor(
    /** The window size in ms. */
    readonly sizeMs: number,
    /** The distance between window starts in ms; equal to `sizeMs` for tumbling windows. */
    readonly advanceMs: number,
    /**
     * How long after a window ends (in stream time) records for it are still accepted; a later one is
     * dropped as `late`.
     */
    readonly graceMs: number,
  ) {}

  /**
   * Tumbling windows of `sizeMs` that accept out-of-order records until `graceMs` after they end
   * (Kafka Streams' `TimeWindows.ofSizeAndGrace`).
   * @throws PunctualError `INVALID_CONFIG` unless `sizeMs` is an integer >= 1 and `graceMs` an integer >= 0.
   */
  static ofSizeAndGrace(sizeMs: number, graceMs: number): TimeWindows {
    const size = ms('TimeWindows.ofSizeAndGrace size', sizeMs, 1)
    return new TimeWindows(size, size, ms('TimeWindows.ofSizeAndGrace grace', graceMs, 0))
  }

  /**
   * Tumbling windows of `sizeMs` that close as soon as stream time passes their end: an out-of-order
   * record for an ended window is dropped (Kafka Streams' `TimeWindows.ofSizeWithNoGrace`).
   * @throws PunctualError `INVALID_CONFIG` unless `sizeMs` is an integer >= 1.
   */
  static ofSizeWithNoGrace(sizeMs: number): TimeWindows {
    const size = ms('TimeWindows.ofSizeWithNoGrace size', sizeMs, 1)
    return new TimeWindows(size, size, 0)
  }

  /** Hopping windows: a new window every `advanceMs` (0 < advance <= size). */
  advanceBy(advanceMs: number): TimeWindows {
    const advance = ms('TimeWindows.advanceBy', advanceMs, 1)
    if (advance > this.sizeMs) throw invalidConfig('TimeWindows.advanceBy', `advance ${advance} must not exceed the window size ${this.sizeMs}`)
    return new TimeWindows(this.sizeMs, advance, this.graceMs)
  }

  /** @internal Starts of the windows that contain `ts`, ascending (Kafka Streams' windowsFor). */
  windowStartsFor(ts: number, out: number[]): number[] {
    out.length = 0
    let start = Math.max(0, ts - this.sizeMs + this.advanceMs)
    start = alignDown(start, this.advanceMs)
    for (; start <= ts; start += this.advanceMs) out.push(start)
    return out
  }

  /** How long windows are kept after they end: the grace period (at least until they close). */
  retentionMs(): number {
    return this.sizeMs + this.graceMs
  }
}

/** Session windows: records of a key closer than the inactivity gap merge into one session. */
export class SessionWindows {
  /** @internal Which kind of windows these are, for the DSL to choose its processors. */
  readonly kind = 'session' as const

  private constructor(
    /** The inactivity gap in ms: records of a key at most this far apart fall in one session. */
    readonly gapMs: number,
    /** How long after a session ends (in stream time) records that would extend or merge it are still accepted. */
    readonly graceMs: number,
  ) {}

  /**
   * Sessions with an inactivity gap of `gapMs`, accepting out-of-order records until `graceMs` after a
   * session ends (Kafka Streams' `SessionWindows.ofInactivityGapAndGrace`).
   * @throws PunctualError `INVALID_CONFIG` unless `gapMs` is an integer >= 1 and `graceMs` an integer >= 0.
   */
  static ofInactivityGapAndGrace(gapMs: number, graceMs: number): SessionWindows {
    return new SessionWindows(ms('SessionWindows gap', gapMs, 1), ms('SessionWindows grace', graceMs, 0))
  }

  /**
   * Sessions with an inactivity gap of `gapMs` and no grace period (Kafka Streams'
   * `SessionWindows.ofInactivityGapWithNoGrace`).
   * @throws PunctualError `INVALID_CONFIG` unless `gapMs` is an integer >= 1.
   */
  static ofInactivityGapWithNoGrace(gapMs: number): SessionWindows {
    return new SessionWindows(ms('SessionWindows gap', gapMs, 1), 0)
  }
}

/**
 * Sliding windows (KIP-450): windows of `timeDifferenceMs` whose bounds are both inclusive, defined by
 * the records themselves: each record has a window ending at it ([ts - difference, ts]) and, once a later
 * record falls within reach, one starting just after it ([ts + 1, ts + 1 + difference]).
 */
export class SlidingWindows {
  /** @internal Which kind of windows these are, for the DSL to choose its processors. */
  readonly kind = 'sliding' as const

  private constructor(
    /** The largest time difference, in ms, between two records of one window (Kafka Streams' timeDifferenceMs). */
    readonly timeDifferenceMs: number,
    /** How long after a window ends (in stream time) records for it are still accepted; a later one is dropped as `late`. */
    readonly graceMs: number,
  ) {}

  /**
   * Sliding windows of `timeDifferenceMs`, accepting out-of-order records until `graceMs` after a
   * window ends (Kafka Streams' `SlidingWindows.ofTimeDifferenceAndGrace`).
   * @throws PunctualError `INVALID_CONFIG` unless `timeDifferenceMs` is an integer >= 1 and `graceMs` an integer >= 0.
   */
  static ofTimeDifferenceAndGrace(timeDifferenceMs: number, graceMs: number): SlidingWindows {
    return new SlidingWindows(ms('SlidingWindows time difference', timeDifferenceMs, 1), ms('SlidingWindows grace', graceMs, 0))
  }

  /**
   * Sliding windows of `timeDifferenceMs` with no grace period (Kafka Streams'
   * `SlidingWindows.ofTimeDifferenceWithNoGrace`).
   * @throws PunctualError `INVALID_CONFIG` unless `timeDifferenceMs` is an integer >= 1.
   */
  static ofTimeDifferenceWithNoGrace(timeDifferenceMs: number): SlidingWindows {
    return new SlidingWindows(ms('SlidingWindows time difference', timeDifferenceMs, 1), 0)
  }
}

/**
 * The largest multiple of `step` that is <= `t` (both non-negative safe integers): `t - (t % step)`
 * without the modulo, which on doubles is a call into C and costs as much as the rest of a record's
 * window lookup. Exact: with k the true quotient's floor, the division rounds to k + 1 only if t is within
 * (k + 1) * step * 2^-53 of (k + 1) * step, which for integers needs t >= 2^53 (never for a safe
 * timestamp); it never rounds below k, and k * step <= t is an exact product.
 */
export function alignDown(t: number, step: number): number {
  return Math.floor(t / step) * step
}
