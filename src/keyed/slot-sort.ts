/**
 * Sorts timer slots by (timestamp, order) with an LSD radix sort: 11-bit digits of the order, then of the
 * timestamp's low and high 32 bits, a pass per digit that is not the same in every slot.
 *
 * A slot is 16 bytes: timestamp (float64, a non-negative safe integer), order (uint32), id (uint32), as
 * TimerQueue lays them out. Each pass reads the slots in order and writes them to 2048 bucket cursors, so a
 * million slots sort in a few sequential sweeps, where a million heap pops would each miss the cache on
 * every level.
 */

const DIGIT_BITS = 11
const BUCKETS = 1 << DIGIT_BITS
const DIGIT_MASK = BUCKETS - 1
/** Digits of the order (32 bits), the timestamp's low 32 bits, its high 21 bits: least significant first. */
const DIGITS = [
  { word: 0, shift: 0 },
  { word: 0, shift: 11 },
  { word: 0, shift: 22 },
  { word: 1, shift: 0 },
  { word: 1, shift: 11 },
  { word: 1, shift: 22 },
  { word: 2, shift: 0 },
  { word: 2, shift: 11 },
] as const
const TWO_32 = 4294967296

/** Whether every timestamp in the first `n` slots is a non-negative safe integer (what the sort handles). */
export function radixSortable(time: Float64Array, n: number): boolean {
  for (let s = 0; s < n; s++) {
    const t = time[2 * s] as number
    if (!(t >= 0 && t <= Number.MAX_SAFE_INTEGER && Math.floor(t) === t)) return false
  }
  return true
}

/** The first timestamp digit in DIGITS (before it: the order's). */
const FIRST_TIME_DIGIT = 3

/**
 * Sorts the first `n` slots of `buffer` (ascending timestamp, then order), using `scratch` (at least as
 * large) for the passes; returns whichever of the two holds the result. `inOrder`: the slots are in
 * ascending order already, so only the timestamp's digits are sorted (each pass is stable).
 */
export function sortSlots(buffer: ArrayBuffer, scratch: ArrayBuffer, n: number, inOrder = false): ArrayBuffer {
  const counts = histograms(new Float64Array(buffer), new Uint32Array(buffer), n)
  let from = buffer
  let to = scratch
  for (let d = inOrder ? FIRST_TIME_DIGIT : 0; d < DIGITS.length; d++) {
    const offset = d * BUCKETS
    if (isConstant(counts, offset, n)) continue
    // Counts become each bucket's first position.
    let position = 0
    for (let b = 0; b < BUCKETS; b++) {
      const c = counts[offset + b] as number
      counts[offset + b] = position
      position += c
    }
    scatter(from, to, n, DIGITS[d] as (typeof DIGITS)[number], counts, offset)
    const swap = from
    from = to
    to = swap
  }
  return from
}

function histograms(time: Float64Array, word: Uint32Array, n: number): Uint32Array {
  const counts = new Uint32Array(DIGITS.length * BUCKETS)
  for (let s = 0; s < n; s++) {
    const order = word[4 * s + 2] as number
    const t = time[2 * s] as number
    const low = t >>> 0
    const high = Math.floor(t / TWO_32)
    counts[order & DIGIT_MASK]!++
    counts[BUCKETS + ((order >>> 11) & DIGIT_MASK)]!++
    counts[2 * BUCKETS + (order >>> 22)]!++
    counts[3 * BUCKETS + (low & DIGIT_MASK)]!++
    counts[4 * BUCKETS + ((low >>> 11) & DIGIT_MASK)]!++
    counts[5 * BUCKETS + (low >>> 22)]!++
    counts[6 * BUCKETS + (high & DIGIT_MASK)]!++
    counts[7 * BUCKETS + (high >>> 11)]!++
  }
  return counts
}

/** A digit every slot shares sorts nothing: its pass is skipped. */
function isConstant(counts: Uint32Array, offset: number, n: number): boolean {
  for (let b = 0; b < BUCKETS; b++) {
    const c = counts[offset + b] as number
    if (c !== 0) return c === n
  }
  return true
}

function scatter(from: ArrayBuffer, to: ArrayBuffer, n: number, digit: (typeof DIGITS)[number], positions: Uint32Array, offset: number): void {
  const fromTime = new Float64Array(from)
  const fromWord = new Uint32Array(from)
  const toTime = new Float64Array(to)
  const toWord = new Uint32Array(to)
  for (let s = 0; s < n; s++) {
    const t = fromTime[2 * s] as number
    const order = fromWord[4 * s + 2] as number
    const key = digit.word === 0 ? order : digit.word === 1 ? t >>> 0 : Math.floor(t / TWO_32)
    const p = positions[offset + ((key >>> digit.shift) & DIGIT_MASK)]!++
    toTime[2 * p] = t
    toWord[4 * p + 2] = order
    toWord[4 * p + 3] = fromWord[4 * s + 3] as number
  }
}
