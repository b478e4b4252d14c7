import type { Database } from 'lmdb'
import { PunctualError } from '../../errors.js'
import type { LogRecord } from '../../processor/record-io.js'
import { decodeChunk, encodeRange } from './record-codec.js'
import type { RecordSource } from './record-codec.js'

/** Where a partition's records are on disk: offsets [start, end) (records before start are consumed). */
export interface DiskRange {
  start: number
  end: number
}

/** A topic as the state directory knows it: its partitions' ranges on disk. */
export type DurableTopic = DiskRange[]

/**
 * How a commit takes the log's writes (the checkpoint store's commit in progress): encoding it does a
 * slice at a time, and writes it queues in the event turn that makes it durable, so that lmdb commits
 * them with the task state and input positions, in one transaction.
 */
export interface LogCommitWriter {
  later(work: () => void): void
  atSeal(write: () => void): void
}

/** Records per chunk at most: bounds what a read of one old record decodes (and what one slice of a commit encodes). */
const CHUNK = 4096
/** Above every record count, for range bounds. */
const MAX = Number.MAX_SAFE_INTEGER

/**
 * The embedded runtime's topics on disk, in the checkpoint store's lmdb environment. Like Kafka's record
 * batches, records are stored in chunks of consecutive offsets under [topic, partition, first offset,
 * count, append time]: a commit writes one chunk per partition (a put per record was the whole cost of
 * a durable log), and deletes chunks whose records are all consumed, or older than a topic's retention
 * (by append time, like Kafka's LogAppendTime). Per topic, the range of each partition. Writes go
 * through the commit's `LogCommitWriter`, so records, task state and input positions are committed
 * together or not at all.
 */
export class DurableLog {
  /** The last chunk read by `get`, since readers of old records read them in order. */
  private cached: { topic: string; partition: number; first: number; records: LogRecord[] } | undefined
  /**
   * Per partition (`topic`, then partition), the keys of its chunks on disk with this run's commits
   * applied, in offset order: a commit finds the chunks it deletes here instead of reading lmdb's keys.
   * Read from disk at a partition's first write; a failed commit stops the runtime, so it never drifts.
   */
  private readonly chunkKeys = new Map<string, Array<Array<Array<string | number>>>>()

  constructor(
    /** Chunks, encoded by record-codec (a binary-encoded database). */
    private readonly records: Database<Buffer, Array<string | number>>,
    private readonly ranges: Database<DurableTopic, string>,
  ) {}

  /** Every topic on disk with its partitions' ranges. */
  topics(): Map<string, DurableTopic> {
    const out = new Map<string, DurableTopic>()
    for (const { key, value } of this.ranges.getRange()) out.set(key, value)
    return out
  }

  /** Records [from, to) of a partition, in offset order. */
  load(topic: string, partition: number, from: number, to: number): LogRecord[] {
    const out: LogRecord[] = []
    if (from >= to) return out
    for (const { key, value } of this.records.getRange({ start: this.chunkStart(topic, partition, from), end: [topic, partition, to] })) {
      const first = key[2] as number
      const chunk = decode(value, key)
      for (let i = Math.max(0, from - first); i < chunk.length && first + i < to; i++) out.push(chunk[i] as LogRecord)
    }
    return out
  }

  /** One record, or undefined when it is not on disk. */
  get(topic: string, partition: number, offset: number): LogRecord | undefined {
    let c = this.cached
    if (c === undefined || c.topic !== topic || c.partition !== partition || offset < c.first || offset >= c.first + c.records.length) {
      c = undefined
      for (const { key, value } of this.records.getRange({ start: [topic, partition, offset, MAX], end: [topic, partition], reverse: true, limit: 1 })) {
        c = { topic, partition, first: key[2] as number, records: decode(value, key) }
      }
      if (c === undefined) return undefined
      this.cached = c
    }
    return c.records[offset - c.first]
  }

