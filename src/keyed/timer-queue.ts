import type { StoreKey } from '../processor/api.js'
import { HASH_SEED, fmix32, mixKey, mixWord } from '../util/hash.js'

/** Owners are kept in 16 bits: a task holds at most this many keyed processors, and as many states. */
export const MAX_TIMER_OWNERS = 0x10000

/** Timers a new queue has room for; the arrays grow by half from there. */
const INITIAL_CAPACITY = 64

/** A pending timer's data, as `entries()`, `list()` and `pollDue()` give it. */
export interface TimerEntry {
  readonly timestamp: number
  readonly seq: number
  readonly key: StoreKey
  readonly owner: number
}

/** The hash of a timer's identity, (owner, key, timestamp). */
function timerHash(owner: number, key: StoreKey, timestamp: number): number {
  const h = mixWord(mixKey(mixWord(HASH_SEED, owner), key), timestamp >>> 0)
  return fmix32(mixWord(h, Math.floor(timestamp / 4294967296)))
}

/**
 * A set-semantic priority queue of timers, in the shape of Flink's HeapPriorityQueueSet: a heap that
 * fires timers in (timestamp, registration sequence) order, and a hash set on (owner, key, timestamp)
 * that makes registering a pending timer again a no-op and finds a timer to delete. `owner` is a small
 * non-negative integer: the keyed node (user timers) or the state (TTL timers).
 *
 * A timer is a few typed-array words, not an object: at millions of timers an object and a Map entry
 * each would cost twice the memory, and the collector would trace them all.
 *
 * - Timers by id (an id is reused once its timer leaves the heap): `keys[id]`, and a 24-byte record
 *   (one read for all of it): timestamp and sequence (float64 words 3id and 3id + 1), hash and owner
 *   (int32 words 6id + 4 and 6id + 5). A free id's hash word links it to the next free id.
 * - Heap, 4-ary (the children of slot p are 4p + 1 to 4p + 4): half the levels of a binary heap, and a
 *   node's children side by side. A slot is `slots[2p]`, the timestamp, and `slots[2p + 1]`, the
 *   sequence, with its timer's id in `ids[p]`: a sift reads and moves slots only, never a record.
 * - Hash set: open addressing with linear probing over `table`, (id + 1, hash) per entry (0 for none),
 *   at most three quarters full. A probe compares hashes before it reads a timer; a removal moves the
 *   entries after it back (no tombstones), reading the table only.
 *
 * A delete takes the timer out of the hash set at once and clears its key: its heap slot is dead, and is
 * dropped when it reaches the head or when dead slots outnumber pending timers (then the heap is rebuilt
 * without them). Finding a timer's slot would mean keeping its position up to date on every move.
 *
 * The arrays grow by half when full, and shrink once pending timers fill under a quarter of them: a
 * burst (a backlog's catch-up, a window end for every key) does not keep its memory once it has fired.
 */
export class TimerQueue {
  private capacity = INITIAL_CAPACITY
  private keys: Array<StoreKey | undefined> = []
  private num = new Float64Array(3 * INITIAL_CAPACITY)
  private int = new Int32Array(this.num.buffer)
  /** Ids handed out so far; the free ones are linked from `freeId`. */
  private idLimit = 0
  private freeId = -1
  private slots = new Float64Array(2 * INITIAL_CAPACITY)
  private ids = new Int32Array(INITIAL_CAPACITY)
  /** Heap slots in use, dead ones included. */
  private used = 0
  private dead = 0
  private table = new Int32Array(4 * INITIAL_CAPACITY)
  private mask = 2 * INITIAL_CAPACITY - 1
  private readonly polled = { timestamp: 0, seq: 0, key: '' as StoreKey, owner: 0 }

  /** Pending timers. */
  get size(): number {
    return this.used - this.dead
  }

  /** Timers the arrays have room for now (what the queue's memory is sized by). */
  get capacityNow(): number {
    return this.capacity
  }

  /** The earliest pending timestamp; Infinity when none. */
  peekTime(): number {
    this.dropDeadHead()
    return this.used === 0 ? Infinity : (this.slots[0] as number)
  }

  /** Adds a timer unless (owner, key, timestamp) is pending; returns whether it was added. */
  add(owner: number, key: StoreKey, timestamp: number, seq: number): boolean {
    const h = timerHash(owner, key, timestamp)
    let e = this.find(h, owner, key, timestamp)
    if (e >= 0) return false
    if (this.used === this.capacity) this.grow()
    if (4 * (this.used - this.dead + 1) > 3 * (this.mask + 1)) {
      this.rehash(2 * (this.mask + 1))
      e = this.find(h, owner, key, timestamp)
    }
    const id = this.newId(owner, key, timestamp, seq, h)
    this.table[-2 - 2 * e] = id + 1
    this.table[-1 - 2 * e] = h
    this.siftUp(this.used++, timestamp, seq, id)
    return true
  }

