import { radixSortable, sortSlots } from './slot-sort.js'

const ARITY = 4
const INITIAL_CAPACITY = 64
/** Grows by half: less slack at tens of millions of timers than doubling. */
const GROWTH = 1.5
/** A slot: timestamp (float64), order (uint32), id (uint32); four slots to a cache line. */
export const SLOT_BYTES = 16

/**
 * The 4-ary min-heap of a timer queue, on (timestamp, order), over 16-byte slots in one buffer: a slot's
 * four children are 64 adjacent bytes, so a sift touches about one cache line per level. Words 4s+2 and
 * 4s+3 of `word` are slot s's order and id; `time[2s]` is its timestamp.
 *
 * Slots are appended (`append`) and heaped only when the head is read (`ensureHeap`): registrations cost
 * a write each, and a heap that an advance makes wholly due is sorted (`drainSorted`) without ever having
 * been heaped. The heap knows nothing of what ids mean; the queue decides which are dead.
 */
export class SlotHeap {
  /** Slots in use, heaped or appended. */
  size = 0
  /**
   * Slots [0, heapified) form the heap; the ones after it were appended and wait for `ensureHeap`. While
   * heapified is 0 every slot was appended since the heap was last empty, so the slots are in the order
   * they were appended in.
   */
  private heapified = 0
  /** The earliest timestamp among the appended slots (Infinity when there are none). */
  private appendedMin = Infinity
  /** At least the largest timestamp in the heap (NaN: the heap is not to be sorted into a run). */
  private maxTime = -Infinity
  time: Float64Array
  /** The same buffer as `time`. */
  word: Uint32Array

  constructor() {
    const buffer = new ArrayBuffer(INITIAL_CAPACITY * SLOT_BYTES)
    this.time = new Float64Array(buffer)
    this.word = new Uint32Array(buffer)
  }

  /** Adds a slot without heaping it. */
  append(timestamp: number, order: number, id: number): void {
    if (this.size === this.time.length / 2) this.grow()
    if (!(timestamp <= this.maxTime)) this.maxTime = this.maxTime !== this.maxTime ? NaN : timestamp
    const slot = this.size++
    this.time[2 * slot] = timestamp
    this.word[4 * slot + 2] = order
    this.word[4 * slot + 3] = id
    if (timestamp < this.appendedMin) this.appendedMin = timestamp
  }

  /** The earliest timestamp, heaped or appended, without heaping (Infinity when empty). */
  earliest(): number {
    const head = this.heapified === 0 ? Infinity : (this.time[0] as number)
    return head < this.appendedMin ? head : this.appendedMin
  }

  /** Whether every slot's timestamp is at most `time` (false if it cannot tell). */
  allDueBy(time: number): boolean {
    return this.maxTime <= time
  }

  /** Heaps the appended slots: one by one if they are few, else the whole array at once (Floyd, O(n)). */
  ensureHeap(): void {
    const from = this.heapified
    const n = this.size
    if (from === n) return
    if (n - from > from) this.heapify()
    else {
      const time = this.time
      const word = this.word
      for (let s = from; s < n; s++) this.siftUp(s, time[2 * s] as number, word[4 * s + 2] as number, word[4 * s + 3] as number)
    }
    this.heapified = n
    this.appendedMin = Infinity
  }

  /** Removes slot 0 (after `ensureHeap`): the last slot takes its place and sinks. */
  removeHead(): void {
    const last = --this.size
    this.heapified = last
    if (last === 0) {
      this.maxTime = -Infinity
      return
    }
    const word = this.word
    this.siftDown(0, this.time[2 * last] as number, word[4 * last + 2] as number, word[4 * last + 3] as number)
  }

  /**
   * Empties the heap into a new buffer of its slots sorted by (timestamp, order), for the queue's run;
   * the buffer holds as many slots as `size` gave before the call (it may be larger). Undefined, with the
   * heap unchanged, if a timestamp is not one the radix sort takes (then it is not tried again until the
   * heap has been empty).
   */
  drainSorted(): ArrayBuffer | undefined {
    const n = this.size
    if (!radixSortable(this.time, n)) {
      this.maxTime = NaN
      return undefined
    }
    // All appended since the heap was empty: in order already, so timestamps decide.
    const sorted = sortSlots(this.time.buffer as ArrayBuffer, new ArrayBuffer(n * SLOT_BYTES), n, this.heapified === 0)
    const buffer = new ArrayBuffer(INITIAL_CAPACITY * SLOT_BYTES)
    this.time = new Float64Array(buffer)
    this.word = new Uint32Array(buffer)
    this.size = this.heapified = 0
    this.appendedMin = Infinity
    this.maxTime = -Infinity
    return sorted
  }

