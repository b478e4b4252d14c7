import { HASH_SEED, fmix32, mixString } from '../util/hash.js'

const INITIAL_BITS = 10
/** An empty slot's order time. */
const EMPTY = NaN

/**
 * Where the spilled entries of a spilling buffer are: (hash of the key id, order time) pairs, a multiset in
 * an open-addressing table with linear probing (12 bytes a slot, at most three quarters full). An update
 * of a key asks it for the order times of spilled entries whose key hash is the same, then reads only
 * those (almost always zero or one) from disk; a new key, the common case, costs no disk read at all.
 * This replaced an lmdb index database (key id -> order time), whose put, delete and point read per
 * spilled entry were more than half of a spilling buffer's cost.
 *
 * Two keys may share a hash and even an order time: the pairs are then equal, and removing either one
 * is the same. Removal shifts later entries of the probe run back (no tombstones), and the table shrinks
 * when it is mostly empty, so its memory follows the number of spilled entries.
 */
export class SpillIndex {
  private hashes = new Int32Array(1 << INITIAL_BITS)
  private times = new Float64Array(1 << INITIAL_BITS).fill(EMPTY)
  private shift = 32 - INITIAL_BITS
  private count = 0

  get size(): number {
    return this.count
  }

  /** Bytes held by the table. */
  get bytes(): number {
    return this.hashes.byteLength + this.times.byteLength
  }

  add(hash: number, orderTime: number): void {
    if ((this.count + 1) * 4 > this.times.length * 3) this.resize(this.times.length * 2)
    this.place(hash, orderTime)
    this.count++
  }

  /** Removes one (hash, orderTime) pair; returns whether there was one. */
  remove(hash: number, orderTime: number): boolean {
    const mask = this.times.length - 1
    let i = hash >>> this.shift
    for (;;) {
      const t = this.times[i] as number
      if (t !== t) return false
      if (this.hashes[i] === hash && t === orderTime) break
      i = (i + 1) & mask
    }
    this.deleteAt(i)
    this.count--
    if (this.count * 8 < this.times.length && this.times.length > 1 << INITIAL_BITS) this.resize(this.times.length / 2)
    return true
  }

  /**
   * The first slot at or after `from` in the probe run of `hash` holding that hash, or -1. Candidates are
   * `at = first(h, home(h))`, then `first(h, at + 1)`, ...; read each with `orderTimeAt`. Valid until the
   * next change.
   */
  find(hash: number, from: number): number {
    const mask = this.times.length - 1
    for (let i = from & mask; ; i = (i + 1) & mask) {
      const t = this.times[i] as number
      if (t !== t) return -1
      if (this.hashes[i] === hash) return i
    }
  }

  /** Where the probe run of `hash` starts. */
  home(hash: number): number {
    return hash >>> this.shift
  }

  orderTimeAt(slot: number): number {
    return this.times[slot] as number
  }

  clear(): void {
    this.hashes = new Int32Array(1 << INITIAL_BITS)
    this.times = new Float64Array(1 << INITIAL_BITS).fill(EMPTY)
    this.shift = 32 - INITIAL_BITS
    this.count = 0
  }

  private place(hash: number, orderTime: number): void {
    const times = this.times
    const mask = times.length - 1
    let i = hash >>> this.shift
    while (times[i] === times[i]) i = (i + 1) & mask
    this.hashes[i] = hash
    times[i] = orderTime
  }

  /**
   * Empties slot `i` and moves back the entries after it in the run whose home is not in the cyclic range
   * (i, j], so that every entry stays reachable from its home without tombstones.
   */
  private deleteAt(i: number): void {
    const hashes = this.hashes
    const times = this.times
    const mask = times.length - 1
    for (let j = (i + 1) & mask; ; j = (j + 1) & mask) {
      const t = times[j] as number
      if (t !== t) break
      const home = (hashes[j] as number) >>> this.shift
      // Entry j may fill the hole at i unless its home lies cyclically in (i, j].
      const stays = i <= j ? i < home && home <= j : i < home || home <= j
      if (stays) continue
      hashes[i] = hashes[j] as number
      times[i] = t
      i = j
    }
    times[i] = EMPTY
  }

  private resize(capacity: number): void {
    const oldHashes = this.hashes
    const oldTimes = this.times
    this.hashes = new Int32Array(capacity)
    this.times = new Float64Array(capacity).fill(EMPTY)
    this.shift = 32 - Math.log2(capacity)
    for (let i = 0; i < oldTimes.length; i++) {
      const t = oldTimes[i] as number
      if (t === t) this.place(oldHashes[i] as number, t)
    }
  }
}

/** A hash of the UTF-16 code units of a key id, finalized so that the top bits spread well. */
export function keyIdHash(keyId: string): number {
  return fmix32(mixString(HASH_SEED, keyId))
}
