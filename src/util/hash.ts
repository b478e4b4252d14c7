/** The seed and the multiplier of the mixes below (2^32 / golden ratio, odd). */
export const HASH_SEED = 0x811c9dc5
export const HASH_PRIME = 0x9e3779b1

/** Mixes a 32-bit word into a hash `h` (one multiply: the result still needs `fmix32`). */
export function mixWord(h: number, word: number): number {
  return Math.imul(h ^ word, HASH_PRIME)
}

/**
 * Mixes the UTF-16 code units of `s` into a hash `h`, two units per multiply. A multiply's result is the
 * next one's input, so the chain of multiplies is the cost: one per unit (FNV-1a, used before) took
 * about twice as long for short keys, with the same spread once finalized.
 */
export function mixString(h: number, s: string): number {
  const n = s.length
  let i = 0
  for (; i + 1 < n; i += 2) h = Math.imul(h ^ (s.charCodeAt(i) | (s.charCodeAt(i + 1) << 16)), HASH_PRIME)
  if (i < n) h = Math.imul(h ^ s.charCodeAt(i), HASH_PRIME)
  return h
}

/**
 * Mixes a store key into a hash `h`: a string by its code units, a 32-bit integer as one word, anything
 * else (a double, a bigint, a boolean) by its type and its text, so that 1 and '1' differ.
 */
export function mixKey(h: number, key: string | number | bigint | boolean): number {
  if (typeof key === 'string') return mixString(h, key)
  if (typeof key === 'number' && Number.isInteger(key) && Math.abs(key) <= 0x7fffffff) return mixWord(h, key)
  return mixString(h, typeof key + String(key))
}

/**
 * murmur3's 32-bit finalizer: every input bit affects every output bit. The mixes above alone leave
 * the top bits weak, and the hash tables here take their slots from the top bits.
 */
export function fmix32(h: number): number {
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h | 0
}
