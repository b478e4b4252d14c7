import type { Processor, ProcessorContext, ProcessorSupplier, StreamRecord } from '../processor/api.js'
import type { JoinWindows } from './join-windows.js'
import type { JoinWindowStore } from './join-stores.js'
import type { OuterJoinStore, Parked } from './outer-join-store.js'

/**
 * A join side's first node (Kafka Streams' KSTREAM-WINDOWED): passes each record on to the side's join
 * processor, then stores it in the side's window store, where the other side's processor finds it.
 * Records without a key or a value are not stored.
 */
export function joinWindowedProcessor<K, V>(storeName: string, keyId: (key: K) => string): ProcessorSupplier<K, V, K, V> {
  return () => {
    let ctx: ProcessorContext<K, V>
    let store: JoinWindowStore<K, V>
    return {
      init(c) {
        ctx = c
        store = c.getStateStore(storeName)
      },
      process(record) {
        ctx.forward(record)
        if (record.key !== null && record.key !== undefined && record.value !== null && record.value !== undefined) store.put(keyId(record.key), record.key, record.timestamp, record.value)
      },
    }
  }
}

/** What one side's join processor needs to know. */
export interface JoinSide<K, VThis, VOther, VR> {
  /** This side is the left one (the stream `join` was called on). */
  readonly left: boolean
  /** Emit this side's records that find no partner (left side of left/outer joins, right side of outer joins). */
  readonly outer: boolean
  readonly windows: JoinWindows
  /** The other side's window store. */
  readonly otherStore: string
  /** The shared store of unmatched records (left and outer joins). */
  readonly outerStore: string | undefined
  /** The user's joiner, with this side's value first. */
  readonly joiner: (thisValue: VThis | null, otherValue: VOther | null, key: K) => VR
  readonly keyId: (key: K) => string
}

/**
 * One side of a stream-stream join (Kafka Streams' KStreamKStreamJoin, SEMANTICS 8). A record joins
 * every record of the other side's store within the window, oldest first, each result at the later of
 * the two timestamps. In a left or outer join a record of an outer side with no partner is parked, and
 * emitted with a null partner once the join's stream time passes its timestamp by the window's reach
 * after it plus the grace period; one already that far behind is emitted at once. Parked records are
 * emitted when a record at the join's stream time arrives, before that record is joined.
 */
export class StreamStreamJoinProcessor<K, VThis, VOther, VR> implements Processor<K, VThis, K, VR> {
  private ctx!: ProcessorContext<K, VR>
  private other!: JoinWindowStore<K, VOther>
  private parked: OuterJoinStore<K> | undefined
  /** The other side's records that may join one of this side at t: [t - lookBefore, t + lookAfter]. */
  private readonly lookBefore: number
  private readonly lookAfter: number
  /** The record being joined, for `joinOne` (a method, not a closure per record). */
  private current!: StreamRecord<K, VThis>
  private currentId = ''
  private readonly joinOne = (ts: number, value: VOther): void => this.emitJoined(ts, value)

  constructor(private readonly side: JoinSide<K, VThis, VOther, VR>) {
    // The right side sees the window from the other end.
    this.lookBefore = side.left ? side.windows.beforeMs : side.windows.afterMs
    this.lookAfter = side.left ? side.windows.afterMs : side.windows.beforeMs
  }

  init(context: ProcessorContext<K, VR>): void {
    this.ctx = context
    this.other = context.getStateStore(this.side.otherStore)
    if (this.side.outerStore !== undefined) this.parked = context.getStateStore<OuterJoinStore<K>>(this.side.outerStore)
  }

  process(record: StreamRecord<K, VThis>): void {
    const ts = record.timestamp
    const parked = this.parked
    parked?.advance(ts)
    const key = record.key
    if (key === null || key === undefined) {
      // Kafka Streams (KIP-962): an outer side's record without a key is emitted with no partner.
      if (this.side.outer && record.value !== null && record.value !== undefined) this.forward(record, key, this.side.joiner(record.value, null, key), ts)
      return
    }
    if (record.value === null || record.value === undefined) return
    if (parked !== undefined && ts === parked.streamTime) this.emitExpired(parked, record)
    const from = Math.max(0, ts - this.lookBefore)
    const to = Math.max(0, ts + this.lookAfter)
    this.current = record
    this.currentId = this.side.keyId(key)
    const joined = this.other.fetch(this.currentId, from, to, this.joinOne)
    if (joined > 0 || !this.side.outer) return
    // With no shared store (not the case in the DSL) or already past the window, no partner can come.
    if (parked === undefined || to < parked.streamTime) {
      this.forward(record, key, this.side.joiner(record.value, null, key), ts)
    } else {
      if (ts < parked.minTime) parked.minTime = ts
      parked.park(this.currentId, key, ts, this.side.left, record.value)
    }
  }

  private emitJoined(otherTs: number, otherValue: VOther): void {
    const record = this.current
    // The partner was waiting unmatched: it is not emitted alone any more.
    this.parked?.unpark(this.currentId, otherTs, !this.side.left)
    this.forward(record, record.key, this.side.joiner(record.value, otherValue, record.key), Math.max(record.timestamp, otherTs))
  }

  /**
   * Emits the parked records whose window and grace period are over, in (timestamp, side, key) order,
   * right before left. Kafka Streams first checks the smallest parked timestamp against this side's
   * reach; then a record is over when `ts + reach + grace < streamTime`, its reach being `after` for a
   * left record and `before` for a right one; the pass stops when both sides have one that is not.
   */
  private emitExpired(parked: OuterJoinStore<K>, trigger: StreamRecord<K, VThis>): void {
    const { windows } = this.side
    const streamTime = parked.streamTime
    if (parked.minTime + this.lookAfter + windows.graceMs >= streamTime) return
    parked.minTime = Infinity
    let leftOpen = false
    let rightOpen = false
    parked.scan((p: Parked<K>) => {
      parked.minTime = p.ts
      if (leftOpen && rightOpen) return false
      if (p.ts + (p.left ? windows.afterMs : windows.beforeMs) + windows.graceMs >= streamTime) {
        if (p.left) leftOpen = true
        else rightOpen = true
        // Kafka Streams visits each value of an entry on its own: a second value of the entry that
        // opened the second side stops the pass with the smallest time at this entry's, not the next one's.
        return !(leftOpen && rightOpen && p.values.length > 1)
      }
      parked.remove(p)
      for (const v of p.values) {
        const value = (this.side.left === p.left ? this.side.joiner(v as VThis, null, p.key) : this.side.joiner(null, v as VOther, p.key)) as VR
        this.forward(trigger, p.key, value, p.ts)
      }
      return true
    })
  }

  private forward(from: StreamRecord<K, VThis>, key: K, value: VR, timestamp: number): void {
    this.ctx.forward({ key, value, timestamp, headers: from.headers })
  }
}
