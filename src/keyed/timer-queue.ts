import type { StoreKey } from '../processor/api.js'

/** A pending timer's data, as `entries()` and `list()` return it. */
export interface TimerEntry {
  readonly timestamp: number
  readonly seq: number
  readonly key: StoreKey
  readonly owner: number
}

const ARITY = 4
const INITIAL_CAPACITY = 64
/** Typed arrays grow by half: less slack at tens of millions of timers than doubling. */
const GROWTH = 1.5
const FREE = 0
const LIVE = 1
/** Deleted, but still in a heap slot: its id is reused only once the heap drops the slot. */
const DEAD = 2
/** An index slot never used since the last rebuild. */
const EMPTY = -1

/**
 * A set-semantic priority queue of timers (Flink's HeapPriorityQueueSet), laid out for the cache.
 *
 * - Heap: 4-ary, its slots hold (timestamp, registration order, id) in typed arrays, so sifting compares
 *   neighbouring numbers instead of chasing object pointers, and no per-timer position is written.
 * - Ids: each timer has an integer id (reused once it leaves the heap) with its key, owner and state.
 * - Index: an open-addressing hash table (Int32Array of ids, linear probing) on (owner, key, timestamp),
 *   for deduplication and deletion. A slot is trusted only if its id is LIVE with exactly that owner, key
 *   and timestamp, so slots of timers that fired or were deleted need no cleanup: they are skipped, and
 *   dropped when the table is rebuilt (when used slots pass half its size). No JavaScript Map is touched
 *   on any operation, and firing does not touch the index at all.
 *
 * Deletion is lazy in the heap too: a deleted timer is marked DEAD and dropped when it reaches the top, or
 * in a compaction when dead slots outnumber live ones. `owner` is a small integer: the keyed node (user
 * timers) or the state (TTL timers).
 */
export class TimerQueue {
  /** Heap slots in use, DEAD ones included. */
  private slots = 0
  private dead = 0
  /** The hash index: timer ids, EMPTY, or ids no longer valid (skipped on lookup). */
  private table = new Int32Array(INITIAL_CAPACITY * 2).fill(EMPTY)
  /** Slots that are not EMPTY (valid or stale). */
  private usedSlots = 0
  /** Heap slots: (timestamp, registration order) pairs side by side, so one cache line holds a slot's children. */
  private slotKey = new Float64Array(INITIAL_CAPACITY * 2)
  private slotId = new Int32Array(INITIAL_CAPACITY)
  private idTime = new Float64Array(INITIAL_CAPACITY)
  private idState = new Uint8Array(INITIAL_CAPACITY)
  private idOwner = new Int32Array(INITIAL_CAPACITY)
  // Grown by push, never by setting length: a long length on a short array turns it into a slow dictionary.
  private readonly idKey: Array<StoreKey | undefined> = Array.from({ length: INITIAL_CAPACITY }, () => undefined)
  private readonly freeIds: number[] = []
  private nextId = 0
  private readonly polled = { timestamp: 0, seq: 0, key: '' as StoreKey, owner: 0 }

  /** Pending timers. */
  get size(): number {
    return this.slots - this.dead
  }

  /** Earliest pending timestamp, or Infinity. */
  peekTime(): number {
    this.dropDeadHead()
    return this.slots === 0 ? Infinity : (this.slotKey[0] as number)
  }

  /** Adds a timer unless (owner, key, timestamp) is already pending; returns whether it was added. */
  add(owner: number, key: StoreKey, timestamp: number, seq: number): boolean {
    const h = hashOf(owner, key, timestamp)
    if (this.lookup(h, owner, key, timestamp) >= 0) return false
    const id = this.allocate()
    this.idTime[id] = timestamp
    this.idOwner[id] = owner
    this.idKey[id] = key
    this.idState[id] = LIVE
    this.insertSlot(h, id)
    if (this.slots === this.slotId.length) this.growSlots()
    const slot = this.slots++
    this.place(slot, timestamp, seq, id)
    this.siftUp(slot)
    return true
  }

  /** Removes the timer if pending; returns whether it was. */
  remove(owner: number, key: StoreKey, timestamp: number): boolean {
    const id = this.lookup(hashOf(owner, key, timestamp), owner, key, timestamp)
    if (id < 0) return false
    // Its index slot goes stale with the state change; the heap drops the DEAD slot later.
    this.idState[id] = DEAD
    this.dead++
    if (this.dead > 1024 && this.dead * 2 > this.slots) this.compact()
    return true
  }

