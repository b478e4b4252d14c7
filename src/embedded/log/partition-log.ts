import { NO_HEADERS } from '../../processor/api.js'
import type { Headers } from '../../processor/api.js'
import type { Serde } from '../../processor/serdes.js'
import type { InputPartition, LogRecord, MutableLogRecord } from '../../processor/record-io.js'
import type { RecordRun, RecordSource } from './record-codec.js'

/** Where a durable runtime reads records that are on disk only. */
export interface DiskReader {
  get(topic: string, partition: number, offset: number): LogRecord | undefined
}

/** A new chunk holds as many records as the log holds then, within these bounds: a backlog's worth. */
const MIN_CHUNK = 64
/**
 * Arrays of this many elements are too large for the young generation (over 128 KB), so V8 allocates
 * them where collections never copy them.
 */
const MAX_CHUNK = 32768
/** Released chunks kept for reuse, at least (more when a release frees more). */
const MIN_SPARES = 4

/**
 * A run of consecutive records, held by field: no object per record. Records wait in a log until a task
 * reads them, and at full speed that is long enough to outlive two young-generation collections: record
 * objects would each be copied twice and then promoted to the old generation (in the windowed benchmark
 * that was most of the collection time). A busy log's chunks are large enough to be allocated outside
 * the young generation; a quiet log's stay small. Timestamps sit in a Float64Array.
 */
class Chunk {
  readonly keys: unknown[]
  readonly keySerdes: Array<Serde<unknown> | undefined>
  readonly values: unknown[]
  readonly valueSerdes: Array<Serde<unknown> | undefined>
  readonly headers: Headers[]
  readonly timestamps: Float64Array
  length = 0

  constructor(
    /** Offset of the chunk's first record. */
    public start: number,
    readonly capacity: number,
  ) {
    this.keys = new Array(capacity)
    this.keySerdes = new Array(capacity)
    this.values = new Array(capacity)
    this.valueSerdes = new Array(capacity)
    this.headers = new Array(capacity)
    this.timestamps = new Float64Array(capacity)
  }
}

/**
 * One partition of a topic: append-only, addressed by offset. Readers keep their own positions;
 * `truncateBefore` releases records every reader has passed (whole chunks at a time). In a durable
 * runtime the partition also lives on disk: records released from memory (or not loaded at restart) are
 * read from there.
 */
