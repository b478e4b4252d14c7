import type { Headers } from './api.js'
import type { Serde } from './serdes.js'

// How a task reads and writes records: the stored form of a record in a topic, and the two interfaces a
// runtime implements for its tasks (an input partition to read, a collector to write through). The
// embedded runtime's in-memory log implements both; a Kafka runtime implements them over fetched batches
// and a producer. The engine knows nothing else of where records come from or go to.

/**
 * A record as stored in an in-memory topic. Key and value are bytes, or, when the writer's serde has
 * `inMemoryIdentity`, the typed value together with that serde (converted to bytes only if a reader
 * with another serde, a partitioner or a durable log needs them). Read them with `readKey` and `readValue` below.
 */
export interface LogRecord {
  readonly key: unknown
  /** The serde `key` is typed with; undefined when `key` is bytes (Uint8Array or null). */
  readonly keySerde: Serde<unknown> | undefined
  readonly value: unknown
  readonly valueSerde: Serde<unknown> | undefined
  readonly timestamp: number
  readonly headers: Headers
}

/** A reader's reusable record, which `PartitionLog.read` fills in. */
export type MutableLogRecord = { -readonly [F in keyof LogRecord]: LogRecord[F] }

/**
 * One input partition as a task reads it: records by offset, up to the end written so far. A task reads
 * each offset once, in order, into a record it reuses.
 */
export interface InputPartition {
  readonly topic: string
  readonly partition: number
  /** The offset of the oldest record available: where a task with no committed position starts. */
  startOffset(): number
  /** The offset after the last record available now. */
  endOffset(): number
  /**
   * The partition's end as its source last saw it, for consumer lag, when records exist beyond what is
   * available to read (on Kafka: the high watermark of the last fetch). Without it, `endOffset()`.
   */
  latestOffset?(): number | undefined
  /**
   * False while the source knows of records beyond `endOffset()` not yet available to read (on Kafka: a
   * partition not yet fetched to its end), so a task of several partitions waits for them (KIP-695).
   * Without it, a partition holds all there is: always caught up.
   */
  caughtUp?(): boolean
  /** Copies the record at `offset` into `into`; false when the partition no longer holds it. */
  read(offset: number, into: MutableLogRecord): boolean
}

/** Where sinks send records. */
export interface RecordCollector {
  partitionsFor(topic: string): number
  /**
   * Appends a record, serializing with the given serdes (eagerly, so a serialization error surfaces at
   * the writer, unless the serde has `inMemoryIdentity`). `partition` undefined means the default
   * partitioner. Returns the partition written.
   */
  send(
    topic: string,
    partition: number | undefined,
    key: unknown,
    keySerde: Serde<unknown>,
    value: unknown,
    valueSerde: Serde<unknown>,
    timestamp: number,
    headers: Headers,
  ): number
}

/** The stored form of a key or value: typed when the serde allows it, otherwise serialized now. */
export function store(serde: Serde<unknown>, topic: string, data: unknown): unknown {
  return serde.inMemoryIdentity === true ? data : serde.serialize(data, topic)
}

export function storedSerde(serde: Serde<unknown>): Serde<unknown> | undefined {
  return serde.inMemoryIdentity === true ? serde : undefined
}

function bytesOf(stored: unknown, storedWith: Serde<unknown> | undefined, topic: string): Uint8Array | null {
  return storedWith === undefined ? (stored as Uint8Array | null) : storedWith.serialize(stored, topic)
}

export function keyBytes(r: LogRecord, topic: string): Uint8Array | null {
  return bytesOf(r.key, r.keySerde, topic)
}

export function valueBytes(r: LogRecord, topic: string): Uint8Array | null {
  return bytesOf(r.value, r.valueSerde, topic)
}

/** Reads a key with `serde`: the stored value itself if it was written with the same serde. */
export function readKey(r: LogRecord, serde: Serde<unknown>, topic: string): unknown {
  return r.keySerde === serde ? r.key : serde.deserialize(keyBytes(r, topic), topic)
}

export function readValue(r: LogRecord, serde: Serde<unknown>, topic: string): unknown {
  return r.valueSerde === serde ? r.value : serde.deserialize(valueBytes(r, topic), topic)
}
