/**
 * The public processor API. This module is a leaf: it declares what user code sees and imports nothing
 * from the runtime, so internals can change without breaking processors.
 */

/** A Kafka-style record header. */
export interface Header {
  /** The header's name; a record may carry several headers of one name. */
  readonly key: string
  /** The header's bytes, or null for a header without a value (as Kafka allows). */
  readonly value: Uint8Array | null
}

/**
 * A record's headers, in the order they were added (Kafka Streams' `Headers`, read-only: forward a
 * record with a new array to change them). Sinks write them to Kafka as they are.
 */
export type Headers = readonly Header[]

/** One shared empty header list, so records without headers allocate nothing for them. */
export const NO_HEADERS: Headers = Object.freeze([]) as Headers

/** A record flowing through a topology. Immutable: forward a new object to change it. */
export interface StreamRecord<K, V> {
  /** The record's key; null for a record without one (a topic record with no key). */
  readonly key: K
  /** The record's value; null for a tombstone, which deletes the key from a table. */
  readonly value: V
  /** Epoch milliseconds, a non-negative integer. */
  readonly timestamp: number
  /** The record's headers; {@link NO_HEADERS} when it has none. */
  readonly headers: Headers
}

/** Where the record being processed came from; undefined inside a punctuation. */
export interface RecordMetadata {
  /** The topic the record was read from, as the topology names it. */
  readonly topic: string
  /** Its partition: for an input topic, the one this task owns (`TaskId.partition`). */
  readonly partition: number
  /** Its offset in that partition. */
  readonly offset: number
}

/** The time a punctuation follows (Kafka Streams' `PunctuationType`). */
export const PunctuationType = {
  /** Driven by stream time: the largest record timestamp the task has processed. */
  STREAM_TIME: 'STREAM_TIME',
  /** Driven by the wall clock: fires even when no record ever arrives (KIP-138). */
  WALL_CLOCK_TIME: 'WALL_CLOCK_TIME',
} as const
/** `STREAM_TIME` or `WALL_CLOCK_TIME`: the type of the `PunctuationType` constant's values. */
export type PunctuationType = (typeof PunctuationType)[keyof typeof PunctuationType]

/**
 * What to do with anchored or cron trigger points that passed while the application was down.
 * `skip` (default, KIP-1146 behaviour) does not replay them; `fireOnce` makes one catch-up call at
 * start-up when at least one point passed since the last recorded fire.
 */
export type MissedTriggerPolicy = 'skip' | 'fireOnce'

/** What every punctuation schedule has: its name and what to do with trigger points missed while down. */
export interface ScheduleCommon {
  /**
   * Stable name of the schedule within its task, used to remember its last fire time across restarts.
   * @default `<processor>#<n>`, n counting the processor's registrations from 0
   */
  readonly name?: string
  /** @default 'skip' */
  readonly onMissed?: MissedTriggerPolicy
}

/** An interval schedule in stream time or wall-clock time, optionally anchored (KIP-1146). */
export interface IntervalSchedule extends ScheduleCommon {
  /** Whether the interval runs in stream time or on the wall clock. */
  readonly type: PunctuationType
  /** Interval in milliseconds, an integer >= 1. */
  readonly intervalMs: number
  /** Anchor (epoch ms, integer >= 0): due times are `startTime + n * intervalMs`. */
  readonly startTime?: number
}

/** A cron schedule on the wall clock, in an IANA time zone (beyond Kafka). */
export interface CronSchedule extends ScheduleCommon {
  /** Always `WALL_CLOCK_TIME`: a cron expression names times of day, which stream time does not keep. */
  readonly type: typeof PunctuationType.WALL_CLOCK_TIME
  /** Five fields (minute precision) or six (with seconds first), as croner reads them. */
  readonly cron: string
  /** @default 'UTC' */
  readonly timeZone?: string
}

/** A punctuation schedule, as `ProcessorContext.schedule` takes it: an interval or a cron expression. */
export type ScheduleSpec = IntervalSchedule | CronSchedule

