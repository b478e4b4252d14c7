import { readKey, readValue } from '../record-io.js'
import type { InputPartition, LogRecord, MutableLogRecord } from '../record-io.js'
import type { DropReason } from '../errors.js'
import type { InputPartitionMetrics } from '../../metrics.js'
import type { StreamRecord } from '../api.js'
import type { SourceNode } from './nodes.js'
import type { ConsumerRecord, TimestampExtractor } from '../timestamp-extractor.js'
import { PunctualError } from '../../errors.js'
import type { Clock } from '../../time/clock.js'

/** The record handed to a timestamp extractor, reused from one record to the next. */
interface MutableConsumerRecord extends ConsumerRecord<unknown, unknown> {
  topic: string
  partition: number
  offset: number
  key: unknown
  value: unknown
  timestamp: number
  headers: StreamRecord<unknown, unknown>['headers']
}

/** Reports a record that could not be read; decides whether processing goes on. */
export type BadInputSink = (reason: DropReason, queue: PartitionQueue, offset: number, error: unknown) => void

/**
 * A task's reader of one input partition. The head record is deserialized and validated lazily, once;
 * records that cannot be read are reported and skipped here, so they never reach a processor nor count
 * towards stream time.
 */
export class PartitionQueue {
  /** Offset of the next record to read from the input partition. */
  private position: number
  private headRecord: StreamRecord<unknown, unknown> | undefined
  private headOffset = -1
  /** The record being read, reused: reading a record allocates nothing. */
  private readonly raw: MutableLogRecord = { key: null, keySerde: undefined, value: null, valueSerde: undefined, timestamp: 0, headers: [] }
  /** Wall-clock time until which the task waits for this partition while it is empty (maxTaskIdleMs). */
  idleDeadline = -1
  /**
   * The largest valid timestamp read from this partition since the task started, -1 before any: what a
   * timestamp extractor gets as partition time.
   */
  private partitionTime = -1
  /** Set only with a timestamp extractor: the record it is given. */
  private readonly consumed: MutableConsumerRecord | undefined

  constructor(
    readonly input: InputPartition,
    readonly source: SourceNode,
    private readonly reportBadInput: BadInputSink,
    startOffset: number,
    /** Where event time comes from; undefined: the record's own timestamp. */
    private readonly extractor?: TimestampExtractor | undefined,
    private readonly clock?: Clock | undefined,
  ) {
    this.position = startOffset
    if (extractor !== undefined) {
      this.consumed = { topic: input.topic, partition: input.partition, offset: 0, key: null, value: null, timestamp: 0, headers: [] }
    }
  }

  get topic(): string {
    return this.input.topic
  }

  get partition(): number {
    return this.input.partition
  }

  /** The next valid record, or undefined when none is available now. */
  head(): StreamRecord<unknown, unknown> | undefined {
    if (this.headRecord !== undefined) return this.headRecord
    const input = this.input
    const end = input.endOffset()
    while (this.position < end) {
      const offset = this.position++
      const raw = this.raw
      if (!input.read(offset, raw)) continue
      let ts = raw.timestamp
      // Without an extractor the record's own timestamp is checked before anything is deserialized.
      if (this.consumed === undefined && (!Number.isSafeInteger(ts) || ts < 0)) {
        this.reportBadInput('invalid-timestamp', this, offset, new RangeError(`invalid timestamp ${ts}`))
        continue
      }
      let key: unknown
      let value: unknown
      try {
        key = readKey(raw, this.source.keySerde, input.topic)
        value = readValue(raw, this.source.valueSerde, input.topic)
      } catch (err) {
        this.reportBadInput('deserialization', this, offset, err)
        continue
      }
      if (this.consumed !== undefined) {
        ts = this.extract(this.consumed, offset, key, value, raw)
        if (!Number.isSafeInteger(ts) || ts < 0) {
          this.reportBadInput('invalid-timestamp', this, offset, new RangeError(`the timestamp extractor returned ${ts} for the record's timestamp ${raw.timestamp}`))
          continue
        }
      }
      if (ts > this.partitionTime) this.partitionTime = ts
      this.headRecord = { key, value, timestamp: ts, headers: raw.headers }
      this.headOffset = offset
      return this.headRecord
    }
    return undefined
  }

  /** Runs the extractor on a record; what it throws stops the task, naming the record. */
  private extract(consumed: MutableConsumerRecord, offset: number, key: unknown, value: unknown, raw: MutableLogRecord): number {
    consumed.offset = offset
    consumed.key = key
    consumed.value = value
    consumed.timestamp = raw.timestamp
    consumed.headers = raw.headers
    try {
      return (this.extractor as TimestampExtractor).extract(consumed, this.partitionTime, (this.clock as Clock).now())
    } catch (err) {
      if (err instanceof PunctualError && err.code === 'INVALID_TIMESTAMP') throw err
      throw new PunctualError('PROCESSING', `the timestamp extractor of source "${this.source.name}" threw on record ${this.topic}-${this.partition}@${offset}: ${err instanceof Error ? err.message : String(err)}`, { cause: err })
    } finally {
      // The extractor sees the record only during the call: drop the references it held.
      consumed.key = null
      consumed.value = null
    }
  }

  /** Takes the head (call `head()` first); its offset is then `lastOffset`. */
  take(): StreamRecord<unknown, unknown> {
    const r = this.headRecord as StreamRecord<unknown, unknown>
    this.headRecord = undefined
    return r
  }

  /**
   * The record last read from the partition, as stored (bytes, or typed with its serde): the one being
   * processed, or the one just reported as bad input. Overwritten by the next read.
   */
  get rawRecord(): LogRecord {
    return this.raw
  }

  get lastOffset(): number {
    return this.headOffset
  }

  /** The offset to resume from after a restart: everything before it is processed or dropped. */
  committableOffset(): number {
    return this.headRecord === undefined ? this.position : this.headOffset
  }

  metrics(): InputPartitionMetrics {
    const position = this.committableOffset()
    const end = this.input.latestOffset === undefined ? this.input.endOffset() : this.input.latestOffset()
    return { topic: this.topic, partition: this.partition, position, endOffset: end, lag: end === undefined ? undefined : Math.max(0, end - position) }
  }
}
