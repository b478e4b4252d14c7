/**
 * Event time from a record (Kafka Streams' `TimestampExtractor`): by default a record's event time is
 * its own timestamp; an extractor can take it from the payload instead, or from the wall clock. Set per
 * source (`Consumed.timestampExtractor`, `SourceOptions.timestampExtractor`) or for the whole
 * application (`defaultTimestampExtractor` in the runtime's config and the test driver's options).
 */
import { PunctualError } from '../errors.js'
import type { Headers } from './api.js'

/** An input record as an extractor sees it: deserialized, with where it was read. */
export interface ConsumerRecord<K, V> {
  /** The topic it was read from. */
  readonly topic: string
  /** Its partition: the one the reading task owns. */
  readonly partition: number
  /** Its offset in that partition. */
  readonly offset: number
  /** The deserialized key. */
  readonly key: K
  /** The deserialized value. */
  readonly value: V
  /** The record's own timestamp (Kafka's record timestamp), epoch milliseconds. */
  readonly timestamp: number
  /** The record's headers. */
  readonly headers: Headers
}

/**
 * Gives each input record its event time. Called once per record as it is read, before it counts
 * towards stream time. A returned value that is not a valid timestamp (a safe integer, 0 or more) makes
 * the record invalid: it is reported with reason `invalid-timestamp` to the error handler (the default logs it and skips it, as Kafka Streams skips a negative extracted
 * timestamp). An exception thrown by `extract` stops the application, naming the record.
 *
 * The record object is only valid during the call: the runtime reuses it.
 */
export interface TimestampExtractor<K = unknown, V = unknown> {
  /**
   * The record's event time, epoch ms (Kafka Streams' `TimestampExtractor.extract`).
   * @param record - the record being read
   * @param partitionTime - the largest valid timestamp read so far from this record's partition, or
   *   -1 when none has been read since the task started
   * @param wallClockMs - the runtime's wall-clock time (its injected clock: the test driver's is manual)
   */
  extract(record: ConsumerRecord<K, V>, partitionTime: number, wallClockMs: number): number
}

/** Whether `t` is a timestamp punctual accepts: a safe integer, 0 or more. */
function isValidTimestamp(t: unknown): t is number {
  return typeof t === 'number' && Number.isSafeInteger(t) && t >= 0
}

/**
 * Where an invalid-timestamp policy reads a record's timestamp. The default is the record's own
 * timestamp, as in Kafka Streams; give a function to read it from the key or value instead. The function
 * may return anything: what is not a valid timestamp falls to the policy.
 */
export type TimestampSource<K, V> = (record: ConsumerRecord<K, V>) => unknown

const recordTimestamp = (record: ConsumerRecord<unknown, unknown>): unknown => record.timestamp

function describeRecord(record: ConsumerRecord<unknown, unknown>): string {
  return `${record.topic}-${record.partition}@${record.offset}`
}

function describeTimestamp(t: unknown): string {
  return typeof t === 'number' || typeof t === 'bigint' ? String(t) : t === undefined ? 'undefined' : JSON.stringify(t) ?? String(t)
}

/**
 * A timestamp from the record (its own, or from its payload through `source`), and a policy for an
 * invalid one, `onInvalidTimestamp` (Kafka Streams' `ExtractRecordMetadataTimestamp`). The base of the
 * four policies here; extend it for a policy of your own.
 * @throws PunctualError `INVALID_CONFIG` from the constructor when `source` is given and not a function.
 */
export abstract class PolicyExtractor<K, V> implements TimestampExtractor<K, V> {
  private readonly source: TimestampSource<K, V>

  constructor(source?: TimestampSource<K, V>) {
    if (source !== undefined && typeof source !== 'function') {
      throw new PunctualError('INVALID_CONFIG', `${this.constructor.name}: the timestamp source must be a function of the record, got ${typeof source}`)
    }
    this.source = source ?? (recordTimestamp as TimestampSource<K, V>)
  }