  /**
   * Removes the head if its timestamp is <= `time` and returns it, or undefined. The returned object is
   * reused by the next call: read it before polling again.
   */
  pollDue(time: number): TimerEntry | undefined {
    this.dropDeadHead()
    if (this.slots === 0 || (this.slotKey[0] as number) > time) return undefined
    const id = this.slotId[0] as number
    const polled = this.polled
    polled.timestamp = this.slotKey[0] as number
    polled.seq = this.slotKey[1] as number
    polled.key = this.idKey[id] as StoreKey
    polled.owner = this.idOwner[id] as number
    this.removeSlot(0)
    this.release(id)
    return polled
  }

  /** Pending timers of one owner and key, in firing order (a scan: for inspection, not the hot path). */
  list(owner: number, key: StoreKey): TimerEntry[] {
    const out: TimerEntry[] = []
    for (let slot = 0; slot < this.slots; slot++) {
      const id = this.slotId[slot] as number
      if (this.idState[id] === LIVE && this.idOwner[id] === owner && this.idKey[id] === key) out.push(this.entry(slot))
    }
    return out.sort((a, b) => a.timestamp - b.timestamp || a.seq - b.seq)
  }

  countOwner(owner: number): number {
    let n = 0
    for (let s = 0; s < this.slots; s++) {
      const id = this.slotId[s] as number
      if (this.idState[id] === LIVE && this.idOwner[id] === owner) n++
    }
    return n
  }

  /** All pending timers in heap order (for snapshots). */
  entries(): TimerEntry[] {
    const out: TimerEntry[] = []
    for (let s = 0; s < this.slots; s++) if (this.idState[this.slotId[s] as number] === LIVE) out.push(this.entry(s))
    return out
  }

  private entry(slot: number): TimerEntry {
    const id = this.slotId[slot] as number
    return { timestamp: this.slotKey[2 * slot] as number, seq: this.slotKey[2 * slot + 1] as number, key: this.idKey[id] as StoreKey, owner: this.idOwner[id] as number }
  }