  /** Removes the timer if pending; returns its registration sequence, or -1 when none was pending. */
  remove(owner: number, key: StoreKey, timestamp: number): number {
    const e = this.find(timerHash(owner, key, timestamp), owner, key, timestamp)
    if (e < 0) return -1
    const id = (this.table[2 * e] as number) - 1
    this.unlink(e)
    this.keys[id] = undefined
    const seq = this.num[3 * id + 1] as number
    if (++this.dead > this.used - this.dead) this.compact()
    this.shrinkIfSparse()
    return seq
  }

  /**
   * Removes the head if its timestamp is <= `time` and returns it, or undefined. The returned object is
   * reused by the next call: read it before polling again.
   */
  pollDue(time: number): TimerEntry | undefined {
    this.dropDeadHead()
    if (this.used === 0 || (this.slots[0] as number) > time) return undefined
    const id = this.ids[0] as number
    const polled = this.polled
    polled.timestamp = this.slots[0] as number
    polled.seq = this.slots[1] as number
    polled.key = this.keys[id] as StoreKey
    polled.owner = this.int[6 * id + 5] as number
    this.unlink(this.entryOf(id))
    this.keys[id] = undefined
    this.removeHead()
    this.shrinkIfSparse()
    return polled
  }

  /** Pending timers of one owner and key, in firing order (a scan: for inspection, not the hot path). */
  list(owner: number, key: StoreKey): TimerEntry[] {
    return this.entries((id) => this.keys[id] === key && this.int[6 * id + 5] === owner).sort((a, b) => a.timestamp - b.timestamp || a.seq - b.seq)
  }

  countOwner(owner: number): number {
    let n = 0
    for (let p = 0; p < this.used; p++) {
      const id = this.ids[p] as number
      if (this.keys[id] !== undefined && this.int[6 * id + 5] === owner) n++
    }
    return n
  }

  /** The pending timers (all, or those whose id `wanted` takes), in no particular order. */
  entries(wanted?: (id: number) => boolean): TimerEntry[] {
    const out: TimerEntry[] = []
    for (let p = 0; p < this.used; p++) {
      const id = this.ids[p] as number
      const key = this.keys[id]
      if (key === undefined || (wanted !== undefined && !wanted(id))) continue
      out.push({ timestamp: this.slots[2 * p] as number, seq: this.slots[2 * p + 1] as number, key, owner: this.int[6 * id + 5] as number })
    }
    return out
  }

  // The hash set.

  /** The entry of the pending timer (owner, key, timestamp), or -1 - e where e is the empty entry it would take. */
  private find(h: number, owner: number, key: StoreKey, timestamp: number): number {
    const { table, mask } = this
    for (let e = h & mask; ; e = (e + 1) & mask) {
      const entry = table[2 * e] as number
      if (entry === 0) return -1 - e
      if (table[2 * e + 1] === h) {
        const id = entry - 1
        if (this.int[6 * id + 5] === owner && this.keys[id] === key && this.num[3 * id] === timestamp) return e
      }
    }
  }

  /** The entry of a pending timer. */
  private entryOf(id: number): number {
    const { table, mask } = this
    let e = (this.int[6 * id + 4] as number) & mask
    while (table[2 * e] !== id + 1) e = (e + 1) & mask
    return e
  }

  /**
   * Empties entry `gap`, then moves back each entry after it, up to the next empty one, that may sit
   * where the gap is: one whose home is not between the gap and where it sits.
   */
  private unlink(gap: number): void {
    const { table, mask } = this
    for (let e = (gap + 1) & mask; table[2 * e] !== 0; e = (e + 1) & mask) {
      const h = table[2 * e + 1] as number
      if (((e - (h & mask)) & mask) >= ((e - gap) & mask)) {
        table[2 * gap] = table[2 * e] as number
        table[2 * gap + 1] = h
        gap = e
      }
    }
    table[2 * gap] = 0
  }

  /** Moves every entry into a table of `size` entries. */
  private rehash(size: number): void {
    const old = this.table
    this.table = new Int32Array(2 * size)
    this.mask = size - 1
    for (let e = 0; e < old.length; e += 2) if (old[e] !== 0) this.insert((old[e] as number) - 1, old[e + 1] as number)
  }

  /** Puts timer `id`, of hash `h`, in the first empty entry from its home. */
  private insert(id: number, h: number): void {
    const { table, mask } = this
    let e = h & mask
    while (table[2 * e] !== 0) e = (e + 1) & mask
    table[2 * e] = id + 1
    table[2 * e + 1] = h
  }

  // Timers by id.

  private newId(owner: number, key: StoreKey, timestamp: number, seq: number, h: number): number {
    let id = this.freeId
    if (id >= 0) {
      this.freeId = this.int[6 * id + 4] as number
      this.keys[id] = key
    } else {
      id = this.idLimit++
      // Pushed, not set past the end: an array grown by push stays packed.
      this.keys.push(key)
    }
    this.num[3 * id] = timestamp
    this.num[3 * id + 1] = seq
    this.int[6 * id + 4] = h
    this.int[6 * id + 5] = owner
    return id
  }

  private freeIdOf(id: number): void {
    this.int[6 * id + 4] = this.freeId
    this.freeId = id
  }

