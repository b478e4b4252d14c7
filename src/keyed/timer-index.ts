import type { StoreKey } from '../processor/api.js'
import { HASH_SEED, fmix32, mixKey, mixStrings2, mixWord } from '../util/hash.js'
import type { TimerRecords } from './timer-records.js'

/** An entry never used since the last rebuild. Entries hold id + 1, so that a new table needs no fill. */
const EMPTY = 0
const INITIAL_BITS = 6
/**
 * A rebuild into a table of at least 2^16 entries (512 KB) is done a step at a time. Done at once, the
 * first writes to the fresh table's memory hold the event loop for 50-90 ms at a million timers.
 */
const STEPWISE_BITS = 16
/** At least this many entries (or ids) of a stepwise rebuild move per entry made room for. */
const MIN_STEP = 8

/**
 * The deduplication and deletion index of a timer queue: an open-addressing hash table of (id, hash)
 * pairs with linear probing, on (owner, key, timestamp). A probe compares the stored hash before it looks
 * at a record, so a lookup usually reads one cache line of the table. An entry is trusted only if its
 * record is LIVE with exactly that owner, key and timestamp, so entries of timers that fired or were
 * deleted need no cleanup: they are skipped, and dropped when the table is rebuilt. No JavaScript Map is
 * touched, and firing does not touch the index at all.
 *
 * An entry's home is the top bits of its hash (hash >>> shift), not the bottom ones: doubling the table
 * then sends home i to 2i or 2i+1, so a rebuild reads the old table and writes the new one in order,
 * instead of scattering every entry to a random place (a cache miss each, at a million timers).
 *
 * A large rebuild is stepwise: the new table takes every new entry at once, and each later `reserve`
 * moves a few more of the old table's entries (or LIVE records') into it. Until the last has moved, a
 * probe that misses in the new table looks in the old one too. Moving an entry twice (a timer
 * registered while its id was still ahead of the move) leaves two entries for one timer: both are
 * trusted alike, and the next rebuild keeps one per timer or both, which is harmless.
 */
export class TimerIndex {
  private table = new Int32Array(2 << INITIAL_BITS)
  private shift = 32 - INITIAL_BITS
  /** Entries of `table` that are not EMPTY (valid or stale). */
  private used = 0
  /** While a stepwise rebuild is under way, the table it empties; else undefined. */
  private old: Int32Array | undefined
  private oldShift = 0
  /** Whether the rebuild reads LIVE records (in id order) rather than the old table's entries. */
  private fromRecords = false
  /** The next old entry (or id) to move, and where the moving ends. */
  private cursor = 0
  private end = 0
  /** Entries (or ids) moved per entry made room for. */
  private step = MIN_STEP

  constructor(private readonly records: TimerRecords) {}

  /** Forgets every entry, and lets go of a large table (a small one is kept: a queue may empty often). */
  clear(): void {
    if (this.shift === 32 - INITIAL_BITS) this.table.fill(EMPTY)
    else this.table = new Int32Array(2 << INITIAL_BITS)
    this.shift = 32 - INITIAL_BITS
    this.used = 0
    this.old = undefined
  }

  /** The id of the LIVE timer (owner, key, timestamp) with hash `h`, or -1. */
  find(h: number, owner: number, key: StoreKey, timestamp: number): number {
    const found = this.probe(h, owner, key, timestamp)
    return found >= 0 ? found : -1
  }

  /**
   * One probe for a registration: the id of the LIVE timer (owner, key, timestamp) if there is one,
   * else -1 - e, where entry e is where its entry goes (`fill`). Makes room first, so that the entry
   * found stays valid; `live` is how many timers are pending.
   */
  findOrReserve(h: number, owner: number, key: StoreKey, timestamp: number, live: number): number {
    this.reserve(1, live)
    return this.probe(h, owner, key, timestamp)
  }

  /** Makes room for `count` more entries (rebuilding now rather than in the middle of a batch). */
  reserve(count: number, live: number): void {
    if (this.old !== undefined) this.move(count * this.step)
    // At most three quarters full: entries are pairs, so a probe run stays within a line or two.
    if ((this.used + count) * 4 > (this.table.length >>> 1) * 3) {
      if (this.old !== undefined) this.move(Infinity)
      this.rebuild(live, count)
    }
  }

  /**
   * Makes an empty index ready for `count` entries at once (a bulk load): as large as growing entry by
   * entry would have made it, at most three quarters full, where `reserve` leaves room to grow.
   */
  presize(count: number): void {
    if (this.old !== undefined) this.move(Infinity)
    if (this.used !== 0) {
      this.reserve(count, this.used)
      return
    }
    let bits = INITIAL_BITS
    while ((1 << bits) * 3 < count * 4) bits++
    if (bits === 32 - this.shift) return
    this.table = new Int32Array(2 << bits)
    this.shift = 32 - bits
  }

  /** Reads the home entry of hash `h`, to bring its line into the cache; the result means nothing. */
  touch(h: number): number {
    return this.table[2 * (h >>> this.shift)] as number
  }

