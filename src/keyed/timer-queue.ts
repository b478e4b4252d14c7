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

/**
 * A set-semantic priority queue of timers (Flink's HeapPriorityQueueSet), laid out for the cache.
 *
 * - Heap: 4-ary, its slots hold (timestamp, registration order, id) in typed arrays, so sifting compares
 *   neighbouring numbers instead of chasing object pointers, and no per-timer position is written.
 * - Ids: each timer has an integer id (reused once it leaves the heap) with its key, owner and state.
 * - Index: by owner, then key: a flat array of (id, timestamp) pairs of that key's timers, for
 *   deduplication, deletion and listing. Timestamps sit beside the ids so a duplicate check reads one
 *   small array instead of each timer's fields at random addresses.
 *
 * Both removals are lazy, each where it is cheapest. A deleted timer leaves the index at once (so it is
 * gone for every query and may be registered again) and is marked DEAD; the heap drops it when it
 * reaches the top, or in a compaction when dead slots outnumber live ones. A fired timer leaves the heap
 * at once, but its index entry is only found stale (the id no longer LIVE for that key) the next time
 * the key is touched, or in a sweep once stale entries could outnumber live timers: so firing costs no
 * hash-map operation. `owner` is a small integer: the keyed node (user timers) or the state (TTL timers).
 */
export class TimerQueue {
  /** Heap slots in use, DEAD ones included. */
  private slots = 0
  private dead = 0
  /** Timers fired since the last sweep: an upper bound on stale index entries. */
  private stale = 0
  /**
   * Keys whose pair list is empty but still in the index. Deleting and re-adding hash-map entries for
   * keys that come back is what made registration slow; a sweep removes them once they are many.
   */
  private emptyKeys = 0
  private slotTime = new Float64Array(INITIAL_CAPACITY)
  private slotSeq = new Float64Array(INITIAL_CAPACITY)
  private slotId = new Int32Array(INITIAL_CAPACITY)
  private idTime = new Float64Array(INITIAL_CAPACITY)
  private idState = new Uint8Array(INITIAL_CAPACITY)
  private idOwner = new Int32Array(INITIAL_CAPACITY)
  // Grown by push, never by setting length: a long length on a short array turns it into a slow dictionary.
  private readonly idKey: Array<StoreKey | undefined> = Array.from({ length: INITIAL_CAPACITY }, () => undefined)
  private readonly freeIds: number[] = []
  private nextId = 0
  private readonly index: Array<Map<StoreKey, number[]>> = []
  private readonly polled = { timestamp: 0, seq: 0, key: '' as StoreKey, owner: 0 }

  /** Pending timers. */
  get size(): number {
    return this.slots - this.dead
  }

  /** Earliest pending timestamp, or Infinity. */
  peekTime(): number {
    this.dropDeadHead()
    return this.slots === 0 ? Infinity : (this.slotTime[0] as number)
  }

  /** Adds a timer unless (owner, key, timestamp) is already pending; returns whether it was added. */
  add(owner: number, key: StoreKey, timestamp: number, seq: number): boolean {
    const byKey = this.ownerIndex(owner)
    const pairs = byKey.get(key)
    if (pairs !== undefined && this.takePair(pairs, owner, key, timestamp, false) >= 0) return false
    const id = this.allocate()
    this.idTime[id] = timestamp
    this.idOwner[id] = owner
    this.idKey[id] = key
    this.idState[id] = LIVE
    if (pairs === undefined) byKey.set(key, [id, timestamp])
    else {
      if (pairs.length === 0) this.emptyKeys--
      pairs.push(id, timestamp)
      // Entries of fired timers linger until the key is touched: prune them as the list doubles
      // (at 16, 32, 64, ... numbers), so pruning stays amortized O(1) per registration.
      if (pairs.length >= 16 && (pairs.length & (pairs.length - 1)) === 0) this.prune(pairs, owner, key)
    }
    if (this.slots === this.slotTime.length) this.growSlots()
    const slot = this.slots++
    this.place(slot, timestamp, seq, id)
    this.siftUp(slot)
    return true
  }

  /** Removes the timer if pending; returns whether it was. */
  remove(owner: number, key: StoreKey, timestamp: number): boolean {
    const byKey = this.index[owner]
    const pairs = byKey?.get(key)
    if (byKey === undefined || pairs === undefined) return false
    const wasEmpty = pairs.length === 0
    const id = this.takePair(pairs, owner, key, timestamp, true)
    if (pairs.length === 0 && !wasEmpty) this.emptied()
    if (id < 0) return false
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
    if (this.slots === 0 || (this.slotTime[0] as number) > time) return undefined
    const id = this.slotId[0] as number
    const polled = this.polled
    polled.timestamp = this.slotTime[0] as number
    polled.seq = this.slotSeq[0] as number
    polled.key = this.idKey[id] as StoreKey
    polled.owner = this.idOwner[id] as number
    this.removeSlot(0)
    this.release(id)
    if (++this.stale > 1024 && this.stale > this.slots) this.sweep()
    return polled
  }