  /** The id of the LIVE timer (owner, key, timestamp), or -1. */
  private lookup(h: number, owner: number, key: StoreKey, timestamp: number): number {
    const table = this.table
    const mask = table.length - 1
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const id = table[i] as number
      if (id === EMPTY) return -1
      if (this.idState[id] === LIVE && this.idTime[id] === timestamp && this.idKey[id] === key && this.idOwner[id] === owner) return id
    }
  }

  private insertSlot(h: number, id: number): void {
    if ((this.usedSlots + 1) * 2 > this.table.length) this.rebuildIndex()
    const table = this.table
    const mask = table.length - 1
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const other = table[i] as number
      if (other === EMPTY) {
        this.usedSlots++
        table[i] = id
        return
      }
      // The slot of a timer that fired or was deleted can be reused (slots never go back to EMPTY, so
      // probe chains stay intact).
      if (this.idState[other] !== LIVE) {
        table[i] = id
        return
      }
    }
  }

  /** Rebuilds the index from the LIVE timers, sized for them: drops stale slots. */
  private rebuildIndex(): void {
    const live = this.slots - this.dead
    let size = 64
    while (size < (live + 1) * 4) size *= 2
    const table = new Int32Array(size).fill(EMPTY)
    const mask = size - 1
    let used = 0
    for (let slot = 0; slot < this.slots; slot++) {
      const id = this.slotId[slot] as number
      if (this.idState[id] !== LIVE) continue
      let i = hashOf(this.idOwner[id] as number, this.idKey[id] as StoreKey, this.idTime[id] as number) & mask
      while (table[i] !== EMPTY) i = (i + 1) & mask
      table[i] = id
      used++
    }
    this.table = table
    this.usedSlots = used
  }

  private dropDeadHead(): void {
    while (this.slots > 0) {
      const id = this.slotId[0] as number
      if (this.idState[id] !== DEAD) return
      this.dead--
      this.removeSlot(0)
      this.release(id)
    }
  }

  /** Rebuilds the heap without dead slots (Floyd's heapify, O(n)). */
  private compact(): void {
    let n = 0
    for (let s = 0; s < this.slots; s++) {
      const id = this.slotId[s] as number
      if (this.idState[id] === DEAD) {
        this.release(id)
        continue
      }
      this.place(n++, this.slotKey[2 * s] as number, this.slotKey[2 * s + 1] as number, id)
    }
    this.slots = n
    this.dead = 0
    for (let s = ((n - 2) / ARITY) | 0; s >= 0; s--) this.siftDown(s)
  }

  private allocate(): number {
    const reused = this.freeIds.pop()
    if (reused !== undefined) return reused
    const id = this.nextId++
    if (id >= this.idTime.length) this.growIds()
    return id
  }

  private release(id: number): void {
    this.idState[id] = FREE
    this.idKey[id] = undefined
    this.freeIds.push(id)
  }

  private growIds(): void {
    const capacity = Math.ceil(this.idTime.length * GROWTH)
    this.idTime = copyInto(new Float64Array(capacity), this.idTime)
    this.idState = copyInto(new Uint8Array(capacity), this.idState)
    this.idOwner = copyInto(new Int32Array(capacity), this.idOwner)
    for (let i = this.idKey.length; i < capacity; i++) this.idKey.push(undefined)
  }

  private growSlots(): void {
    const capacity = Math.ceil(this.slotId.length * GROWTH)
    this.slotKey = copyInto(new Float64Array(capacity * 2), this.slotKey)
    this.slotId = copyInto(new Int32Array(capacity), this.slotId)
  }

  private place(slot: number, time: number, seq: number, id: number): void {
    const keys = this.slotKey
    keys[2 * slot] = time
    keys[2 * slot + 1] = seq
    this.slotId[slot] = id
  }

  private removeSlot(slot: number): void {
    const last = --this.slots
    if (slot === last) return
    this.place(slot, this.slotKey[2 * last] as number, this.slotKey[2 * last + 1] as number, this.slotId[last] as number)
    this.siftDown(slot)
    this.siftUp(slot)
  }

  private siftUp(start: number): void {
    const keys = this.slotKey
    let slot = start
    const t = keys[2 * slot] as number
    const s = keys[2 * slot + 1] as number
    const id = this.slotId[slot] as number
    while (slot > 0) {
      const parent = ((slot - 1) / ARITY) | 0
      const pt = keys[2 * parent] as number
      const ps = keys[2 * parent + 1] as number
      if (pt < t || (pt === t && ps < s)) break
      this.place(slot, pt, ps, this.slotId[parent] as number)
      slot = parent
    }
    this.place(slot, t, s, id)
  }

  private siftDown(start: number): void {
    const keys = this.slotKey
    const n = this.slots
    let slot = start
    const t = keys[2 * slot] as number
    const s = keys[2 * slot + 1] as number
    const id = this.slotId[slot] as number
    for (;;) {
      const first = slot * ARITY + 1
      if (first >= n) break
      // The smallest of up to four adjacent children (eight adjacent numbers).
      let best = first
      let bt = keys[2 * first] as number
      let bs = keys[2 * first + 1] as number
      const end = Math.min(first + ARITY, n)
      for (let c = first + 1; c < end; c++) {
        const ct = keys[2 * c] as number
        if (ct < bt || (ct === bt && (keys[2 * c + 1] as number) < bs)) {
          best = c
          bt = ct
          bs = keys[2 * c + 1] as number
        }
      }
      if (bt > t || (bt === t && bs >= s)) break
      this.place(slot, bt, bs, this.slotId[best] as number)
      slot = best
    }
    this.place(slot, t, s, id)
  }
}

function copyInto<T extends Float64Array | Int32Array | Uint8Array>(to: T, from: T): T {
  to.set(from)
  return to
}

/** FNV-1a over the owner, the key and the timestamp, mixed so that linear probing spreads well. */
function hashOf(owner: number, key: StoreKey, timestamp: number): number {
  let h = Math.imul(0x811c9dc5 ^ owner, 0x01000193)
  if (typeof key === 'string') {
    for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193)
  } else if (typeof key === 'number' && Number.isInteger(key) && Math.abs(key) <= 0x7fffffff) {
    h = Math.imul(h ^ key, 0x01000193)
  } else {
    const s = typeof key + String(key)
    for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193)
  }
  h = Math.imul(h ^ (timestamp >>> 0), 0x01000193)
  h = Math.imul(h ^ Math.floor(timestamp / 4294967296), 0x01000193)
  // Final avalanche (murmur3 fmix32).
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h >>> 0
}
