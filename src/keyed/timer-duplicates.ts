import type { StoreKey } from '../processor/api.js'
import { timerHash } from './timer-index.js'
import type { TimerRecords } from './timer-records.js'

/** A group of one timestamp at most this large is searched pairwise, a larger one through a hash table. */
const SMALL_GROUP = 8

/**
 * Duplicates among the slots of an unindexed timer queue (see `TimerQueue`): slots whose timers have the
 * same owner, key and timestamp. Slots are 16 bytes, the id in word 4s+3, as `SlotHeap` lays them out.
 */

/**
 * Marks DEAD each slot in [from, end) whose owner and key an earlier slot of the range has: the range is
 * a run of one timestamp, in registration order, so the first of each set of duplicates is the timer and
 * the later ones are registrations made while it was pending. Returns how many were marked.
 */
export function killDuplicates(word: Uint32Array, from: number, end: number, timestamp: number, records: TimerRecords): number {
  let killed = 0
  if (end - from <= SMALL_GROUP) {
    for (let r = from + 1; r < end; r++) {
      const id = word[4 * r + 3] as number
      const owner = records.owner(id)
      const key = records.key(id)
      for (let q = from; q < r; q++) {
        if (sameOwnerAndKey(records, word[4 * q + 3] as number, owner, key)) {
          records.kill(id)
          killed++
          break
        }
      }
    }
    return killed
  }
  const table = emptyTable(end - from)
  let owner = 0
  let key: StoreKey = ''
  const same = (other: number): boolean => sameOwnerAndKey(records, other, owner, key)
  for (let r = from; r < end; r++) {
    const id = word[4 * r + 3] as number
    owner = records.owner(id)
    key = records.key(id)
    if (findOrPut(table, timerHash(owner, key, timestamp), id, same) !== -1) {
      records.kill(id)
      killed++
    }
  }
  return killed
}

/**
 * Checks random samples of a heap's slots for duplicates, so that an unindexed queue notices when the
 * same timers are being registered again and again (once per record, say) and gets itself indexed.
 */
export class DuplicateSampler {
  /** xorshift state: any fixed seed (which slots are drawn changes nothing a caller can see). */
  private state = 0x2545f491

  /**
   * Whether at least two pairs of duplicates turn up among 4·sqrt(n) slots drawn at random from the
   * first n. Two slots of a sample of s are a given pair with probability about (s/n)^2, so the expected
   * count is 16 · pairs / n: two or more once duplicate pairs are about an eighth of the slots. Timers
   * registered once per record make many pairs and are found at once; distinct timers never are (a pair
   * found is a real duplicate). A few thousand draws at a million slots.
   */
  hasDuplicates(word: Uint32Array, n: number, records: TimerRecords): boolean {
    if (n === 0) return false
    const draws = Math.min(n, 4 * Math.ceil(Math.sqrt(n)))
    // Slot numbers, not ids: a slot drawn twice is not a pair.
    const table = emptyTable(draws)
    let slot = 0
    let owner = 0
    let key: StoreKey = ''
    let t = 0
    const same = (other: number): boolean => {
      if (other === slot) return true
      const o = word[4 * other + 3] as number
      return records.timestamp(o) === t && sameOwnerAndKey(records, o, owner, key)
    }
    let x = this.state
    let pairs = 0
    for (let d = 0; d < draws && pairs < 2; d++) {
      x ^= x << 13
      x ^= x >>> 17
      x ^= x << 5
      slot = (x >>> 0) % n
      const id = word[4 * slot + 3] as number
      owner = records.owner(id)
      key = records.key(id)
      t = records.timestamp(id)
      const found = findOrPut(table, timerHash(owner, key, t), slot, same)
      if (found !== -1 && found !== slot) pairs++
    }
    this.state = x
    return pairs >= 2
  }
}

function sameOwnerAndKey(records: TimerRecords, id: number, owner: number, key: StoreKey): boolean {
  return records.owner(id) === owner && records.key(id) === key
}

/**
 * Linear probing in a table from `emptyTable`, from the home of hash `h` (its top bits): the first entry
 * that `matches`, or else -1, with `value` put in the empty entry that ended the probe.
 */
function findOrPut(table: Int32Array, h: number, value: number, matches: (entry: number) => boolean): number {
  const mask = table.length - 1
  for (let i = h >>> (32 - Math.log2(table.length)); ; i = (i + 1) & mask) {
    const entry = table[i] as number
    if (entry === -1) {
      table[i] = value
      return -1
    }
    if (matches(entry)) return entry
  }
}

/** An open-addressing table of at least 2n entries (a power of two, at least 2), all -1. */
function emptyTable(n: number): Int32Array {
  let size = 2
  while (size < 2 * n) size *= 2
  return new Int32Array(size).fill(-1)
}
