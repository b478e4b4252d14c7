import { invalidConfig } from '../errors.js'
import { shownValue } from '../processor/shown-value.js'

/** What a bounded buffer does when a put would exceed a bound. */
export type WhenFull = 'emitEarly' | 'shutDown' | 'spillToDisk'

export interface BufferConfigMethods<Self> {
  /** At most this many keys buffered. */
  readonly maxRecords: number
  /** At most this many bytes buffered (sum of entry sizes). */
  readonly maxBytes: number
  withMaxRecords(recordLimit: number): Self
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
  readonly strict: false
  readonly whenFull: 'emitEarly'
  emitEarlyWhenFull(): EagerBufferConfig
}

/** Never emits early: the only kind `untilWindowCloses` accepts (final results). */
export interface StrictBufferConfig extends BufferConfigMethods<StrictBufferConfig> {
  readonly strict: true
  readonly whenFull: 'shutDown' | 'spillToDisk'
}

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

export interface SuppressedCommon<K, V, Self> {
  readonly name: string | undefined
  readonly bufferConfig: BufferConfig
  readonly sizer: Sizer<K, V> | undefined
  /** Names the suppression node (and its durable store). */
  withName(name: string): Self
  withSizer(sizer: Sizer<K, V>): Self
}

/** `untilTimeLimit`: emit a key's latest value once it has waited `waitMs` of stream time. */
export interface TimeLimitSuppressed<K, V> extends SuppressedCommon<K, V, TimeLimitSuppressed<K, V>> {
  readonly until: 'timeLimit'
  readonly waitMs: number
  readonly waitFrom: WaitFrom
  withWaitFrom(waitFrom: WaitFrom): TimeLimitSuppressed<K, V>
}

/** `untilWindowCloses`: one final result per window (windowed tables only). */
export interface WindowClosesSuppressed<K, V> extends SuppressedCommon<K, V, WindowClosesSuppressed<K, V>> {
  readonly until: 'windowCloses'
  readonly bufferConfig: StrictBufferConfig
  /** Beyond Kafka: also emit once the wall clock reaches windowEnd + grace + this many ms. */
  readonly wallClockLimitMs: number | undefined
  withWallClockLimit(ms: number): WindowClosesSuppressed<K, V>
}

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
      if (w !== 'latest' && w !== 'first') throw invalidConfig('Suppressed.withWaitFrom', `must be "latest" or "first", got ${JSON.stringify(w)}`)
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
  if (typeof name !== 'string' || name.length === 0) throw invalidConfig('Suppressed.withName', `must be a non-empty string, got ${JSON.stringify(name)}`)
  return name
}

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