export class PartitionLog implements InputPartition, RecordSource {
  private chunks: Chunk[] = []
  /** The chunk the last read found: readers go forward, so it usually holds the next one too. */
  private lastRead: Chunk | undefined
  /**
   * The last chunks released, reused by the next ones of their size: a new chunk of 32,768 records costs
   * about 7 ms here (five arrays and a Float64Array in fresh memory), and a busy log fills one per
   * 32,768 records. A release frees the chunks read since the last commit, and about as many are
   * appended before the next, so as many spares are kept as the log held (at least MIN_SPARES). In the
   * stream-join benchmark's 6 M records, keeping at most 4 leaves 47 chunks new, this 23; its
   * pass-through part (the same records split, no join) then takes about 1.0 s instead of 1.6 s. Until
   * reused they still refer to released records.
   */
  private readonly spares: Chunk[] = []
  /** Offset of the first record held in memory (the first record of chunks[0]). */
  private base = 0
  /** Records held in memory. */
  private count = 0
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
    return this.base + this.count
  }

  /** Offset of the oldest record still held. */
  startOffset(): number {
    return this.older === undefined ? this.base : this.first
  }

  /** The record at `offset`, built for the reader (a short-lived object), or undefined. */
  get(offset: number): LogRecord | undefined {
    const i = offset - this.base
    if (i >= 0) return i < this.count ? this.at(i) : undefined
    if (this.older === undefined) return undefined
    return offset >= this.first ? this.older.get(this.topic, this.partition, offset) : undefined
  }

  /**
   * Copies the record at `offset` into `into` (a reader's reusable object, so reading allocates
   * nothing); returns false when there is none.
   */
  read(offset: number, into: MutableLogRecord): boolean {
    const i = offset - this.base
    if (i < 0) {
      const r = this.get(offset)
      if (r === undefined) return false
      into.key = r.key
      into.keySerde = r.keySerde
      into.value = r.value
      into.valueSerde = r.valueSerde
      into.timestamp = r.timestamp
      into.headers = r.headers
      return true
    }
    if (i >= this.count) return false
    const c = this.chunkOf(offset)
    const j = offset - c.start
    into.key = c.keys[j]
    into.keySerde = c.keySerdes[j]
    into.value = c.values[j]
    into.valueSerde = c.valueSerdes[j]
    into.timestamp = c.timestamps[j] as number
    into.headers = c.headers[j] as Headers
    return true
  }

  /** The chunks holding records [from, to), in order (a durable commit encodes them straight from there). */
  runs(from: number, to: number, visit: (run: RecordRun, start: number, end: number) => void): void {
    if (from < this.base || to > this.base + this.count) throw new Error(`records [${from}, ${to}) are not all held in memory`)
    for (let offset = from; offset < to; ) {
      const c = this.chunkOf(offset)
      const end = Math.min(to, c.start + c.length)
      visit(c, offset - c.start, end - c.start)
      offset = end
    }
  }

  /** Records [from, to) held in memory. */
  slice(from: number, to: number): LogRecord[] {
    const out: LogRecord[] = []
    for (let i = Math.max(0, from - this.base), end = Math.min(to - this.base, this.count); i < end; i++) out.push(this.at(i))
    return out
  }

  private at(i: number): LogRecord {
    const r: MutableLogRecord = { key: null, keySerde: undefined, value: null, valueSerde: undefined, timestamp: 0, headers: NO_HEADERS }
    this.read(this.base + i, r)
    return r
  }

  /**
   * Puts a partition restored from disk under the records appended so far (which nobody has read yet,
   * so they can move): the log then holds [start, end) plus those, `loaded` being records [loadFrom, end)
   * and `older` reading the ones before loadFrom.
   */
  restore(start: number, end: number, loadFrom: number, loaded: LogRecord[], older: DiskReader): void {
    // Chunks know their offsets: rebuilt from the new start, the loaded records then those appended.
    const appended = this.slice(this.base, this.endOffset())
    this.chunks = []
    this.count = 0
    this.lastRead = undefined
    this.base = loadFrom
    for (const r of loaded) this.push(r.key, r.keySerde, r.value, r.valueSerde, r.timestamp, r.headers)
    for (const r of appended) this.push(r.key, r.keySerde, r.value, r.valueSerde, r.timestamp, r.headers)
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
    return this.appendFields(record.key, record.keySerde, record.value, record.valueSerde, record.timestamp, record.headers)
  }

  /** Appends a record given by its fields (the producers' path: no record object). */
  appendFields(key: unknown, keySerde: Serde<unknown> | undefined, value: unknown, valueSerde: Serde<unknown> | undefined, timestamp: number, headers: Headers): number {
    const offset = this.base + this.count
    this.push(key, keySerde, value, valueSerde, timestamp, headers)
    if (this.listener !== undefined) this.listener()
    return offset
  }

  /** The chunk holding `offset` (held in memory). */
  private chunkOf(offset: number): Chunk {
    const last = this.lastRead
    if (last !== undefined && offset >= last.start && offset < last.start + last.length) return last
    const chunks = this.chunks
    let lo = 0
    let hi = chunks.length - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if ((chunks[mid] as Chunk).start <= offset) lo = mid
      else hi = mid - 1
    }
    return (this.lastRead = chunks[lo] as Chunk)
  }

  private push(key: unknown, keySerde: Serde<unknown> | undefined, value: unknown, valueSerde: Serde<unknown> | undefined, timestamp: number, headers: Headers): void {
    let c = this.chunks[this.chunks.length - 1]
    if (c === undefined || c.length === c.capacity) {
      const capacity = Math.min(MAX_CHUNK, Math.max(MIN_CHUNK, this.count))
      c = this.takeSpare(capacity)
      if (c === undefined) c = new Chunk(this.base + this.count, capacity)
      else {
        c.start = this.base + this.count
        c.length = 0
      }
      this.chunks.push(c)
    }
    const j = c.length++
    c.keys[j] = key
    c.keySerdes[j] = keySerde
    c.values[j] = value
    c.valueSerdes[j] = valueSerde
    c.timestamps[j] = timestamp
    c.headers[j] = headers
    this.count++
  }

  /** A released chunk of exactly this capacity, taken out of the spares, or undefined. */
  private takeSpare(capacity: number): Chunk | undefined {
    const spares = this.spares
    for (let i = spares.length - 1; i >= 0; i--) {
      const c = spares[i] as Chunk
      if (c.capacity !== capacity) continue
      spares[i] = spares[spares.length - 1] as Chunk
      spares.pop()
      return c
    }
    return undefined
  }

  /** One listener, told on every append (the runtime uses it to wake up). */
  onAppend(listener: (() => void) | undefined): void {
    this.listener = listener
  }

  /** Releases records before `offset` from memory (on disk, durable runtimes still read them). */
  truncateBefore(offset: number): void {
    // Whole chunks only, and never the one being appended to.
    let n = 0
    while (n < this.chunks.length - 1) {
      const c = this.chunks[n] as Chunk
      if (c.start + c.length > offset) break
      n++
    }
    if (n === 0) return
    const dropped = this.chunks.splice(0, n)
    for (const c of dropped) this.count -= c.length
    this.base = (this.chunks[0] as Chunk).start
    // The most recently released are kept (a log's chunk size follows its backlog), as many as the log
    // holds in all: a log that keeps a backlog of n chunks appends about n between two releases.
    const keep = Math.max(MIN_SPARES, this.chunks.length + dropped.length)
    for (const c of dropped) {
      this.spares.push(c)
      if (this.spares.length > keep) this.spares.shift()
    }
    this.lastRead = undefined
  }
}
