import { PunctualError } from '../errors.js'
import { PunctuationType } from '../processor/api.js'
import type { Cancellable, Processor, ProcessorContext, StreamRecord } from '../processor/api.js'
import type { Windowed } from '../windows/windows.js'
import { join } from 'node:path'
import { TimeOrderedBuffer } from './buffer.js'
import type { BufferEntry, SuppressionBuffer, SuppressionStore } from './buffer.js'
import { SpillingBuffer } from './spilling-buffer.js'
import type { Suppressed } from './config.js'

export interface SuppressOptions<K, V> {
  /** The node's name, used in errors. */
  readonly name: string
  readonly suppressed: Suppressed<K, V>
  /** Byte-ordered id of a key (windowed keys: key bytes then window start). */
  readonly keyId: (key: K) => string
  /** Entry size; gets the key id too, whose length is the key's byte count. */
  readonly sizer: (key: K, value: V | null, keyId: string) => number
  /** For `untilWindowCloses`: the grace period of the upstream windows. */
  readonly graceMs?: number
  /** The task store holding the buffer, wherever it is, so commits make it durable. */
  readonly storeName?: string
}

/** Whether a suppression spills to disk: spillToDiskWhenFull with a bound to spill beyond. */
export function spillsToDisk(config: { readonly whenFull: string; readonly maxRecords: number; readonly maxBytes: number }): boolean {
  return config.whenFull === 'spillToDisk' && (config.maxRecords !== Infinity || config.maxBytes !== Infinity)
}

/**
 * Suppression (KIP-328, SEMANTICS 6) on a table's update stream. Each record updates its key's buffer
 * entry; then every entry due at the node's observed stream time leaves, oldest first; then, if a size
 * bound is exceeded, the policy applies: emit the oldest early, or stop with an error.
 *
 * - `untilTimeLimit(wait)`: a key is due when its order time <= stream time - wait. The order time is the
 *   latest update's timestamp (`waitFrom: latest`), or the first update's (`first`). Tombstones are
 *   buffered like values and forwarded when due.
 * - `untilWindowCloses`: a window is due when `windowEnd + grace <= stream time`; the order time is the
 *   window end. Tombstones (retracted sessions) replace the buffered value and are not forwarded.
 *   Beyond Kafka, with a wall-clock limit d a window is also emitted once the wall clock reaches
 *   `windowEnd + grace + d` (one wall-clock schedule, armed for the oldest window); later updates for a
 *   window emitted that way are dropped as late.
 */
export class SuppressProcessor<K, V> implements Processor<K, V | null, K, V | null> {
  private ctx!: ProcessorContext<K, V | null>
  private buffer!: SuppressionBuffer<K, V>
  /** The durable store of the buffer. */
  private store: SuppressionStore<K, V> | undefined
  private readonly spills: boolean
  private observedStreamTime = -1
  private readonly finalResults: boolean
  /** For the wall-clock limit: the one schedule, and the time it is armed for. */
  private wallSchedule: Cancellable | undefined
  private wallScheduledFor = Infinity
  /** Windows emitted on the wall clock before stream time closed them: (window end, key id), by end. */
  private closedEarly: Array<[number, string]> = []
  private readonly closedEarlyIds = new Set<string>()
  private readonly delay: number
  /** Entries ordered at or before this time are due (set for each record, read by `expired`). */
  private expiry = -Infinity
  private readonly maxRecords: number
  private readonly maxBytes: number

  constructor(private readonly options: SuppressOptions<K, V>) {
    const s = options.suppressed
    this.finalResults = s.until === 'windowCloses'
    this.delay = s.until === 'windowCloses' ? (options.graceMs ?? 0) : s.waitMs
    this.maxRecords = s.bufferConfig.maxRecords
    this.maxBytes = s.bufferConfig.maxBytes
    this.spills = spillsToDisk(s.bufferConfig)
  }

  init(ctx: ProcessorContext<K, V | null>): void {
    this.ctx = ctx
    const storeName = this.options.storeName
    const spilling = (): SpillingBuffer<K, V> => new SpillingBuffer<K, V>(join(ctx.stateDir(), `suppress-${this.options.name}`), this.maxRecords, this.maxBytes)
    if (storeName !== undefined) {
      // After a restart the buffer, the observed stream time and the windows closed early come back.
      this.store = ctx.getStateStore<SuppressionStore<K, V>>(storeName)
      if (this.spills) this.store.useBuffer(spilling())
      this.buffer = this.store.buffer
      this.observedStreamTime = this.store.streamTime
      this.closedEarly = this.store.closedEarly
      for (const [, id] of this.closedEarly) this.closedEarlyIds.add(id)
    } else {
      this.buffer = this.spills ? spilling() : new TimeOrderedBuffer<K, V>()
    }
    this.armWallClock()
  }

  close(): void {
    // A store's buffer is closed with the store.
    if (this.store === undefined) this.buffer.close()
  }