  // The writes below go into the caller's commit (`writer`). Reads see the last commit, not these writes.

  /**
   * Writes records [from, to) of a partition, read from `source` (which keeps them until the commit is
   * durable), appended at wall-clock time `now`. Each chunk is encoded in a slice of its own.
   */
  append(writer: LogCommitWriter, topic: string, partition: number, source: RecordSource, from: number, to: number, now: number): void {
    for (let start = from; start < to; start += CHUNK) {
      const end = Math.min(to, start + CHUNK)
      const key = [topic, partition, start, end - start, now]
      this.keysOf(topic, partition).push(key)
      writer.later(() => {
        const chunk = encodeRange(source, start, end, topic)
        writer.atSeal(() => void this.records.put(key, chunk))
      })
    }
  }

  /**
   * Deletes a partition's oldest chunks appended at or before `appendedBy`; returns the first offset
   * still on disk (`end` when none is left).
   */
  removeAppendedBy(writer: LogCommitWriter, topic: string, partition: number, appendedBy: number, end: number): number {
    const keys = this.keysOf(topic, partition)
    // Chunks from `end` on are this commit's own: retention 0 must not delete what it is writing.
    const gone = (key: Array<string | number>): boolean => (key[2] as number) < end && (key[4] as number) <= appendedBy
    let n = 0
    while (n < keys.length && gone(keys[n] as Array<string | number>)) n++
    this.remove(writer, keys, n)
    const first = keys[0]
    return first !== undefined && (first[2] as number) < end ? (first[2] as number) : end
  }

  /** Deletes the chunks of a partition whose records are all before `offset`. */
  removeBefore(writer: LogCommitWriter, topic: string, partition: number, offset: number): void {
    const keys = this.keysOf(topic, partition)
    const consumed = (key: Array<string | number>): boolean => (key[2] as number) + (key[3] as number) <= offset
    let n = 0
    while (n < keys.length && consumed(keys[n] as Array<string | number>)) n++
    this.remove(writer, keys, n)
  }

  /** Deletes a partition's first `n` chunks. */
  private remove(writer: LogCommitWriter, keys: Array<Array<string | number>>, n: number): void {
    if (n === 0) return
    this.cached = undefined
    const gone = keys.splice(0, n)
    writer.atSeal(() => gone.forEach((key) => void this.records.remove(key)))
  }

  /** The keys of a partition's chunks on disk (see `chunkKeys`). */
  private keysOf(topic: string, partition: number): Array<Array<string | number>> {
    let partitions = this.chunkKeys.get(topic)
    if (partitions === undefined) this.chunkKeys.set(topic, (partitions = []))
    let keys = partitions[partition]
    if (keys === undefined) keys = partitions[partition] = [...this.records.getKeys({ start: [topic, partition], end: [topic, partition, MAX] })]
    return keys
  }

  putRanges(writer: LogCommitWriter, topic: string, ranges: DurableTopic): void {
    writer.atSeal(() => void this.ranges.put(topic, ranges))
  }

  /** Where a range read from `offset` starts: the chunk holding it. */
  private chunkStart(topic: string, partition: number, offset: number): Array<string | number> {
    for (const key of this.records.getKeys({ start: [topic, partition, offset, MAX], end: [topic, partition], reverse: true, limit: 1 })) return key
    return [topic, partition, offset]
  }
}

/** Decodes a chunk read from lmdb (copied first: records keep views into it). */
function decode(value: Buffer, key: Array<string | number>): LogRecord[] {
  try {
    const records = decodeChunk(Buffer.from(value))
    if (records.length !== key[3]) throw new Error(`${records.length} records, the key says ${key[3]}`)
    return records
  } catch (err) {
    throw new PunctualError('STATE_DIR', `the state directory's log is corrupt at ${JSON.stringify(key)}: ${(err as Error).message}; refusing to go on`, { cause: err, fatal: true })
  }
}
