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
  /** The key the timer was registered for. */
  readonly key: K
  /** The time it was registered for (epoch ms), not the time it fired: stream time or the wall clock may be past it. */
  readonly timestamp: number
  /** Whether stream time (`event`) or the wall clock (`processing`) reached it. */
  readonly domain: TimeDomain
}

/** Timers for the current key. A timer is (key, domain, timestamp): registering it twice is a no-op. */
export interface TimerService {
  /**
   * Has `onTimer` called for the current key once stream time reaches `timestamp`: after the record that
   * advances it, before the stream-time punctuations. A timestamp stream time has already reached fires
   * right after the record being processed. Flink's `TimerService.registerEventTimeTimer`.
   * @throws PunctualError `INVALID_ARGUMENT` unless `timestamp` is an integer epoch millisecond >= 0;
   *   `ILLEGAL_STATE` outside the processing of a record, a timer or an expiry.
   */
  registerEventTimeTimer(timestamp: number): void
  /**
   * Has `onTimer` called for the current key once the wall clock reaches `timestamp` (in the test driver:
   * on `advanceWallClockTime`). One that came due while the application was down fires at the first
   * wall-clock check after a restore. Flink's `TimerService.registerProcessingTimeTimer`.
   * @throws PunctualError as {@link TimerService.registerEventTimeTimer}.
   */
  registerProcessingTimeTimer(timestamp: number): void
  /**
   * Removes the current key's event-time timer at `timestamp`. Deleting a timer that does not exist is a no-op.
   * @throws PunctualError as {@link TimerService.registerEventTimeTimer}.
   */
  deleteEventTimeTimer(timestamp: number): void
  /**
   * Removes the current key's processing-time timer at `timestamp`. Deleting a timer that does not exist is a no-op.
   * @throws PunctualError as {@link TimerService.registerEventTimeTimer}.
   */
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

/** The shape of a piece of keyed state: one value, a map or a list per key (Flink's ValueState, MapState, ListState). */
export type StateKind = 'value' | 'map' | 'list'

/**
 * The key of a descriptor's type-only member. Declared, never defined: no value has it, users cannot
 * name it, and it costs nothing at run time.
 */
declare const stateDescriptorType: unique symbol

/**
 * Names a piece of keyed state and its kind (Flink's StateDescriptor); made by {@link StateDescriptors}
 * and handed to the `get*State` methods of {@link KeyedProcessorContext}.
 */
export interface StateDescriptor<Kind extends StateKind, T> {
  /** @internal Which table holds the state; the task checks it when the state is asked for. */
  readonly kind: Kind
  /**
   * The state's name, unique within its keyed processor: checkpoints and changelogs keep the state
   * under it, so renaming it starts from empty state.
   */
  readonly name: string
  /** When entries expire; undefined for state that never does. */
  readonly ttl: TtlConfig | undefined
  /**
   * In a durable run, how many keys memory keeps after their changes are committed (read or written
   * before); the others are read back from disk when used. Undefined: 10 000.
   */
  readonly cacheEntries?: number | undefined
  /**
   * Never set. It carries the kind and the value type for the compiler, so that a map descriptor
   * does not fit `getState` nor a `ValueStateDescriptor<number>` a `ValueState<string>`.
   */
  readonly [stateDescriptorType]?: { readonly kind: Kind; readonly value: T }
}

/** Describes a {@link ValueState} holding a `T` per key. */
export type ValueStateDescriptor<T> = StateDescriptor<'value', T>
/** Describes a {@link MapState} holding a map of `UK` to `UV` per key. */
export type MapStateDescriptor<UK extends StoreKey, UV> = StateDescriptor<'map', [UK, UV]>
/** Describes a {@link ListState} holding a list of `T` per key. */
export type ListStateDescriptor<T> = StateDescriptor<'list', T>

/**
 * Makes state descriptors. A descriptor is plain data: make it once (a module constant) and ask for
 * the state in `init`. Nothing is checked here; `ttl` and the name are checked when a processor asks
 * for the state (`INVALID_CONFIG`).
 */
export const StateDescriptors = {
  value<T>(name: string, options: StateOptions = {}): ValueStateDescriptor<T> {
    return { kind: 'value', name, ttl: options.ttl, ...(options.cacheEntries === undefined ? {} : { cacheEntries: options.cacheEntries }) }
  },
  map<UK extends StoreKey, UV>(name: string, options: StateOptions = {}): MapStateDescriptor<UK, UV> {
    return { kind: 'map', name, ttl: options.ttl, ...(options.cacheEntries === undefined ? {} : { cacheEntries: options.cacheEntries }) }
  },
  list<T>(name: string, options: StateOptions = {}): ListStateDescriptor<T> {
    return { kind: 'list', name, ttl: options.ttl, ...(options.cacheEntries === undefined ? {} : { cacheEntries: options.cacheEntries }) }
  },
} as const

/** The options of a keyed state (`StateDescriptors`). */
export interface StateOptions {
  /** When entries expire (Flink's `StateTtlConfig`). @default never */
  readonly ttl?: TtlConfig
  /**
   * In a durable run (a `stateDir`, or on Kafka), how many keys memory keeps once their changes are
   * committed; the others stay on disk and are read back when used, so keyed state may outgrow the
   * heap. @default 10 000
   */
  readonly cacheEntries?: number
}

/** One value per key. */
export interface ValueState<T> {
  /** The current key's value, or undefined (absent, or expired under `neverReturnExpired`). */
  value(): T | undefined
  /** Sets the current key's value, restarting its time to live. */
  update(value: T): void
  /** Removes the current key's value. */
  clear(): void
}

/** A map per key; TTL applies to each entry. */
export interface MapState<UK extends StoreKey, UV> {
  /** The entry under `key` in the current key's map, or undefined (absent, or expired under `neverReturnExpired`). */
  get(key: UK): UV | undefined
  /** Sets the entry under `key`, restarting its time to live. */
  put(key: UK, value: UV): void
  /** Removes the entry under `key`; a no-op when it is absent. */
  remove(key: UK): void
  /** Whether the current key's map has a visible entry under `key`. */
  contains(key: UK): boolean
  /** Visible entries, in insertion order. */
  entries(): Array<[UK, UV]>
  /** Whether the current key's map has no visible entry. */
  isEmpty(): boolean
  /** Removes every entry of the current key's map. */
  clear(): void
}

/** A list per key; TTL applies to each element. */
export interface ListState<T> {
  /** Visible elements, in insertion order. */
  get(): T[]
  /** Appends `value` to the current key's list, with a time to live of its own. */
  add(value: T): void
  /** Replaces the list. */
  update(values: readonly T[]): void
  /** Empties the current key's list. */
  clear(): void
}

/** An entry removed by TTL cleanup, handed to `KeyedProcessor.onExpire`. */
export interface ExpiredEntry<K> {
  /** The key whose state it was; also the current key during `onExpire`. */
  readonly key: K
  /** The state's name, as its descriptor gives it. */
  readonly state: string
  /** For map state: the entry's map key. */
  readonly mapKey?: StoreKey
  /** The value removed: the state's value, the map entry's value or the list element. */
  readonly value: unknown
  /** When it expired (last access + ttl). */
  readonly expiredAt: number
  /** Current time of the TTL's domain when cleanup ran. */
  readonly now: number
}

/**
 * The context a {@link KeyedProcessor} gets in `init`: a {@link ProcessorContext} with a current key,
 * its timers and its keyed state (Flink's KeyedProcessFunction context).
 */
export interface KeyedProcessorContext<K extends StoreKey, KOut = never, VOut = never> extends ProcessorContext<KOut, VOut> {
  /** The key of the record or timer being processed; throws outside them. */
  currentKey(): K
  /** Event-time and processing-time timers of the current key. */
  readonly timers: TimerService
  /**
   * The value state `descriptor` names, registered on the first call and the same on the next ones;
   * reads and writes go to the current key's value. Ask in `init` and keep it.
   * @throws PunctualError `INVALID_CONFIG` for an empty name, an invalid `ttl`, or a name this
   *   processor already uses for another kind of state or with another TTL.
   */
  getState<T>(descriptor: ValueStateDescriptor<T>): ValueState<T>
  /**
   * The map state `descriptor` names; as {@link KeyedProcessorContext.getState}.
   * @throws PunctualError as {@link KeyedProcessorContext.getState}.
   */
  getMapState<UK extends StoreKey, UV>(descriptor: MapStateDescriptor<UK, UV>): MapState<UK, UV>
  /**
   * The list state `descriptor` names; as {@link KeyedProcessorContext.getState}.
   * @throws PunctualError as {@link KeyedProcessorContext.getState}.
   */
  getListState<T>(descriptor: ListStateDescriptor<T>): ListState<T>
}

/**
 * A processor with a current key (Flink's KeyedProcessFunction, in Kafka Streams' processor shape).
 * Keys must be strings, numbers, bigints or booleans: they index state and timers by value.
 */
export interface KeyedProcessor<K extends StoreKey, VIn, KOut = never, VOut = never> {
  /** Called once when the task starts, before any record: keep the context, ask for state. */
  init?(context: KeyedProcessorContext<K, KOut, VOut>): void
  /**
   * Called for each record, with its key as the current key. A record whose key is not a string,
   * number, bigint or boolean fails the processor (`PROCESSING`) before this is called.
   */
  process(record: StreamRecord<K, VIn>): void
  /**
   * Called for each timer that fires, with its key as the current key (Flink's `onTimer`). Timers due
   * at once fire by timestamp, then registration order, user timers before TTL cleanup.
   */
  onTimer?(timer: Timer<K>): void
  /** Called for each state entry TTL cleanup removes (current key: the entry's key). */
  onExpire?(entry: ExpiredEntry<K>): void
  /** Called once when the task closes (shutdown, or the task moving away); release what `init` acquired. */
  close?(): void
}

/** Makes one {@link KeyedProcessor} per task: return a new instance on each call, since a task's keyed state and timers are its own. */
export type KeyedProcessorSupplier<K extends StoreKey, VIn, KOut = never, VOut = never> = () => KeyedProcessor<K, VIn, KOut, VOut>