  process(record: StreamRecord<K, V | null>): void {
    const ts = record.timestamp
    if (ts > this.observedStreamTime) {
      this.observedStreamTime = ts
      if (this.store !== undefined) this.store.streamTime = ts
    }
    const id = this.options.keyId(record.key)
    if (this.closedEarly.length > 0) {
      this.forgetClosedEarly()
      if (this.closedEarlyIds.has(id)) {
        this.ctx.droppedRecord('late')
        return
      }
    }
    let orderTime: number
    const s = this.options.suppressed
    if (s.until === 'windowCloses') {
      orderTime = (record.key as unknown as Windowed<unknown>).window.end
    } else if (s.waitFrom === 'first') {
      // The order time of a buffered key is its first update's timestamp: keep it.
      orderTime = this.buffer.orderTimeOf(id) ?? ts
    } else {
      orderTime = ts
    }
    this.buffer.put(id, record.key, record.value, ts, orderTime, this.options.sizer(record.key, record.value, id))
    this.enforceConstraints()
    this.armWallClock()
  }

  /** Keeps the one wall-clock schedule armed for the oldest window's wall-clock deadline. */
  private armWallClock(): void {
    const s = this.options.suppressed
    if (s.until !== 'windowCloses' || s.wallClockLimitMs === undefined) return
    const due = this.buffer.minOrderTime() + this.delay + s.wallClockLimitMs
    if (due === this.wallScheduledFor) return
    this.wallSchedule?.cancel()
    this.wallSchedule = undefined
    this.wallScheduledFor = due
    if (due === Infinity) return
    // Anchored at the deadline with a 1 ms grid: due at the deadline, or 1 ms after registration if it has
    // passed (an anchor in the past is never due at once). The callback cancels it: it fires once.
    // (A huge interval anchored at "now" raced with the clock: a millisecond later, "now" was in the past
    // and the first due point was an interval away.)
    this.wallSchedule = this.ctx.schedule({ type: PunctuationType.WALL_CLOCK_TIME, intervalMs: 1, startTime: Math.max(0, Math.ceil(due)) }, this.onWallClock)
  }

  private readonly onWallClock = (now: number): void => {
    const limit = (this.options.suppressed as { wallClockLimitMs: number }).wallClockLimitMs
    this.wallScheduledFor = Infinity
    this.wallSchedule?.cancel()
    this.wallSchedule = undefined
    this.buffer.evictWhile(
      (e) => e.orderTime + this.delay + limit <= now,
      (e) => {
        // Closed by the wall clock before stream time closed it: later updates are late.
        if (e.orderTime + this.delay > this.observedStreamTime) {
          this.closedEarly.push([e.orderTime, e.keyId])
          this.closedEarlyIds.add(e.keyId)
          this.store?.closedEarlyChanged()
        }
        this.emit(e)
      },
    )
    this.armWallClock()
  }

  /** Stream time closed these windows too: the upstream aggregation drops their late records itself. */
  private forgetClosedEarly(): void {
    const q = this.closedEarly
    let n = 0
    while (n < q.length && (q[n] as [number, string])[0] + this.delay <= this.observedStreamTime) this.closedEarlyIds.delete((q[n++] as [number, string])[1])
    if (n > 0) {
      q.splice(0, n)
      this.store?.closedEarlyChanged()
    }
  }

  private enforceConstraints(): void {
    // A field and a predicate made once: a closure over a local would be allocated for every record.
    this.expiry = this.observedStreamTime - this.delay
    if (this.buffer.minOrderTime() <= this.expiry) this.buffer.evictWhile(this.expired, this.emit)
    // A spilling buffer keeps its memory part within the bound itself and is never full.
    if (this.spills || !this.overCapacity()) return
    const config = this.options.suppressed.bufferConfig
    if (config.whenFull === 'emitEarly') {
      this.buffer.evictWhile(() => this.overCapacity(), this.emit)
      return
    }
    const bound =
      this.buffer.numRecords > this.maxRecords
        ? `maxRecords ${this.maxRecords} (it holds ${this.buffer.numRecords} keys)`
        : `maxBytes ${this.maxBytes} (it holds ${this.buffer.bufferSize} bytes)`
    throw new PunctualError('BUFFER_FULL', `suppression "${this.options.name}" is full: the buffer exceeds ${bound}; stopping as configured (shutDownWhenFull)`, { fatal: true })
  }

  private readonly expired = (e: BufferEntry<K, V>): boolean => e.orderTime <= this.expiry

  private overCapacity(): boolean {
    return this.buffer.numRecords > this.maxRecords || this.buffer.bufferSize > this.maxBytes
  }

  private readonly emit = (entry: BufferEntry<K, V>): void => {
    if (entry.value === null && this.finalResults) return
    this.ctx.forward({ key: entry.key, value: entry.value, timestamp: entry.timestamp, headers: [] })
  }
}
