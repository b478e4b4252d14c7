import type { Headers } from '../processor/api.js'
import { ChangeLog, LoggedField } from '../state/change-log.js'
import { DURABLE } from '../state/stores.js'
import type { DurableStore } from '../state/stores.js'
import { bigEndian64 } from '../windows/key-id.js'

/** A stream record waiting in a stream-table join's grace buffer. */
export interface Buffered<K, V> {
  readonly key: K
  readonly value: V
  readonly ts: number
  readonly headers: Headers
}

const TIME_KEY = -1
const SEQ_KEY = -2

/**
 * The grace buffer of a stream-table join with a versioned table (Kafka Streams' time-ordered buffer,
 * KIP-923): stream records by (timestamp, key bytes, arrival), the order they leave in. Its id is that
 * layout as a latin1 string (8 timestamp bytes, the key's bytes, 8 sequence bytes), so string order is
 * Kafka Streams' order. Its time is the largest timestamp it was given. A task store: commits write
 * what changed, a restart or another instance restores it.
 */
export class JoinBufferStore<K, V> {
  private readonly byId = new Map<string, Buffered<K, V>>()
  /** Ids in order from `head` on. */
  private order: string[] = []
  private head = 0
  private sorted = true
  private readonly time = new LoggedField(TIME_KEY, -1)
  private readonly seq = new LoggedField(SEQ_KEY, 0)
  private readonly log = new ChangeLog<string>(
    {
      saved: (id) => this.byId.get(id),
      savedEntries: () => [...this.byId],
      load: (id, saved) => {
        this.byId.set(id, saved as Buffered<K, V>)
        this.order.push(id)
        this.sorted = false
      },
    },
    [this.time, this.seq] as Array<LoggedField<unknown>>,
  )

  readonly [DURABLE]: DurableStore = this.log

  constructor(readonly name: string) {}

  /** The largest timestamp buffered so far (-1: none). */
  get streamTime(): number {
    return this.time.value
  }

  put(keyId: string, record: Buffered<K, V>): void {
    if (record.ts > this.time.value) this.time.value = record.ts
    const n = this.seq.value
    this.seq.value = n + 1
    const id = bigEndian64(record.ts) + keyId + bigEndian64(n)
    const c = this.log.changes
    if (c !== undefined && !c.has(id)) c.first(id, false)
    this.byId.set(id, record)
    this.sort()
    const order = this.order
    let i = order.length
    while (i > this.head && (order[i - 1] as string) > id) i--
    if (i === order.length) order.push(id)
    else order.splice(i, 0, id)
  }

  /** Takes out, in order, every record with a timestamp at or before `limit`, handing each to `emit`. */
  evictThrough(limit: number, emit: (record: Buffered<K, V>) => void): void {
    this.sort()
    const order = this.order
    while (this.head < order.length) {
      const id = order[this.head] as string
      const record = this.byId.get(id) as Buffered<K, V>
      if (record.ts > limit) break
      this.head++
      const c = this.log.changes
      if (c !== undefined && !c.has(id)) c.first(id, true)
      this.byId.delete(id)
      emit(record)
    }
    if (this.head > 1024 && this.head * 2 > order.length) {
      this.order = order.slice(this.head)
      this.head = 0
    }
  }

  size(): number {
    return this.byId.size
  }

  close(): void {}

  private sort(): void {
    if (this.sorted) return
    this.order = this.order.slice(this.head).sort()
    this.head = 0
    this.sorted = true
  }
}
