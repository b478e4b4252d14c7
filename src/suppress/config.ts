import { invalidConfig } from '../errors.js'
import { shownValue } from '../processor/shown-value.js'

/** What a bounded buffer does when a put would exceed a bound. */
export type WhenFull = 'emitEarly' | 'shutDown' | 'spillToDisk'

/**
 * What every suppression buffer config has (Kafka Streams' `Suppressed.BufferConfig`): its bounds and
 * the ways to a new config. A config is immutable; each method returns a new one.
 */
export interface BufferConfigMethods<Self> {
  /** At most this many keys buffered. */
  readonly maxRecords: number
  /** At most this many bytes buffered (sum of entry sizes). */
  readonly maxBytes: number
  /**
   * The same config with at most `recordLimit` keys buffered.
   * @throws PunctualError `INVALID_CONFIG` unless `recordLimit` is an integer >= 1.
   */
  withMaxRecords(recordLimit: number): Self
  /**
   * The same config with at most `byteLimit` bytes buffered, entries measured by the suppression's sizer.
   * @throws PunctualError `INVALID_CONFIG` unless `byteLimit` is an integer >= 1.
   */
  withMaxBytes(byteLimit: number): Self
  /** No bound: the buffer grows as the time bound requires. */
  withNoBound(): StrictBufferConfig
  /** Stop the application with an error naming the suppression and the bound when it is exceeded. */
  shutDownWhenFull(): StrictBufferConfig
  /** Keep everything: entries beyond the bound go to an embedded on-disk store (beyond Kafka). */
  spillToDiskWhenFull(): StrictBufferConfig
}

/** May emit before the time bound when full: fewer duplicates downstream, not none (KIP-328). */
export interface EagerBufferConfig extends BufferConfigMethods<EagerBufferConfig> {
  /** False: the buffer may emit a key before its time bound. */
  readonly strict: false
  /** A full buffer emits its oldest entries early to make room. */
  readonly whenFull: 'emitEarly'
  /** The same config (already eager): Kafka Streams' `emitEarlyWhenFull`, default of a bounded buffer. */
  emitEarlyWhenFull(): EagerBufferConfig
}

/** Never emits early: the only kind `untilWindowCloses` accepts (final results). */
export interface StrictBufferConfig extends BufferConfigMethods<StrictBufferConfig> {
  /** True: the buffer never emits a key before its time bound. */
  readonly strict: true
  /** What a full buffer does: stop the application with `BUFFER_FULL`, or keep what exceeds the bound on disk. */
  readonly whenFull: 'shutDown' | 'spillToDisk'
}

/** A suppression buffer config: eager (may emit early when full) or strict (never does). */
export type BufferConfig = EagerBufferConfig | StrictBufferConfig

function limit(name: string, n: number): number {
  if (!Number.isSafeInteger(n) || n < 1) throw invalidConfig(`BufferConfig.${name}`, `must be an integer >= 1, got ${shownValue(n)}`)
  return n
}

function eager(maxRecords: number, maxBytes: number): EagerBufferConfig {
  return {
    strict: false,
    whenFull: 'emitEarly',
    maxRecords,
    maxBytes,
    withMaxRecords: (n) => eager(limit('withMaxRecords', n), maxBytes),
    withMaxBytes: (b) => eager(maxRecords, limit('withMaxBytes', b)),
    withNoBound: () => strict(Infinity, Infinity, 'shutDown'),
    emitEarlyWhenFull: () => eager(maxRecords, maxBytes),
    shutDownWhenFull: () => strict(maxRecords, maxBytes, 'shutDown'),
    spillToDiskWhenFull: () => strict(maxRecords, maxBytes, 'spillToDisk'),
  }
}