/** Called with the current time of the schedule's domain (not the due time). */
export type Punctuator = (timestamp: number) => void

/** A registered punctuation, as `ProcessorContext.schedule` returns it (Kafka Streams' `Cancellable`). */
export interface Cancellable {
  /** Stops the punctuation: it does not fire again. Cancelling twice is a no-op. */
  cancel(): void
}

/** A named state store owned by one task (Kafka Streams' `StateStore`). */
export interface StateStore {
  /** The store's name, unique in the topology: processors ask for it by this name. */
  readonly name: string
  /** Called by the task when it closes; a processor does not call it. */
  close(): void
}

/** Keys an in-memory store can index by value. */
export type StoreKey = string | number | bigint | boolean

/**
 * A task's key-value store (Kafka Streams' `KeyValueStore`), made by {@link Stores}. Writes go to the
 * task's next commit: its checkpoint, and on Kafka the store's changelog topic.
 */
export interface KeyValueStore<K extends StoreKey, V> extends StateStore, ReadOnlyKeyValueStore<K, V> {
  /**
   * Sets the key's value.
   * @throws PunctualError `INVALID_ARGUMENT` when the key or value does not fit the store's serdes (a
   *   store without a key serde takes string, number, bigint and boolean keys).
   */
  put(key: K, value: V): void
  /**
   * Sets the key's value if it has none; returns the value it had, or undefined if it was put.
   * @throws PunctualError as {@link KeyValueStore.put}.
   */
  putIfAbsent(key: K, value: V): V | undefined
  /** Removes the key; returns the value it had, or undefined. */
  delete(key: K): V | undefined
}

/** One version of a key's value in a versioned store (Kafka Streams' `VersionedRecord`). */
export interface VersionedRecord<V> {
  /** The key's value in this version. */
  readonly value: V
  /** When this version became valid: the timestamp it was put with. */
  readonly timestamp: number
  /** When the next version of the key took over; undefined for the latest version. */
  readonly validTo?: number
}

/**
 * A key-value store that keeps each key's versions by timestamp (Kafka Streams'
 * `VersionedKeyValueStore`, KIP-889): `get(key, asOf)` answers with the version valid at `asOf`. The
 * history retention is also its grace period: a write older than the store's largest timestamp by
 * more than it is refused, and so is a read that far back (the latest version never expires).
 */
export interface VersionedKeyValueStore<K extends StoreKey, V> extends StateStore, ReadOnlyVersionedKeyValueStore<K, V> {
  /**
   * Adds the version of `key` at `timestamp` (null: a tombstone), replacing one at the same timestamp.
   * Returns when the next version takes over, -1 if this is the latest, or
   * `Number.MIN_SAFE_INTEGER` if the write is older than the grace period (not put).
   */
  put(key: K, value: V | null, timestamp: number): number
  /** A tombstone at `timestamp`; returns the version that was valid then, or undefined (also when too old). */
  delete(key: K, timestamp: number): VersionedRecord<V> | undefined
}

/**
 * Reads of a key-value store (Kafka Streams' `ReadOnlyKeyValueStore`): what an interactive query gets,
 * over every task of the application instance that holds the store, and what every
 * {@link KeyValueStore} offers besides its writes. A key without a value reads as undefined, as a
 * `Map`'s does. Iterate a scan once, right away (`for ... of`, or `[...store.all()]` to keep it): an
 * interactive query's scan is a snapshot taken when it is called; a processor's store scans its live
 * entries, lazily, so a large persistent store is never held in memory whole.
 */
export interface ReadOnlyKeyValueStore<K, V> {
  /** The key's value, or undefined. */
  get(key: K): V | undefined
  /**
   * Entries whose keys lie from `from` to `to`, both included, in key order: for the DSL's stores
   * the order of the serialized keys, as in Kafka Streams; for `Stores.*` stores booleans, then
   * numbers, then strings. An interactive query gives each task's entries in turn.
   */
  range(from: K, to: K): IterableIterator<[K, V]>
  /** Every entry, in key order (an interactive query: within each task). */
  all(): IterableIterator<[K, V]>
  /** The number of entries (an interactive query: summed over the instance's tasks); a persistent store's may be off by the keys changed since the last commit. */
  approximateNumEntries(): number
}