  /** The id of the LIVE timer (owner, key, timestamp), or -1 - e for the empty entry e that ended the probe. */
  private probe(h: number, owner: number, key: StoreKey, timestamp: number): number {
    const found = this.probeTable(this.table, this.shift, h, owner, key, timestamp)
    if (found >= 0 || this.old === undefined) return found
    const moving = this.probeTable(this.old, this.oldShift, h, owner, key, timestamp)
    return moving >= 0 ? moving : found
  }

  private probeTable(table: Int32Array, shift: number, h: number, owner: number, key: StoreKey, timestamp: number): number {
    const records = this.records
    const mask = (table.length >>> 1) - 1
    for (let i = h >>> shift; ; i = (i + 1) & mask) {
      const entry = table[2 * i] as number
      if (entry === EMPTY) return -1 - i
      if (table[2 * i + 1] === h && records.isTimer(entry - 1, owner, key, timestamp)) return entry - 1
    }
  }

  /** Puts a new timer's entry where `findOrReserve` said (-1 - its result), with no change in between. */
  fill(reserved: number, h: number, id: number): void {
    const e = -1 - reserved
    this.table[2 * e] = id + 1
    this.table[2 * e + 1] = h
    this.used++
  }

  /**
   * Moves the entries into a table at most half full for the `live` timers and `count` more, dropping
   * stale ones. No key is hashed again: the hashes are stored.
   * - While no timer has left the queue since the last rebuild, every entry is valid: the old table is
   *   read in order and, homes being the top bits, the new one is written in order too.
   * - Otherwise the LIVE records are read in id order instead. Checking each old entry against its record
   *   would read the records at random, one cache miss per entry, and under a steady flow of firing
   *   timers most entries are stale.
   * A large table is filled stepwise (see the class comment).
   */
  private rebuild(live: number, count: number): void {
    let bits = INITIAL_BITS
    while (1 << bits < (live + count) * 2) bits++
    this.old = this.table
    this.oldShift = this.shift
    this.fromRecords = this.used !== live
    this.cursor = 0
    this.end = this.fromRecords ? this.records.idLimit() : this.old.length >>> 1
    this.table = new Int32Array(2 << bits)
    this.shift = 32 - bits
    this.used = 0
    if (bits < STEPWISE_BITS) this.move(Infinity)
    // Done before the new table has taken a quarter of the pending timers' number again, so it is at
    // most three quarters full then: ahead of the next rebuild.
    else this.step = Math.max(MIN_STEP, Math.ceil((4 * this.end) / Math.max(live + count, 1)))
  }

  /** Moves up to `units` more entries (or ids) of a rebuild into the new table; ends the rebuild after the last. */
  private move(units: number): void {
    const old = this.old as Int32Array
    const table = this.table
    const shift = this.shift
    const stop = Math.min(this.end, this.cursor + units)
    let c = this.cursor
    let moved = 0
    if (this.fromRecords) {
      const records = this.records
      for (; c < stop; c++) {
        if (!records.isLive(c)) continue
        place(table, records.hash(c), c + 1, shift)
        moved++
      }
    } else {
      for (; c < stop; c++) {
        const entry = old[2 * c] as number
        if (entry === EMPTY) continue
        place(table, old[2 * c + 1] as number, entry, shift)
        moved++
      }
    }
    this.used += moved
    this.cursor = c
    if (c === this.end) this.old = undefined
  }
}

/** Puts an entry (id + 1, hash) at the first empty place from its home. */
function place(table: Int32Array, h: number, entry: number, shift: number): void {
  const mask = (table.length >>> 1) - 1
  let i = h >>> shift
  while (table[2 * i] !== EMPTY) i = (i + 1) & mask
  table[2 * i] = entry
  table[2 * i + 1] = h
}

/** A hash of the owner, the key and the timestamp, finalized so that every bit of the result spreads well. */
export function timerHash(owner: number, key: StoreKey, timestamp: number): number {
  return finishTimerHash(mixKey(mixWord(HASH_SEED, owner), key), timestamp)
}

function finishTimerHash(h: number, timestamp: number): number {
  h = mixWord(h, timestamp >>> 0)
  h = mixWord(h, Math.floor(timestamp / 4294967296))
  return fmix32(h)
}

const pair = new Int32Array(2)

/**
 * `timerHash` of the first `n` registrations of a batch into `out`, two string keys at a time (their
 * multiply chains run side by side): exactly what `timerHash` gives for each.
 */
export function timerHashes(owner: Int32Array, keys: ReadonlyArray<StoreKey | undefined>, time: Float64Array, n: number, out: Int32Array): void {
  let i = 0
  for (; i + 1 < n; i += 2) {
    const a = keys[i]
    const b = keys[i + 1]
    if (typeof a === 'string' && typeof b === 'string') {
      mixStrings2(mixWord(HASH_SEED, owner[i] as number), a, mixWord(HASH_SEED, owner[i + 1] as number), b, pair)
      out[i] = finishTimerHash(pair[0] as number, time[i] as number)
      out[i + 1] = finishTimerHash(pair[1] as number, time[i + 1] as number)
    } else {
      out[i] = timerHash(owner[i] as number, a as StoreKey, time[i] as number)
      out[i + 1] = timerHash(owner[i + 1] as number, b as StoreKey, time[i + 1] as number)
    }
  }
  if (i < n) out[i] = timerHash(owner[i] as number, keys[i] as StoreKey, time[i] as number)
}