function strict(maxRecords: number, maxBytes: number, whenFull: 'shutDown' | 'spillToDisk'): StrictBufferConfig {
  return {
    strict: true,
    whenFull,
    maxRecords,
    maxBytes,
    withMaxRecords: (n) => strict(limit('withMaxRecords', n), maxBytes, whenFull),
    withMaxBytes: (b) => strict(maxRecords, limit('withMaxBytes', b), whenFull),
    withNoBound: () => strict(Infinity, Infinity, whenFull),
    shutDownWhenFull: () => strict(maxRecords, maxBytes, 'shutDown'),
    spillToDiskWhenFull: () => strict(maxRecords, maxBytes, 'spillToDisk'),
  }
}

/**
 * Makes suppression buffer configs (Kafka Streams' `Suppressed.BufferConfig` factories). A bounded one
 * starts eager; `shutDownWhenFull()` or `spillToDiskWhenFull()` make it strict.
 * @throws PunctualError `INVALID_CONFIG` for a limit that is not an integer >= 1.
 */
export const BufferConfig = {
  /** A buffer of at most `recordLimit` keys that emits early when full. */
  maxRecords: (recordLimit: number): EagerBufferConfig => eager(limit('maxRecords', recordLimit), Infinity),
  /** A buffer of at most `byteLimit` bytes that emits early when full. */
  maxBytes: (byteLimit: number): EagerBufferConfig => eager(Infinity, limit('maxBytes', byteLimit)),
  /** No bound (strict: never emits early). */
  unbounded: (): StrictBufferConfig => strict(Infinity, Infinity, 'shutDown'),
} as const

/** Where the wait of `untilTimeLimit` starts: the latest update (default) or the first (SEMANTICS 6). */
export type WaitFrom = 'latest' | 'first'

/** Size of a buffered entry in bytes; the default is serialized key + value + a fixed overhead. */
export type Sizer<K, V> = (key: K, value: V | null) => number

/** What both kinds of suppression have: a name, a buffer and how its entries are measured. A config is immutable; each method returns a new one. */
export interface SuppressedCommon<K, V, Self> {
  /** The suppression node's name; undefined for a generated one (`KTABLE-SUPPRESS-<n>`), which changes when the topology does. */
  readonly name: string | undefined
  /** The buffer's bounds and what it does when full. */
  readonly bufferConfig: BufferConfig
  /** Measures entries for `maxBytes`; undefined for the default (serialized key and value plus a fixed overhead). */
  readonly sizer: Sizer<K, V> | undefined
  /**
   * Names the suppression node (and its durable store).
   * @throws PunctualError `INVALID_CONFIG` for an empty name.
   */
  withName(name: string): Self
  /** The same suppression with entries measured by `sizer` for the buffer's `maxBytes`. */
  withSizer(sizer: Sizer<K, V>): Self
}

/** `untilTimeLimit`: emit a key's latest value once it has waited `waitMs` of stream time. */
export interface TimeLimitSuppressed<K, V> extends SuppressedCommon<K, V, TimeLimitSuppressed<K, V>> {
  /** Tells this kind from `untilWindowCloses`. */
  readonly until: 'timeLimit'
  /** How long a key waits, in stream time, before its latest value is emitted. */
  readonly waitMs: number
  /** Whether the wait starts at the key's latest update (Kafka Streams) or its first. */
  readonly waitFrom: WaitFrom
  /**
   * The same suppression with the wait starting at the key's latest (default) or first update.
   * @throws PunctualError `INVALID_CONFIG` for another value.
   */
  withWaitFrom(waitFrom: WaitFrom): TimeLimitSuppressed<K, V>
}

/** `untilWindowCloses`: one final result per window (windowed tables only). */
export interface WindowClosesSuppressed<K, V> extends SuppressedCommon<K, V, WindowClosesSuppressed<K, V>> {
  /** Tells this kind from `untilTimeLimit`. */
  readonly until: 'windowCloses'
  /** Always strict: a final result is never emitted before its window closes. */
  readonly bufferConfig: StrictBufferConfig
  /** Beyond Kafka: also emit once the wall clock reaches windowEnd + grace + this many ms. */
  readonly wallClockLimitMs: number | undefined
  /**
   * The same suppression, also emitting a window's result once the wall clock reaches
   * `windowEnd + grace + ms`, so that a result comes out when input stops (beyond Kafka Streams).
   * @throws PunctualError `INVALID_CONFIG` unless `ms` is an integer >= 0.
   */
  withWallClockLimit(ms: number): WindowClosesSuppressed<K, V>
}

