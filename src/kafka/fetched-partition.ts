import { NO_HEADERS } from '../processor/api.js'
import type { Headers } from '../processor/api.js'
import type { InputPartition, MutableLogRecord } from '../processor/record-io.js'

/** A record as fetched from a partition: key and value still bytes (a task's source serdes read them). */
export interface FetchedMessage {
  readonly offset: number
  readonly key: Uint8Array | null
  readonly value: Uint8Array | null
  readonly timestamp: number
  readonly headers?: Headers | undefined
}

/**
 * One input partition of a task on Kafka: the records fetched and not yet released, in offset order.
 * Offsets may have gaps (transaction markers, records aborted under read_committed), which `read`
 * reports as records it does not hold; a task skips them. A task reads offsets in order, so `read` walks
 * forward from where the last read stopped: no search per record.
 */
export class FetchedPartition implements InputPartition {
  private messages: FetchedMessage[] = []
  /** Index in `messages` of the first message not yet read past. */
  private cursor = 0
  /** Where reading starts with nothing fetched: the committed position the consumer fetches from. */
  private nextOffset: number
  /**
   * The partition's end as the consumer last reached it (-1: not yet): the offset of a partition-EOF
   * event, under read_committed the last stable offset. Records fetched later lie beyond it.
   */
  private reachedEndAt = -1

  constructor(
    readonly topic: string,
    readonly partition: number,
    /** The position the consumer starts fetching at. */
    position: number,
    /** The partition's high watermark as the consumer last heard it (for lag). */
    private readonly highWatermark?: () => number | undefined,
  ) {
    this.nextOffset = position
  }

  /** Adds a fetched batch (offsets increasing, after every message held). */
  append(batch: readonly FetchedMessage[]): void {
    for (const m of batch) {
      if (m.offset < this.nextOffset) throw new RangeError(`${this.topic}-${this.partition}: offset ${m.offset} fetched after ${this.nextOffset - 1}`)
      this.messages.push(m)
      this.nextOffset = m.offset + 1
    }
  }

  /** Messages held: what the consumer pauses on when it grows too large. */
  get size(): number {
    return this.messages.length - this.cursor
  }

  startOffset(): number {
    return this.cursor < this.messages.length ? (this.messages[this.cursor] as FetchedMessage).offset : this.nextOffset
  }

  endOffset(): number {
    return this.nextOffset
  }

  latestOffset(): number | undefined {
    const high = this.highWatermark?.()
    // Not told yet: what has been fetched is the least the partition holds.
    return high === undefined ? this.nextOffset : Math.max(high, this.nextOffset)
  }

  /**
   * The consumer fetched to the partition's end, `offset` (its partition-EOF event). librdkafka raises it
   * when a fetch finds nothing past its position, before handing out the messages fetched ahead of it.
   */
  reachedEnd(offset: number): void {
    if (offset > this.reachedEndAt) this.reachedEndAt = offset
  }

  caughtUp(): boolean {
    if (this.reachedEndAt >= this.nextOffset) return true
    // The high watermark of the last fetch says so too when nothing follows the records fetched (it
    // counts transaction markers, so under read_committed the end event is what usually tells).
    const high = this.highWatermark?.()
    if (high === undefined || high > this.nextOffset) return false
    this.reachedEndAt = this.nextOffset
    return true
  }

  read(offset: number, into: MutableLogRecord): boolean {
    const messages = this.messages
    let i = this.cursor
    while (i < messages.length && (messages[i] as FetchedMessage).offset < offset) i++
    // Messages before the offset read are done with: the array is compacted when they are half of it.
    this.cursor = i
    if (i > 1024 && i * 2 > messages.length) {
      this.messages = messages.slice(i)
      this.cursor = 0
      i = 0
    }
    const m = this.messages[i]
    if (m === undefined || m.offset !== offset) return false
    into.key = m.key
    into.keySerde = undefined
    into.value = m.value
    into.valueSerde = undefined
    into.timestamp = m.timestamp
    into.headers = m.headers ?? NO_HEADERS
    return true
  }
}
