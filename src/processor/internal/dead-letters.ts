import type { Header } from '../api.js'
import type { LogRecord, RecordCollector } from '../record-io.js'
import { Serdes } from '../serdes.js'
import type { Serde } from '../serdes.js'
import type { Clock } from '../../time/clock.js'

/** The headers a dead-letter record carries, named as Kafka Streams names them (KIP-1034). */
export const DEAD_LETTER_HEADERS = {
  exception: '__streams.errors.exception',
  message: '__streams.errors.message',
  stacktrace: '__streams.errors.stacktrace',
  topic: '__streams.errors.topic',
  partition: '__streams.errors.partition',
  offset: '__streams.errors.offset',
} as const

const bytes = Serdes.Bytes() as Serde<unknown>

/**
 * Writes input records that a task skipped (bad input, or a processing error the error handler let
 * pass) to the dead-letter topic, as Kafka Streams does (KIP-1034): the record's key and value bytes as
 * read, its timestamp, and headers naming the error and where the record came from. It goes through
 * the task's collector, so under exactly-once it commits with the task's other output.
 */
export class DeadLetters {
  constructor(
    private readonly topic: string,
    private readonly collector: RecordCollector,
    private readonly clock: Clock,
  ) {}

  send(record: LogRecord, from: { readonly topic: string; readonly partition: number; readonly offset: number }, error: unknown): void {
    const err = error instanceof Error ? error : undefined
    const text = (s: string): Header['value'] => Buffer.from(s, 'utf8')
    const headers: Header[] = [
      { key: DEAD_LETTER_HEADERS.exception, value: text(err === undefined ? String(error) : `${err.name}: ${err.message}`) },
      { key: DEAD_LETTER_HEADERS.message, value: text(err === undefined ? String(error) : err.message) },
      { key: DEAD_LETTER_HEADERS.stacktrace, value: text(err?.stack ?? '') },
      { key: DEAD_LETTER_HEADERS.topic, value: text(from.topic) },
      { key: DEAD_LETTER_HEADERS.partition, value: text(String(from.partition)) },
      { key: DEAD_LETTER_HEADERS.offset, value: text(String(from.offset)) },
    ]
    // A record skipped for its timestamp has none a topic accepts: it gets the wall-clock time instead.
    const timestamp = Number.isSafeInteger(record.timestamp) && record.timestamp >= 0 ? record.timestamp : this.clock.now()
    const key = asBytes(record.key, record.keySerde, from.topic)
    const value = asBytes(record.value, record.valueSerde, from.topic)
    this.collector.send(this.topic, undefined, key, bytes, value, bytes, timestamp, headers)
  }
}

/** A key or value as the bytes it was read as (a typed in-memory one serialized with its serde). */
function asBytes(data: unknown, serde: Serde<unknown> | undefined, topic: string): Uint8Array | null {
  if (serde !== undefined) return serde.serialize(data, topic)
  return data as Uint8Array | null
}