/** How `KTable.suppress` holds back a table's updates (Kafka Streams' `Suppressed`, KIP-328). */
export type Suppressed<K, V> = TimeLimitSuppressed<K, V> | WindowClosesSuppressed<K, V>

function timeLimit<K, V>(waitMs: number, bufferConfig: BufferConfig, waitFrom: WaitFrom, name: string | undefined, sizer: Sizer<K, V> | undefined): TimeLimitSuppressed<K, V> {
  return {
    until: 'timeLimit',
    waitMs,
    bufferConfig,
    waitFrom,
    name,
    sizer,
    withWaitFrom: (w) => {
      if (w !== 'latest' && w !== 'first') throw invalidConfig('Suppressed.withWaitFrom', `must be "latest" or "first", got ${shownValue(w)}`)
      return timeLimit(waitMs, bufferConfig, w, name, sizer)
    },
    withName: (n) => timeLimit(waitMs, bufferConfig, waitFrom, checkName(n), sizer),
    withSizer: (s) => timeLimit(waitMs, bufferConfig, waitFrom, name, s),
  }
}

function windowCloses<K, V>(bufferConfig: StrictBufferConfig, wallClockLimitMs: number | undefined, name: string | undefined, sizer: Sizer<K, V> | undefined): WindowClosesSuppressed<K, V> {
  return {
    until: 'windowCloses',
    bufferConfig,
    wallClockLimitMs,
    name,
    sizer,
    withWallClockLimit: (ms) => {
      if (!Number.isSafeInteger(ms) || ms < 0) throw invalidConfig('Suppressed.withWallClockLimit', `must be an integer >= 0, got ${shownValue(ms)}`)
      return windowCloses(bufferConfig, ms, name, sizer)
    },
    withName: (n) => windowCloses(bufferConfig, wallClockLimitMs, checkName(n), sizer),
    withSizer: (s) => windowCloses(bufferConfig, wallClockLimitMs, name, s),
  }
}

function checkName(name: string): string {
  if (typeof name !== 'string' || name.length === 0) throw invalidConfig('Suppressed.withName', `must be a non-empty string, got ${shownValue(name)}`)
  return name
}

/**
 * Makes suppression configs for `KTable.suppress` (Kafka Streams' `Suppressed` factories).
 * @throws PunctualError `INVALID_CONFIG` for a negative or fractional `waitMs`, or an eager buffer
 *   config for `untilWindowCloses`.
 */
export const Suppressed = {
  /** Final results only: one result per window once `windowEnd + grace <= stream time`. */
  untilWindowCloses<K, V>(bufferConfig: StrictBufferConfig): WindowClosesSuppressed<K, V> {
    if (bufferConfig?.strict !== true) {
      throw invalidConfig('Suppressed.untilWindowCloses', 'needs a strict buffer config (BufferConfig.unbounded(), or a bound with shutDownWhenFull() or spillToDiskWhenFull())')
    }
    return windowCloses<K, V>(bufferConfig, undefined, undefined, undefined)
  },
  /** Emit a key's latest value after it waited `waitMs` of stream time (from its latest update by default). */
  untilTimeLimit<K, V>(waitMs: number, bufferConfig: BufferConfig): TimeLimitSuppressed<K, V> {
    if (!Number.isSafeInteger(waitMs) || waitMs < 0) throw invalidConfig('Suppressed.untilTimeLimit', `waitMs must be an integer >= 0, got ${shownValue(waitMs)}`)
    return timeLimit<K, V>(waitMs, bufferConfig, 'latest', undefined, undefined)
  },
} as const