/**
 * Reads of a versioned key-value store: what an interactive query gets, and what every
 * {@link VersionedKeyValueStore} offers besides its writes. No version reads as undefined, as a
 * missing key of a key-value store does (Kafka Streams answers null; a tombstone is null here too, as
 * a written value).
 */
export interface ReadOnlyVersionedKeyValueStore<K, V> {
  /**
   * The latest version, or with `asOfTimestamp` the one valid then (the one with the largest timestamp
   * not after it); undefined when there is none or it is a tombstone. Older than the history kept,
   * only a latest version old enough answers.
   */
  get(key: K, asOfTimestamp?: number): VersionedRecord<V> | undefined
}

/** Identifies a task: one partition of a sub-topology's input topics (Kafka Streams' `TaskId`). */
export interface TaskId {
  /** Index of the sub-topology (a connected part of the topology). */
  readonly subtopology: number
  /** The input partition this task owns. */
  readonly partition: number
  /** `<subtopology>_<partition>`, as Kafka Streams writes a task id (`0_1`). */
  toString(): string
}

/**
 * What a {@link Processor} reaches its task through (Kafka Streams' `api.ProcessorContext`): forward
 * records, schedule punctuations, read the clocks and the connected stores.
 */
export interface ProcessorContext<KOut = never, VOut = never> {
  /** The task this processor instance runs in. */
  readonly taskId: TaskId
  /** The name of the processor node this context belongs to. */
  readonly processorName: string
  /**
   * Sends a record to all children, or to the named child. A timestamp that is not an integer epoch
   * millisecond >= 0 is refused here (INVALID_TIMESTAMP, naming this processor).
   */
  forward(record: StreamRecord<KOut, VOut>, childName?: string): void
  /** Registers a punctuation; invalid configuration throws an error naming the processor and value. */
  schedule(spec: ScheduleSpec, callback: Punctuator): Cancellable
  /** Kafka Streams' form: an unanchored interval schedule. */
  schedule(intervalMs: number, type: PunctuationType, callback: Punctuator): Cancellable
  /** The task's stream time, or undefined before its first record. */
  currentStreamTimeMs(): number | undefined
  /** The wall clock (the injected Clock). */
  currentSystemTimeMs(): number
  /** Source position of the record being processed; undefined in punctuations. */
  recordMetadata(): RecordMetadata | undefined
  /**
   * A store connected to this processor in the topology (`Topology.addStateStore`, `connectProcessorAndStateStores`).
   * @throws PunctualError `INVALID_TOPOLOGY` when no store of that name is connected to this processor.
   */
  getStateStore<S extends StateStore>(name: string): S
  /**
   * @internal Counts a record this processor dropped on purpose (for example `late` for a closed window) in the
   * task's `dropped-records` metric. Not an error: the error handler is not involved.
   */
  droppedRecord(reason: 'late'): void
  /** A directory for this task's files (created on first call) under the application's state directory. */
  stateDir(): string
}

/**
 * A node of a topology that user code implements (Kafka Streams' `api.Processor`): one instance per
 * task, called synchronously for each record.
 */
export interface Processor<KIn, VIn, KOut = never, VOut = never> {
  /** Called once when the task starts, before any record: keep the context, get stores, schedule punctuations. */
  init?(context: ProcessorContext<KOut, VOut>): void
  /**
   * Called for each record. What it throws goes to the error handler as a processing error (by
   * default the application fails).
   */
  process(record: StreamRecord<KIn, VIn>): void
  /** Called once when the task closes (shutdown, or the task moving away); release what `init` acquired. */
  close?(): void
}

/** Creates a fresh processor for each task. */
export type ProcessorSupplier<KIn, VIn, KOut = never, VOut = never> = () => Processor<KIn, VIn, KOut, VOut>
