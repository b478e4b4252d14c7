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

/** Don't compact the backing array for less than this many dropped records (keeps truncation amortized O(1)). */
const MIN_COMPACTION = 4096

/**
 * One partition of an in-memory topic: an append-only array addressed by offset. Readers keep their own
 * positions; `truncateBefore` releases records every reader has passed.
 */
export class PartitionLog {
  private records: LogRecord[] = []
  private base = 0
  private listener: (() => void) | undefined

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
    return this.base
  }

  get(offset: number): LogRecord | undefined {
    return this.records[offset - this.base]
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

  truncateBefore(offset: number): void {
    const drop = Math.min(offset, this.endOffset()) - this.base
    if (drop < MIN_COMPACTION || drop * 2 < this.records.length) return
    this.records = this.records.slice(drop)
    this.base += drop
  }
}
