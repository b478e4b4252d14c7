import type { Database } from 'lmdb'
import type { Headers } from '../processor/api.js'
import { keyBytes, valueBytes } from './log-record.js'
import type { LogRecord } from './partition-log.js'

/** Where a partition's records are on disk: offsets [start, end) (records before start are deleted). */
export interface DiskRange {
  start: number
  end: number
}

/** A topic as the state directory knows it: its partitions' ranges on disk. */
export type DurableTopic = DiskRange[]

/** The stored form of a record: timestamp, key and value bytes, headers. */
type StoredRecord = [number, Uint8Array | null, Uint8Array | null, Headers]

/**
 * The embedded runtime's topics on disk, in the checkpoint store's lmdb environment: records under
 * [topic, partition, offset], and per topic the range of each partition. Writes happen inside the
 * commit's transaction (the caller opens it), so records, task state and input positions are committed
 * together or not at all.
 */
export class DurableLog {
  constructor(
    private readonly records: Database<StoredRecord, Array<string | number>>,
    private readonly ranges: Database<DurableTopic, string>,
  ) {}

  /** Every topic on disk with its partitions' ranges. */
  topics(): Map<string, DurableTopic> {
    const out = new Map<string, DurableTopic>()
    for (const { key, value } of this.ranges.getRange()) out.set(key, value)
    return out
  }

  /** Records [from, to) of a partition, in offset order (offsets with no record are skipped). */
  load(topic: string, partition: number, from: number, to: number): LogRecord[] {
    const out: LogRecord[] = []
    if (from >= to) return out
    for (const { value } of this.records.getRange({ start: [topic, partition, from], end: [topic, partition, to] })) out.push(decode(value))
    return out
  }

  /** One record, or undefined when it is not on disk. */
  get(topic: string, partition: number, offset: number): LogRecord | undefined {
    const v = this.records.get([topic, partition, offset])
    return v === undefined ? undefined : decode(v)
  }

  // The writes below run inside the caller's transaction.

  put(topic: string, partition: number, offset: number, record: LogRecord): void {
    this.records.putSync([topic, partition, offset], [record.timestamp, keyBytes(record, topic), valueBytes(record, topic), record.headers])
  }

  /** Deletes the records [from, to) of a partition. */
  remove(topic: string, partition: number, from: number, to: number): void {
    for (let o = from; o < to; o++) this.records.removeSync([topic, partition, o])
  }

  putRanges(topic: string, ranges: DurableTopic): void {
    this.ranges.putSync(topic, ranges)
  }
}

function decode(v: StoredRecord): LogRecord {
  return { timestamp: v[0], key: v[1] ?? null, keySerde: undefined, value: v[2] ?? null, valueSerde: undefined, headers: v[3] ?? [] }
}
