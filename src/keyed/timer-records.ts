import type { StoreKey } from '../processor/api.js'

const INITIAL_CAPACITY = 64
/** Grows by half: less slack at tens of millions of timers than doubling. */
const GROWTH = 1.5
/** A record is 24 bytes: three float64 words, the last one read as two int32 words. */
const RECORD_BYTES = 24

// A timer's state, in the low two bits of its meta word (the owner is in the rest).
export const FREE = 0
export const LIVE = 1
/** Deleted, but still in a heap slot: its id is reused only once the heap drops the slot. */
export const DEAD = 2
const STATE_MASK = 3

/**
 * The pending timers of a queue by integer id (ids are reused once freed). One 24-byte record per id,
 * so that one cache miss reads all of it: timestamp and full registration sequence (float64 words 3id and
 * 3id+1); owner * 4 + state and the hash of (owner, key, timestamp) (int32 words 6id+4 and 6id+5). Keys
 * are in a plain array beside it.
 */
export class TimerRecords {
  private num: Float64Array
  private int: Int32Array
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
    this.int[6 * id + 4] = owner * 4 + LIVE
    this.int[6 * id + 5] = hash
    this.keys[id] = key
    return id
  }

  /** Marks a LIVE timer deleted (its heap slot is dropped later). */
  kill(id: number): void {
    this.int[6 * id + 4] = (this.int[6 * id + 4] as number) - LIVE + DEAD
  }

  /** Frees the id of a timer that left the heap. */
  release(id: number): void {
    this.int[6 * id + 4] = FREE
    this.keys[id] = undefined
    this.free[this.freeCount++] = id
  }

  /** Reads a timer's meta word and key slot, to bring both into the cache; the result means nothing. */
  touch(id: number): number {
    return (this.int[6 * id + 4] as number) + (this.keys[id] === undefined ? 0 : 1)
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
    return (this.int[6 * id + 4] as number) >>> 2
  }

  state(id: number): number {
    return (this.int[6 * id + 4] as number) & STATE_MASK
  }

  /** Whether the timer is LIVE with this owner (one comparison). */
  isLiveOf(id: number, owner: number): boolean {
    return this.int[6 * id + 4] === owner * 4 + LIVE
  }

  /** Every id ever handed out is below this. */
  idLimit(): number {
    return this.nextId
  }

  hash(id: number): number {
    return this.int[6 * id + 5] as number
  }

  private grow(): void {
    const capacity = Math.ceil(this.keys.length * GROWTH)
    const buffer = new ArrayBuffer(capacity * RECORD_BYTES)
    new Uint8Array(buffer).set(new Uint8Array(this.num.buffer))
    this.num = new Float64Array(buffer)
    this.int = new Int32Array(buffer)
    const free = new Int32Array(capacity)
    free.set(this.free)
    this.free = free
    for (let i = this.keys.length; i < capacity; i++) this.keys.push(undefined)
  }
}
