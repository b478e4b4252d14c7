import type { StoreKey } from '../processor/api.js'

/**
 * A store key as a part of an lmdb key. Strings, numbers and booleans go as they are (lmdb's ordered
 * encoding keeps their types apart and orders numbers numerically); bigints, which it would turn into
 * numbers (5n and 5 would collide), go as a string with a NUL prefix.
 */
export function keyPart(key: StoreKey): string | number | boolean {
  return typeof key === 'bigint' ? `\u0000n${key}` : key
}

const DIGITS = /^-?\d+$/

/**
 * A store key back from its part of an lmdb key (`keyPart`'s inverse). A string key of the form a bigint
 * takes (NUL, "n", digits) is the same key as that bigint on disk, and comes back as the bigint.
 */
export function fromKeyPart(part: string | number | boolean): StoreKey {
  return typeof part === 'string' && part.startsWith('\u0000n') && DIGITS.test(part.slice(2)) ? BigInt(part.slice(2)) : part
}

const rank = (p: string | number | boolean): number => (typeof p === 'boolean' ? 0 : typeof p === 'number' ? 1 : 2)

/** The order of keys on disk: booleans, numbers, then strings by code point (UTF-8 byte order). */
export function compareStoreKeys(a: StoreKey, b: StoreKey): number {
  const pa = keyPart(a)
  const pb = keyPart(b)
  const ra = rank(pa)
  const rb = rank(pb)
  if (ra !== rb) return ra - rb
  if (ra < 2) return pa < pb ? -1 : pa > pb ? 1 : 0
  const sa = pa as string
  const sb = pb as string
  for (let i = 0, j = 0; i < sa.length && j < sb.length; ) {
    const ca = sa.codePointAt(i) as number
    const cb = sb.codePointAt(j) as number
    if (ca !== cb) return ca - cb
    i += ca > 0xffff ? 2 : 1
    j += cb > 0xffff ? 2 : 1
  }
  return sa.length - sb.length
}