  /** Drops the slots whose id `drop` says so of (in one pass, in order), then heaps what is left (O(n)). */
  compact(drop: (id: number) => boolean): void {
    this.size = keepSlots(this.time, this.word, 0, this.size, 0, drop)
    this.heapify()
    this.heapified = this.size
    this.appendedMin = Infinity
  }

  /** Adds a slot and heaps it at once (the heap must be heaped: `ensureHeap`). */
  push(timestamp: number, order: number, id: number): void {
    if (this.size === this.time.length / 2) this.grow()
    if (!(timestamp <= this.maxTime)) this.maxTime = this.maxTime !== this.maxTime ? NaN : timestamp
    this.siftUp(this.size++, timestamp, order, id)
    this.heapified = this.size
  }

  /**
   * Gives the slots orders 0..n-1 in the order they already have (timestamp, then order) and returns n,
   * so that orders can keep growing: every comparison comes out as before, and the heap stays a heap.
   */
  renumber(): number {
    this.ensureHeap()
    const time = this.time
    const word = this.word
    const slots = Array.from({ length: this.size }, (_, s) => s)
    slots.sort((a, b) => (time[2 * a] as number) - (time[2 * b] as number) || (word[4 * a + 2] as number) - (word[4 * b + 2] as number))
    for (let rank = 0; rank < slots.length; rank++) word[4 * (slots[rank] as number) + 2] = rank
    return slots.length
  }

  private heapify(): void {
    const time = this.time
    const word = this.word
    for (let s = ((this.size - 2) / ARITY) | 0; s >= 0; s--) this.siftDown(s, time[2 * s] as number, word[4 * s + 2] as number, word[4 * s + 3] as number)
  }

  /** Makes room for `count` more slots at once (a restore knows how many come). */
  reserve(count: number): void {
    const needed = this.size + count
    if (needed > this.time.length / 2) this.grow(needed)
  }

  private grow(atLeast = 0): void {
    const capacity = Math.max(atLeast, Math.ceil((this.time.length / 2) * GROWTH))
    const buffer = new ArrayBuffer(capacity * SLOT_BYTES)
    new Uint8Array(buffer).set(new Uint8Array(this.time.buffer))
    this.time = new Float64Array(buffer)
    this.word = new Uint32Array(buffer)
  }

  /** Puts (time, order, id) at `start` or above it, moving larger parents down. */
  private siftUp(start: number, t: number, o: number, id: number): void {
    const time = this.time
    const word = this.word
    let slot = start
    while (slot > 0) {
      const parent = ((slot - 1) / ARITY) | 0
      const pt = time[2 * parent] as number
      if (pt < t || (pt === t && (word[4 * parent + 2] as number) < o)) break
      time[2 * slot] = pt
      word[4 * slot + 2] = word[4 * parent + 2] as number
      word[4 * slot + 3] = word[4 * parent + 3] as number
      slot = parent
    }
    time[2 * slot] = t
    word[4 * slot + 2] = o
    word[4 * slot + 3] = id
  }

  /** Puts (time, order, id) at `start` or below it, moving smaller children up. */
  private siftDown(start: number, t: number, o: number, id: number): void {
    const time = this.time
    const word = this.word
    const n = this.size
    let slot = start
    for (;;) {
      const first = slot * ARITY + 1
      if (first >= n) break
      // The smallest of up to four adjacent children.
      let best = first
      let bt = time[2 * first] as number
      const end = first + ARITY < n ? first + ARITY : n
      for (let c = first + 1; c < end; c++) {
        const ct = time[2 * c] as number
        if (ct < bt || (ct === bt && (word[4 * c + 2] as number) < (word[4 * best + 2] as number))) {
          best = c
          bt = ct
        }
      }
      if (bt > t || (bt === t && (word[4 * best + 2] as number) >= o)) break
      time[2 * slot] = bt
      word[4 * slot + 2] = word[4 * best + 2] as number
      word[4 * slot + 3] = word[4 * best + 3] as number
      slot = best
    }
    time[2 * slot] = t
    word[4 * slot + 2] = o
    word[4 * slot + 3] = id
  }
}

/**
 * Moves the slots in [from, end) whose id `drop` does not say so of down to `to` onwards, in order;
 * returns where they end. For the heap's compaction and the run's.
 */
export function keepSlots(time: Float64Array, word: Uint32Array, from: number, end: number, to: number, drop: (id: number) => boolean): number {
  let n = to
  for (let s = from; s < end; s++) {
    const id = word[4 * s + 3] as number
    if (drop(id)) continue
    time[2 * n] = time[2 * s] as number
    word[4 * n + 2] = word[4 * s + 2] as number
    word[4 * n + 3] = id
    n++
  }
  return n
}