  /** Pending timers of one owner and key, in firing order. */
  list(owner: number, key: StoreKey): TimerEntry[] {
    const byKey = this.index[owner]
    const pairs = byKey?.get(key)
    if (byKey === undefined || pairs === undefined) return []
    this.prune(pairs, owner, key)
    const live = new Set<number>()
    for (let i = 0; i < pairs.length; i += 2) live.add(pairs[i] as number)
    const out: TimerEntry[] = []
    for (let s = 0; s < this.slots; s++) if (live.has(this.slotId[s] as number)) out.push(this.entry(s))
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
    return { timestamp: this.slotTime[slot] as number, seq: this.slotSeq[slot] as number, key: this.idKey[id] as StoreKey, owner: this.idOwner[id] as number }
  }

  /** Whether an index pair still names a pending timer (its id may have fired and been reused). */
  private isValid(id: number, timestamp: number, owner: number, key: StoreKey): boolean {
    return this.idState[id] === LIVE && this.idTime[id] === timestamp && this.idKey[id] === key && this.idOwner[id] === owner
  }

  /**
   * Finds the pending timer at `timestamp` among a key's pairs, dropping stale pairs at that timestamp
   * on the way; with `take`, also drops the found pair. Returns its id, or -1.
   */
  private takePair(pairs: number[], owner: number, key: StoreKey, timestamp: number, take: boolean): number {
    for (let i = 0; i < pairs.length; i += 2) {
      if (pairs[i + 1] !== timestamp) continue
      const id = pairs[i] as number
      const valid = this.isValid(id, timestamp, owner, key)
      if (valid && !take) return id
      removePair(pairs, i)
      if (valid) return id
      i -= 2
    }
    return -1
  }

  /** Drops pairs of timers that fired. */
  private prune(pairs: number[], owner: number, key: StoreKey): void {
    if (pairs.length === 0) return
    for (let i = 0; i < pairs.length; i += 2) {
      if (this.isValid(pairs[i] as number, pairs[i + 1] as number, owner, key)) continue
      removePair(pairs, i)
      i -= 2
    }
    if (pairs.length === 0) this.emptied()
  }

  private emptied(): void {
    if (++this.emptyKeys > 1024 && this.emptyKeys > this.size) this.sweep()
  }

  private ownerIndex(owner: number): Map<StoreKey, number[]> {
    let m = this.index[owner]
    if (m === undefined) this.index[owner] = m = new Map()
    return m
  }

  /** Drops index entries of fired timers and keys without timers, so keys that never come back do not accumulate. */
  private sweep(): void {
    this.index.forEach((byKey, owner) => {
      for (const [key, pairs] of byKey) {
        for (let i = 0; i < pairs.length; i += 2) {
          if (this.isValid(pairs[i] as number, pairs[i + 1] as number, owner, key)) continue
          removePair(pairs, i)
          i -= 2
        }
        if (pairs.length === 0) byKey.delete(key)
      }
    })
    this.stale = 0
    this.emptyKeys = 0
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
      this.place(n++, this.slotTime[s] as number, this.slotSeq[s] as number, id)
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
    const capacity = Math.ceil(this.slotTime.length * GROWTH)
    this.slotTime = copyInto(new Float64Array(capacity), this.slotTime)
    this.slotSeq = copyInto(new Float64Array(capacity), this.slotSeq)
    this.slotId = copyInto(new Int32Array(capacity), this.slotId)
  }

  private place(slot: number, time: number, seq: number, id: number): void {
    this.slotTime[slot] = time
    this.slotSeq[slot] = seq
    this.slotId[slot] = id
  }

  private removeSlot(slot: number): void {
    const last = --this.slots
    if (slot === last) return
    this.place(slot, this.slotTime[last] as number, this.slotSeq[last] as number, this.slotId[last] as number)
    this.siftDown(slot)
    this.siftUp(slot)
  }

  private siftUp(start: number): void {
    const times = this.slotTime
    const seqs = this.slotSeq
    let slot = start
    const t = times[slot] as number
    const s = seqs[slot] as number
    const id = this.slotId[slot] as number
    while (slot > 0) {
      const parent = ((slot - 1) / ARITY) | 0
      const pt = times[parent] as number
      if (pt < t || (pt === t && (seqs[parent] as number) < s)) break
      this.place(slot, pt, seqs[parent] as number, this.slotId[parent] as number)
      slot = parent
    }
    this.place(slot, t, s, id)
  }

  private siftDown(start: number): void {
    const times = this.slotTime
    const seqs = this.slotSeq
    const n = this.slots
    let slot = start
    const t = times[slot] as number
    const s = seqs[slot] as number
    const id = this.slotId[slot] as number
    for (;;) {
      const first = slot * ARITY + 1
      if (first >= n) break
      // The smallest of up to four adjacent children.
      let best = first
      let bt = times[first] as number
      let bs = seqs[first] as number
      const end = Math.min(first + ARITY, n)
      for (let c = first + 1; c < end; c++) {
        const ct = times[c] as number
        if (ct < bt || (ct === bt && (seqs[c] as number) < bs)) {
          best = c
          bt = ct
          bs = seqs[c] as number
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

/** Swap-removes the pair at index i (order inside a key's pairs does not matter). */
function removePair(pairs: number[], i: number): void {
  const timestamp = pairs.pop() as number
  const id = pairs.pop() as number
  if (i < pairs.length) {
    pairs[i] = id
    pairs[i + 1] = timestamp
  }
}
