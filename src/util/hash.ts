/** FNV-1a's 32-bit offset basis and prime. */
export const FNV_OFFSET = 0x811c9dc5
export const FNV_PRIME = 0x01000193

/** Mixes the UTF-16 code units of `s` into an FNV-1a hash `h`. */
export function fnv1aString(h: number, s: string): number {
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), FNV_PRIME)
  return h
}

/**
 * murmur3's 32-bit finalizer: every input bit affects every output bit. FNV-1a alone leaves the top bits
 * weak, and the hash tables here take their slots from the top bits.
 */
export function fmix32(h: number): number {
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h | 0
}