  /** The source's timestamp when it is valid (a safe integer, 0 or more), else what `onInvalidTimestamp` makes of it. */
  extract(record: ConsumerRecord<K, V>, partitionTime: number, wallClockMs: number): number {
    const t = this.source(record)
    return isValidTimestamp(t) ? t : this.onInvalidTimestamp(record, t, partitionTime, wallClockMs)
  }

  /** What the record's event time is when the source gave `timestamp`, which is not valid. */
  protected abstract onInvalidTimestamp(record: ConsumerRecord<K, V>, timestamp: unknown, partitionTime: number, wallClockMs: number): number
}

/**
 * An invalid timestamp stops the application with an `INVALID_TIMESTAMP` error naming the record (Kafka
 * Streams' default extractor).
 */
export class FailOnInvalidTimestamp<K = unknown, V = unknown> extends PolicyExtractor<K, V> {
  /** Throws `INVALID_TIMESTAMP`, naming the record and the timestamp. */
  protected onInvalidTimestamp(record: ConsumerRecord<K, V>, timestamp: unknown): number {
    throw new PunctualError('INVALID_TIMESTAMP', `record ${describeRecord(record)} has an invalid timestamp ${describeTimestamp(timestamp)} (FailOnInvalidTimestamp): timestamps are safe integers, 0 or more`)
  }
}

/**
 * A record with an invalid timestamp is logged and skipped: it goes to the error handler with reason
 * `invalid-timestamp`, counts as dropped, and reaches no processor.
 */
export class LogAndSkipOnInvalidTimestamp<K = unknown, V = unknown> extends PolicyExtractor<K, V> {
  /** -1: an invalid event time, which has the record reported and skipped. */
  protected onInvalidTimestamp(): number {
    return -1
  }
}

/**
 * A record with an invalid timestamp gets its partition's time: the largest valid timestamp read from
 * that partition so far. Before any, it stops the application, as Kafka Streams does.
 */
export class UsePartitionTimeOnInvalidTimestamp<K = unknown, V = unknown> extends PolicyExtractor<K, V> {
  /** The partition's time; throws `INVALID_TIMESTAMP` while the partition has none. */
  protected onInvalidTimestamp(record: ConsumerRecord<K, V>, timestamp: unknown, partitionTime: number): number {
    if (partitionTime < 0) {
      throw new PunctualError('INVALID_TIMESTAMP', `record ${describeRecord(record)} has an invalid timestamp ${describeTimestamp(timestamp)} and its partition has no time yet to use instead (UsePartitionTimeOnInvalidTimestamp)`)
    }
    return partitionTime
  }
}

/**
 * A record with an invalid timestamp gets the wall-clock time at which it is read (beyond Kafka Streams,
 * whose wall-clock extractor applies to every record).
 */
export class UseWallClockOnInvalidTimestamp<K = unknown, V = unknown> extends PolicyExtractor<K, V> {
  /** The wall-clock time at which the record is read. */
  protected onInvalidTimestamp(_record: ConsumerRecord<K, V>, _timestamp: unknown, _partitionTime: number, wallClockMs: number): number {
    return wallClockMs
  }
}

/**
 * Every record's event time is the wall-clock time at which it is read (processing time): Kafka
 * Streams' `WallclockTimestampExtractor`. The clock is the runtime's, so the test driver's manual clock
 * sets it in tests.
 */
export class WallclockTimestampExtractor implements TimestampExtractor {
  /** `wallClockMs`, whatever the record holds. */
  extract(_record: ConsumerRecord<unknown, unknown>, _partitionTime: number, wallClockMs: number): number {
    return wallClockMs
  }
}

/** Refuses what is not an extractor, naming where it was given. */
export function checkTimestampExtractor(extractor: unknown, where: string): TimestampExtractor | undefined {
  if (extractor === undefined) return undefined
  if (typeof extractor !== 'object' || extractor === null || typeof (extractor as { extract?: unknown }).extract !== 'function') {
    throw new PunctualError('INVALID_CONFIG', `${where}: timestampExtractor must be an object with an extract(record, partitionTime, wallClockMs) method, got ${extractor === null ? 'null' : typeof extractor}`)
  }
  return extractor as TimestampExtractor
}
