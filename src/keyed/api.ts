/**
 * Public API of keyed processing: keyed processors with a current key, timers in event time and
 * processing time, and keyed state (value, map, list) with optional TTL. A leaf module, like
 * processor/api.ts.
 */
import type { ProcessorContext, StoreKey, StreamRecord } from '../processor/api.js'

/** `event`: stream time. `processing`: the wall clock. */
export type TimeDomain = 'event' | 'processing'

/** A timer that fired: its key is also the current key during `onTimer`. */
export interface Timer<K> {
  readonly key: K
  readonly timestamp: number
  readonly domain: TimeDomain
}

/** Timers for the current key. A timer is (key, domain, timestamp): registering it twice is a no-op. */
export interface TimerService {
  registerEventTimeTimer(timestamp: number): void
  registerProcessingTimeTimer(timestamp: number): void
  /** Deleting a timer that does not exist is a no-op. */
  deleteEventTimeTimer(timestamp: number): void
  deleteProcessingTimeTimer(timestamp: number): void
  /** Pending user timers of the current key in a domain, in firing order. */
  pending(domain: TimeDomain): number[]
}

/** State TTL (SEMANTICS 4). */
export interface TtlConfig {
  /** Time to live in milliseconds, an integer >= 1. */
  readonly ttlMs: number
  /** What refreshes an entry's access time. @default 'onCreateAndWrite' */
  readonly update?: 'onCreateAndWrite' | 'onReadAndWrite'
  /** Whether reads may return an expired entry that cleanup has not removed yet. @default 'neverReturnExpired' */
  readonly visibility?: 'neverReturnExpired' | 'returnExpiredIfNotCleanedUp'
  /** Whose clock measures the TTL: `processing` (wall clock) or `event` (stream time; beyond Flink). @default 'processing' */
  readonly timeDomain?: TimeDomain
}

export type StateKind = 'value' | 'map' | 'list'

/** Names a piece of keyed state and its kind; values typed by the phantom parameter. */
export interface StateDescriptor<Kind extends StateKind, T> {
  readonly kind: Kind
  readonly name: string
  readonly ttl: TtlConfig | undefined
  /** Never set: carries the value type. */
  readonly __type?: T
}

export type ValueStateDescriptor<T> = StateDescriptor<'value', T>
export type MapStateDescriptor<UK extends StoreKey, UV> = StateDescriptor<'map', [UK, UV]>
export type ListStateDescriptor<T> = StateDescriptor<'list', T>

export const StateDescriptors = {
  value<T>(name: string, options: { ttl?: TtlConfig } = {}): ValueStateDescriptor<T> {
    return { kind: 'value', name, ttl: options.ttl }
  },
  map<UK extends StoreKey, UV>(name: string, options: { ttl?: TtlConfig } = {}): MapStateDescriptor<UK, UV> {
    return { kind: 'map', name, ttl: options.ttl }
  },
  list<T>(name: string, options: { ttl?: TtlConfig } = {}): ListStateDescriptor<T> {
    return { kind: 'list', name, ttl: options.ttl }
  },
} as const

/** One value per key. */
export interface ValueState<T> {
  /** The current key's value, or undefined (absent, or expired under `neverReturnExpired`). */
  value(): T | undefined
  update(value: T): void
  clear(): void
}

/** A map per key; TTL applies to each entry. */
export interface MapState<UK extends StoreKey, UV> {
  get(key: UK): UV | undefined
  put(key: UK, value: UV): void
  remove(key: UK): void
  contains(key: UK): boolean
  /** Visible entries, in insertion order. */
  entries(): Array<[UK, UV]>
  isEmpty(): boolean
  clear(): void
}

/** A list per key; TTL applies to each element. */
export interface ListState<T> {
  /** Visible elements, in insertion order. */
  get(): T[]
  add(value: T): void
  /** Replaces the list. */
  update(values: readonly T[]): void
  clear(): void
}

/** An entry removed by TTL cleanup, handed to `KeyedProcessor.onExpire`. */
export interface ExpiredEntry<K> {
  readonly key: K
  readonly state: string
  /** For map state: the entry's map key. */
  readonly mapKey?: StoreKey
  readonly value: unknown
  /** When it expired (last access + ttl). */
  readonly expiredAt: number
  /** Current time of the TTL's domain when cleanup ran. */
  readonly now: number
}

export interface KeyedProcessorContext<K extends StoreKey, KOut = never, VOut = never> extends ProcessorContext<KOut, VOut> {
  /** The key of the record or timer being processed; throws outside them. */
  currentKey(): K
  readonly timers: TimerService
  getState<T>(descriptor: ValueStateDescriptor<T>): ValueState<T>
  getMapState<UK extends StoreKey, UV>(descriptor: MapStateDescriptor<UK, UV>): MapState<UK, UV>
  getListState<T>(descriptor: ListStateDescriptor<T>): ListState<T>
}

/**
 * A processor with a current key (Flink's KeyedProcessFunction, in Kafka Streams' processor shape).
 * Keys must be strings, numbers, bigints or booleans: they index state and timers by value.
 */
export interface KeyedProcessor<K extends StoreKey, VIn, KOut = never, VOut = never> {
  init?(context: KeyedProcessorContext<K, KOut, VOut>): void
  process(record: StreamRecord<K, VIn>): void
  onTimer?(timer: Timer<K>): void
  /** Called for each state entry TTL cleanup removes (current key: the entry's key). */
  onExpire?(entry: ExpiredEntry<K>): void
  close?(): void
}

export type KeyedProcessorSupplier<K extends StoreKey, VIn, KOut = never, VOut = never> = () => KeyedProcessor<K, VIn, KOut, VOut>
