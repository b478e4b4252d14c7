import type { StoreKey } from '../processor/api.js'

const INITIAL_CAPACITY = 64
/** The first page grows by half (a queue may hold few timers); later pages are full from the start. */
const GROWTH = 1.5
/** Records per page: 16,384 (384 KB of records). */
const PAGE_BITS = 14
const PAGE_SIZE = 1 << PAGE_BITS
const PAGE_MASK = PAGE_SIZE - 1
/** A record is 24 bytes: three float64 words, the last one read as two int32 words. */
const RECORD_BYTES = 24
/** Owners are kept in 16 bits (see `TimerRecords`). */
export const MAX_TIMER_OWNERS = 0x10000

// A timer's state word. An id is free when its key slot is empty; its state word is then meaningless.
export const LIVE = 1
/** Deleted, but still in a heap slot: its id is reused only once the heap drops the slot. */
export const DEAD = 2

/**
 * The pending timers of a queue by integer id (ids are reused once freed). A 24-byte record per id:
 * timestamp and full registration sequence (float64 words 3i and 3i+1), state and the hash of (owner,
 * key, timestamp) (int32 words 6i+4 and 6i+5), where i is the id's place in its page. Beside it, a plain
 * array of keys and a 16-bit array of owners.
 *
 * What firing needs of a timer (its key and owner) is outside the record, and freeing an id writes only
 * its key slot: the fired timers are reached in an order unrelated to their ids, so each record read is a
 * cache miss, and firing reads the much smaller key and owner arrays instead (8 and 2 bytes an id).
 *
 * The arrays are paged (id >>> PAGE_BITS picks the page): growing adds a page and copies nothing. One
 * buffer grown by copying holds the event loop for over 100 ms at a million timers, most of it the
 * first writes to the fresh memory; a page's fresh memory is written a record at a time instead. Only
 * the first page grows by copying, up to a full page, so that a queue of few timers stays small.
 */
export class TimerRecords {
  private readonly num: Float64Array[] = []
  private readonly int: Int32Array[] = []
  private readonly owners: Uint16Array[] = []
  /**
   * A page's keys are pushed as its ids are first handed out (ids are handed out in order): an array
   * grown by push stays packed, and a page costs nothing before its first timer. Never grown by setting
   * length: a long length on a short array turns it into a slow dictionary.
   */
  private readonly keys: Array<Array<StoreKey | undefined>> = [[]]
  /** A stack of ids free for reuse, paged like the records. */
  private readonly free: Int32Array[] = [new Int32Array(INITIAL_CAPACITY)]
  private freeCount = 0
  private nextId = 0
  /** Ids the pages hold. */
  private capacity = INITIAL_CAPACITY

  constructor() {
    const buffer = new ArrayBuffer(INITIAL_CAPACITY * RECORD_BYTES)
    this.num.push(new Float64Array(buffer))
    this.int.push(new Int32Array(buffer))
    this.owners.push(new Uint16Array(INITIAL_CAPACITY))
  }

  /** A new LIVE timer's id. */
  add(owner: number, key: StoreKey, timestamp: number, seq: number, hash: number): number {
    let id: number
    if (this.freeCount > 0) {
      const n = --this.freeCount
      id = (this.free[n >>> PAGE_BITS] as Int32Array)[n & PAGE_MASK] as number
    } else {
      id = this.nextId++
      if (id >= this.capacity) this.grow(id + 1)
    }
    const page = id >>> PAGE_BITS
    const i = id & PAGE_MASK
    const num = this.num[page] as Float64Array
    num[3 * i] = timestamp
    num[3 * i + 1] = seq
    const int = this.int[page] as Int32Array
    int[6 * i + 4] = LIVE
    int[6 * i + 5] = hash
    ;(this.owners[page] as Uint16Array)[i] = owner
    const keys = this.keys[page] as Array<StoreKey | undefined>
    if (i < keys.length) keys[i] = key
    else keys.push(key)
    return id
  }

  /** Sets the hash of a timer added without one (see `TimerQueue`'s unindexed registrations). */
  setHash(id: number, hash: number): void {
    ;(this.int[id >>> PAGE_BITS] as Int32Array)[6 * (id & PAGE_MASK) + 5] = hash
  }

  /** Marks a LIVE timer deleted (its heap slot is dropped later). */
  kill(id: number): void {
    ;(this.int[id >>> PAGE_BITS] as Int32Array)[6 * (id & PAGE_MASK) + 4] = DEAD
  }