  /** Grows the records and the heap by half. */
  private grow(): void {
    const capacity = Math.ceil(this.capacity * 1.5)
    const num = new Float64Array(3 * capacity)
    num.set(this.num)
    this.num = num
    this.int = new Int32Array(num.buffer)
    const slots = new Float64Array(2 * capacity)
    slots.set(this.slots)
    this.slots = slots
    const ids = new Int32Array(capacity)
    ids.set(this.ids)
    this.ids = ids
    this.capacity = capacity
  }

  private shrinkIfSparse(): void {
    if (this.capacity > INITIAL_CAPACITY && 4 * (this.used - this.dead) < this.capacity) this.shrink()
  }

  /**
   * Moves the pending timers into arrays with room for twice as many (at least the initial size), each
   * timer's id becoming its heap slot: the heap keeps its order, and the ids have no gaps.
   */
  private shrink(): void {
    if (this.dead > 0) this.compact()
    const n = this.used
    const capacity = Math.max(INITIAL_CAPACITY, 2 * n)
    const num = new Float64Array(3 * capacity)
    const int = new Int32Array(num.buffer)
    const ids = new Int32Array(capacity)
    const keys: Array<StoreKey | undefined> = []
    for (let p = 0; p < n; p++) {
      const id = this.ids[p] as number
      keys.push(this.keys[id])
      num[3 * p] = this.num[3 * id] as number
      num[3 * p + 1] = this.num[3 * id + 1] as number
      int[6 * p + 4] = this.int[6 * id + 4] as number
      int[6 * p + 5] = this.int[6 * id + 5] as number
      ids[p] = p
    }
    const slots = new Float64Array(2 * capacity)
    slots.set(this.slots.subarray(0, 2 * n))
    this.capacity = capacity
    this.num = num
    this.int = int
    this.ids = ids
    this.keys = keys
    this.slots = slots
    this.idLimit = n
    this.freeId = -1
    // Sized for the new capacity, as for the arrays: not for a rehash a few registrations later.
    let size = 2 * INITIAL_CAPACITY
    while (4 * capacity > 3 * size) size *= 2
    this.table = new Int32Array(2 * size)
    this.mask = size - 1
    for (let id = 0; id < n; id++) this.insert(id, int[6 * id + 4] as number)
  }

  // The heap.

  /** Drops dead slots from the head, freeing their ids. */
  private dropDeadHead(): void {
    while (this.dead > 0 && this.used > 0 && this.keys[this.ids[0] as number] === undefined) {
      this.dead--
      this.removeHead()
    }
  }

  /** Takes the head slot out (its timer's key already cleared) and frees its id. */
  private removeHead(): void {
    this.freeIdOf(this.ids[0] as number)
    const last = --this.used
    if (last > 0) this.siftDown(0, this.slots[2 * last] as number, this.slots[2 * last + 1] as number, this.ids[last] as number)
  }

  /** Rebuilds the heap from its live slots (Floyd's heapify), freeing the dead slots' ids. */
  private compact(): void {
    let to = 0
    for (let p = 0; p < this.used; p++) {
      const id = this.ids[p] as number
      if (this.keys[id] === undefined) {
        this.freeIdOf(id)
        continue
      }
      this.place(to++, this.slots[2 * p] as number, this.slots[2 * p + 1] as number, id)
    }
    this.used = to
    this.dead = 0
    for (let p = (to - 2) >> 2; p >= 0; p--) this.siftDown(p, this.slots[2 * p] as number, this.slots[2 * p + 1] as number, this.ids[p] as number)
  }

  /** Puts a timer in slot `p` (free), moving it up past every later parent. */
  private siftUp(p: number, time: number, seq: number, id: number): void {
    const slots = this.slots
    while (p > 0) {
      const parent = (p - 1) >> 2
      const t = slots[2 * parent] as number
      if (t < time || (t === time && (slots[2 * parent + 1] as number) < seq)) break
      this.move(parent, p)
      p = parent
    }
    this.place(p, time, seq, id)
  }

  /** Puts a timer in slot `p` (free), moving it down past every earlier child. */
  private siftDown(p: number, time: number, seq: number, id: number): void {
    const slots = this.slots
    const end = this.used
    for (;;) {
      const first = 4 * p + 1
      if (first >= end) break
      let best = first
      let bt = slots[2 * first] as number
      const last = Math.min(first + 4, end)
      for (let c = first + 1; c < last; c++) {
        const t = slots[2 * c] as number
        if (t < bt || (t === bt && (slots[2 * c + 1] as number) < (slots[2 * best + 1] as number))) {
          best = c
          bt = t
        }
      }
      if (time < bt || (time === bt && seq < (slots[2 * best + 1] as number))) break
      this.move(best, p)
      p = best
    }
    this.place(p, time, seq, id)
  }

  private move(from: number, to: number): void {
    this.slots[2 * to] = this.slots[2 * from] as number
    this.slots[2 * to + 1] = this.slots[2 * from + 1] as number
    this.ids[to] = this.ids[from] as number
  }

  private place(p: number, time: number, seq: number, id: number): void {
    this.slots[2 * p] = time
    this.slots[2 * p + 1] = seq
    this.ids[p] = id
  }
}
