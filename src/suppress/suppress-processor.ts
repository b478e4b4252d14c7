import { PunctualError } from '../errors.js'
import type { Processor, ProcessorContext, StreamRecord } from '../processor/api.js'
import type { Windowed } from '../windows/windows.js'
import { join } from 'node:path'
import { TimeOrderedBuffer } from './buffer.js'
import type { BufferEntry, SuppressionBuffer } from './buffer.js'
import { SpillingBuffer } from './spilling-buffer.js'
import type { Sizer, Suppressed } from './config.js'

export interface SuppressOptions<K, V> {
  /** The node's name, used in errors. */
  readonly name: string
  readonly suppressed: Suppressed<K, V>
  /** Byte-ordered id of a key (windowed keys: key bytes then window start). */
  readonly keyId: (key: K) => string
  readonly sizer: Sizer<K, V>
  /** For `untilWindowCloses`: the grace period of the upstream windows. */
  readonly graceMs?: number
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
 */
export class SuppressProcessor<K, V> implements Processor<K, V | null, K, V | null> {
  private ctx!: ProcessorContext<K, V | null>
  private buffer!: SuppressionBuffer<K, V>
  private readonly spills: boolean
  /** First-update timestamps for `waitFrom: first`, by key id (cleared when the key leaves). */
  private readonly firstSeen = new Map<string, number>()
  private observedStreamTime = -1
  private readonly finalResults: boolean
  private readonly delay: number
  private readonly maxRecords: number
  private readonly maxBytes: number

  constructor(private readonly options: SuppressOptions<K, V>) {
    const s = options.suppressed
    this.finalResults = s.until === 'windowCloses'
    this.delay = s.until === 'windowCloses' ? (options.graceMs ?? 0) : s.waitMs
    this.maxRecords = s.bufferConfig.maxRecords
    this.maxBytes = s.bufferConfig.maxBytes
    this.spills = s.bufferConfig.whenFull === 'spillToDisk' && (this.maxRecords !== Infinity || this.maxBytes !== Infinity)
  }

  init(ctx: ProcessorContext<K, V | null>): void {
    this.ctx = ctx
    this.buffer = this.spills
      ? new SpillingBuffer<K, V>(join(ctx.stateDir(), `suppress-${this.options.name}`), this.maxRecords, this.maxBytes)
      : new TimeOrderedBuffer<K, V>()
  }

  close(): void {
    this.buffer.close()
  }

  process(record: StreamRecord<K, V | null>): void {
    const ts = record.timestamp
    if (ts > this.observedStreamTime) this.observedStreamTime = ts
    const id = this.options.keyId(record.key)
    let orderTime: number
    const s = this.options.suppressed
    if (s.until === 'windowCloses') {
      orderTime = (record.key as unknown as Windowed<unknown>).window.end
    } else if (s.waitFrom === 'first') {
      let first = this.firstSeen.get(id)
      if (first === undefined || !this.buffer.has(id)) this.firstSeen.set(id, (first = ts))
      orderTime = first
    } else {
      orderTime = ts
    }
    this.buffer.put(id, record.key, record.value, ts, orderTime, this.options.sizer(record.key, record.value))
    this.enforceConstraints()
  }

  private enforceConstraints(): void {
    const expiry = this.observedStreamTime - this.delay
    this.buffer.evictWhile((e) => e.orderTime <= expiry, this.emit)
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

  private overCapacity(): boolean {
    return this.buffer.numRecords > this.maxRecords || this.buffer.bufferSize > this.maxBytes
  }

  private readonly emit = (entry: BufferEntry<K, V>): void => {
    this.firstSeen.delete(entry.keyId)
    if (entry.value === null && this.finalResults) return
    this.ctx.forward({ key: entry.key, value: entry.value, timestamp: entry.timestamp, headers: [] })
  }
}