  /** Frees the id of a timer that left the heap (its record is not written: see the class comment). */
  release(id: number): void {
    ;(this.keys[id >>> PAGE_BITS] as Array<StoreKey | undefined>)[id & PAGE_MASK] = undefined
    const n = this.freeCount++
    ;(this.free[n >>> PAGE_BITS] as Int32Array)[n & PAGE_MASK] = id
  }

  /** Reads a timer's key slot and owner, to bring both into the cache; the result means nothing. */
  touch(id: number): number {
    const page = id >>> PAGE_BITS
    const i = id & PAGE_MASK
    return ((this.owners[page] as Uint16Array)[i] as number) + ((this.keys[page] as Array<StoreKey | undefined>)[i] === undefined ? 0 : 1)
  }

  timestamp(id: number): number {
    return (this.num[id >>> PAGE_BITS] as Float64Array)[3 * (id & PAGE_MASK)] as number
  }

  seq(id: number): number {
    return (this.num[id >>> PAGE_BITS] as Float64Array)[3 * (id & PAGE_MASK) + 1] as number
  }

  key(id: number): StoreKey {
    return (this.keys[id >>> PAGE_BITS] as Array<StoreKey | undefined>)[id & PAGE_MASK] as StoreKey
  }

  owner(id: number): number {
    return (this.owners[id >>> PAGE_BITS] as Uint16Array)[id & PAGE_MASK] as number
  }

  /** LIVE or DEAD, for an id in a heap slot (for a free id, meaningless). */
  state(id: number): number {
    return (this.int[id >>> PAGE_BITS] as Int32Array)[6 * (id & PAGE_MASK) + 4] as number
  }

  /** Whether the id is in use by a LIVE timer. */
  isLive(id: number): boolean {
    const page = id >>> PAGE_BITS
    const i = id & PAGE_MASK
    return (this.int[page] as Int32Array)[6 * i + 4] === LIVE && (this.keys[page] as Array<StoreKey | undefined>)[i] !== undefined
  }

  /**
   * Whether the timer is LIVE with this owner, for an id in a heap slot; for any id when the caller also
   * compares the key (a free id's key slot is empty, and matches no key).
   */
  isLiveOf(id: number, owner: number): boolean {
    const page = id >>> PAGE_BITS
    const i = id & PAGE_MASK
    return (this.int[page] as Int32Array)[6 * i + 4] === LIVE && (this.owners[page] as Uint16Array)[i] === owner
  }

  /** Whether the id is the LIVE timer (owner, key, timestamp): what an index probe trusts. */
  isTimer(id: number, owner: number, key: StoreKey, timestamp: number): boolean {
    const page = id >>> PAGE_BITS
    const i = id & PAGE_MASK
    return (
      (this.int[page] as Int32Array)[6 * i + 4] === LIVE &&
      (this.owners[page] as Uint16Array)[i] === owner &&
      (this.num[page] as Float64Array)[3 * i] === timestamp &&
      (this.keys[page] as Array<StoreKey | undefined>)[i] === key
    )
  }

  /** Every id ever handed out is below this. */
  idLimit(): number {
    return this.nextId
  }

  hash(id: number): number {
    return (this.int[id >>> PAGE_BITS] as Int32Array)[6 * (id & PAGE_MASK) + 5] as number
  }

  /** Makes room for `count` more timers at once (a restore knows how many come). */
  reserve(count: number): void {
    const needed = this.nextId + count
    if (needed > this.capacity) this.grow(needed)
  }

  /** Makes room for ids below `needed`: the first page grows by half (to a full page at most), then pages are added. */
  private grow(needed: number): void {
    if (this.capacity < PAGE_SIZE) {
      const capacity = Math.min(PAGE_SIZE, Math.max(needed, Math.ceil(this.capacity * GROWTH)))
      const buffer = new ArrayBuffer(capacity * RECORD_BYTES)
      new Uint8Array(buffer).set(new Uint8Array((this.num[0] as Float64Array).buffer))
      this.num[0] = new Float64Array(buffer)
      this.int[0] = new Int32Array(buffer)
      const owners = new Uint16Array(capacity)
      owners.set(this.owners[0] as Uint16Array)
      this.owners[0] = owners
      const free = new Int32Array(capacity)
      free.set(this.free[0] as Int32Array)
      this.free[0] = free
      this.capacity = capacity
    }
    while (this.capacity < needed) {
      const buffer = new ArrayBuffer(PAGE_SIZE * RECORD_BYTES)
      this.num.push(new Float64Array(buffer))
      this.int.push(new Int32Array(buffer))
      this.owners.push(new Uint16Array(PAGE_SIZE))
      this.free.push(new Int32Array(PAGE_SIZE))
      this.keys.push([])
      this.capacity += PAGE_SIZE
    }
  }
}
