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
  const mask = table.length - 1
  const shift = 32 - Math.log2(table.length)
  for (let r = from; r < end; r++) {
    const id = word[4 * r + 3] as number
    const owner = records.owner(id)
    const key = records.key(id)
    for (let i = timerHash(owner, key, timestamp) >>> shift; ; i = (i + 1) & mask) {
      const other = table[i] as number
      if (other === -1) {
        table[i] = id
        break
      }
      if (sameOwnerAndKey(records, other, owner, key)) {
        records.kill(id)
        killed++
        break
      }
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
    const mask = table.length - 1
    const shift = 32 - Math.log2(table.length)
    let x = this.state
    let pairs = 0
    for (let d = 0; d < draws && pairs < 2; d++) {
      x ^= x << 13
      x ^= x >>> 17
      x ^= x << 5
      const slot = (x >>> 0) % n
      const id = word[4 * slot + 3] as number
      const owner = records.owner(id)
      const key = records.key(id)
      const t = records.timestamp(id)
      for (let i = timerHash(owner, key, t) >>> shift; ; i = (i + 1) & mask) {
        const other = table[i] as number
        if (other === -1) {
          table[i] = slot
          break
        }
        if (other === slot) break
        const o = word[4 * other + 3] as number
        if (records.timestamp(o) === t && sameOwnerAndKey(records, o, owner, key)) {
          pairs++
          break
        }
      }
    }
    this.state = x
    return pairs >= 2
  }
}

function sameOwnerAndKey(records: TimerRecords, id: number, owner: number, key: StoreKey): boolean {
  return records.owner(id) === owner && records.key(id) === key
}

/** An open-addressing table of at least 2n entries (a power of two, at least 2), all -1. */
function emptyTable(n: number): Int32Array {
  let size = 2
  while (size < 2 * n) size *= 2
  return new Int32Array(size).fill(-1)
}
