import type { StoreKey } from '../processor/api.js'

const INITIAL_CAPACITY = 64
/** Grows by half: less slack at tens of millions of timers than doubling. */
const GROWTH = 1.5
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
 * timestamp and full registration sequence (float64 words 3id and 3id+1), state and the hash of (owner,
 * key, timestamp) (int32 words 6id+4 and 6id+5). Beside it, a plain array of keys and a 16-bit array of
 * owners.
 *
 * What firing needs of a timer (its key and owner) is outside the record, and freeing an id writes only
 * its key slot: the fired timers are reached in an order unrelated to their ids, so each record read is a
 * cache miss, and firing reads the much smaller key and owner arrays instead (8 and 2 bytes an id).
 */
export class TimerRecords {
  private num: Float64Array
  private int: Int32Array
  private owners: Uint16Array
  // Grown by push, never by setting length: a long length on a short array turns it into a slow dictionary.
  private readonly keys: Array<StoreKey | undefined> = Array.from({ length: INITIAL_CAPACITY }, () => undefined)
  /** A stack of ids free for reuse. */
  private free = new Int32Array(INITIAL_CAPACITY)
  private freeCount = 0
  private nextId = 0

  constructor() {
    const buffer = new ArrayBuffer(INITIAL_CAPACITY * RECORD_BYTES)
    this.num = new Float64Array(buffer)
    this.int = new Int32Array(buffer)
    this.owners = new Uint16Array(INITIAL_CAPACITY)
  }

  /** A new LIVE timer's id. */
  add(owner: number, key: StoreKey, timestamp: number, seq: number, hash: number): number {
    let id: number
    if (this.freeCount > 0) id = this.free[--this.freeCount] as number
    else {
      id = this.nextId++
      if (id >= this.keys.length) this.grow()
    }
    this.num[3 * id] = timestamp
    this.num[3 * id + 1] = seq
    this.int[6 * id + 4] = LIVE
    this.int[6 * id + 5] = hash
    this.owners[id] = owner
    this.keys[id] = key
    return id
  }

  /** Sets the hash of a timer added without one (see `TimerQueue`'s unindexed registrations). */
  setHash(id: number, hash: number): void {
    this.int[6 * id + 5] = hash
  }

  /** Marks a LIVE timer deleted (its heap slot is dropped later). */
  kill(id: number): void {
    this.int[6 * id + 4] = DEAD
  }

  /** Frees the id of a timer that left the heap (its record is not written: see the class comment). */
  release(id: number): void {
    this.keys[id] = undefined
    this.free[this.freeCount++] = id
  }

  /** Reads a timer's key slot and owner, to bring both into the cache; the result means nothing. */
  touch(id: number): number {
    return (this.owners[id] as number) + (this.keys[id] === undefined ? 0 : 1)
  }

  timestamp(id: number): number {
    return this.num[3 * id] as number
  }

  seq(id: number): number {
    return this.num[3 * id + 1] as number
  }

  key(id: number): StoreKey {
    return this.keys[id] as StoreKey
  }

  owner(id: number): number {
    return this.owners[id] as number
  }

  /** LIVE or DEAD, for an id in a heap slot (for a free id, meaningless). */
  state(id: number): number {
    return this.int[6 * id + 4] as number
  }

  /** Whether the id is in use by a LIVE timer. */
  isLive(id: number): boolean {
    return this.int[6 * id + 4] === LIVE && this.keys[id] !== undefined
  }

  /**
   * Whether the timer is LIVE with this owner, for an id in a heap slot; for any id when the caller also
   * compares the key (a free id's key slot is empty, and matches no key).
   */
  isLiveOf(id: number, owner: number): boolean {
    return this.int[6 * id + 4] === LIVE && this.owners[id] === owner
  }

  /** Every id ever handed out is below this. */
  idLimit(): number {
    return this.nextId
  }

  hash(id: number): number {
    return this.int[6 * id + 5] as number
  }

  /** Makes room for `count` more timers at once (a restore knows how many come). */
  reserve(count: number): void {
    const needed = this.nextId + count
    if (needed > this.keys.length) this.grow(needed)
  }

  private grow(atLeast = 0): void {
    const capacity = Math.max(atLeast, Math.ceil(this.keys.length * GROWTH))
    const buffer = new ArrayBuffer(capacity * RECORD_BYTES)
    new Uint8Array(buffer).set(new Uint8Array(this.num.buffer))
    this.num = new Float64Array(buffer)
    this.int = new Int32Array(buffer)
    const owners = new Uint16Array(capacity)
    owners.set(this.owners)
    this.owners = owners
    const free = new Int32Array(capacity)
    free.set(this.free)
    this.free = free
    for (let i = this.keys.length; i < capacity; i++) this.keys.push(undefined)
  }
}
