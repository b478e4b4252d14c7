import type { Headers } from '../processor/api.js'
import type { Serde } from '../processor/serdes.js'

/**
 * A record as stored in an in-memory topic. Key and value are bytes, or, when the writer's serde has
 * `inMemoryIdentity`, the typed value together with that serde (converted to bytes only if a reader
 * with another serde, a partitioner or a durable log needs them). Read them with `log-record.ts`.
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

/** Where a durable runtime reads records that are on disk only. */
export interface DiskReader {
  get(topic: string, partition: number, offset: number): LogRecord | undefined
}

/** Don't compact the backing array for less than this many dropped records (keeps truncation amortized O(1)). */
const MIN_COMPACTION = 4096

/**
 * One partition of a topic: an append-only array addressed by offset. Readers keep their own positions;
 * `truncateBefore` releases records every reader has passed. In a durable runtime the partition also
 * lives on disk: records released from memory (or not loaded at restart) are read from there.
 */
export class PartitionLog {
  private records: LogRecord[] = []
  /** Offset of records[0]. */
  private base = 0
  /** Durable runtimes: offset of the oldest record on disk (below `base` records come from `older`). */
  private first = 0
  /** Reads records that are no longer (or not yet) in memory; durable runtimes only. */
  private older: DiskReader | undefined
  private listener: (() => void) | undefined
  /** End of the records a commit made durable: what read-committed readers may see. */
  committedEnd = 0

  constructor(
    readonly topic: string,
    readonly partition: number,
  ) {}

  /** Offset of the next record to be appended. */
  endOffset(): number {
    return this.base + this.records.length
  }

  /** Offset of the oldest record still held. */
  startOffset(): number {
    return this.older === undefined ? this.base : this.first
  }

  get(offset: number): LogRecord | undefined {
    const r = this.records[offset - this.base]
    if (r !== undefined || offset >= this.base || this.older === undefined) return r
    return offset >= this.first ? this.older.get(this.topic, this.partition, offset) : undefined
  }

  /** Records [from, to) held in memory (a durable commit writes them). */
  slice(from: number, to: number): LogRecord[] {
    return this.records.slice(from - this.base, to - this.base)
  }

  /**
   * Puts a partition restored from disk under the records appended so far (which nobody has read yet,
   * so they can move): the log then holds [start, end) plus those, `loaded` being records [loadFrom, end)
   * and `older` reading the ones before loadFrom.
   */
  restore(start: number, end: number, loadFrom: number, loaded: LogRecord[], older: DiskReader): void {
    this.records = loaded.length === 0 ? this.records : loaded.concat(this.records)
    this.base = loadFrom
    this.first = start
    this.older = older
    this.committedEnd = end
  }

  /** From now on, records released from memory are read with `older` (they are on disk from `start`). */
  onDisk(start: number, older: DiskReader): void {
    this.first = start
    this.older = older
  }

  append(record: LogRecord): number {
    const offset = this.base + this.records.length
    this.records.push(record)
    if (this.listener !== undefined) this.listener()
    return offset
  }

  /** One listener, told on every append (the runtime uses it to wake up). */
  onAppend(listener: (() => void) | undefined): void {
    this.listener = listener
  }

  /** Releases records before `offset` from memory (on disk, durable runtimes still read them). */
  truncateBefore(offset: number): void {
    const drop = Math.min(offset, this.endOffset()) - this.base
    if (drop < MIN_COMPACTION || drop * 2 < this.records.length) return
    this.records = this.records.slice(drop)
    this.base += drop
  }
}
