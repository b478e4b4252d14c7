import type { Serde } from '../processor/serdes.js'

/**
 * A key's serialized bytes as a latin1 string: one character per byte, so string order is byte order
 * (how Kafka orders keys) and equal keys get equal ids whatever their type.
 */
export function keyIdFunction<K>(keySerde: Serde<K>, topic = ''): (key: K) => string {
  if (keySerde.name === 'String') {
    // An ASCII string's UTF-8 bytes, read as latin1, are the string itself: skip the encoding.
    return (key) => {
      const s = key as unknown as string
      for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return Buffer.from(s, 'utf8').toString('latin1')
      return s
    }
  }
  return (key) => {
    const bytes = keySerde.serialize(topic, key)
    return bytes === null ? '' : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1')
  }
}

/** Id of a windowed key: key bytes, then the window start as 8 big-endian bytes (Kafka's layout). */
export function windowedKeyId(keyId: string, start: number): string {
  return keyId + bigEndian64(start)
}

/** Id of a session key: key bytes, then end and start as 8 big-endian bytes each (Kafka's session layout). */
export function sessionKeyId(keyId: string, start: number, end: number): string {
  return keyId + bigEndian64(end) + bigEndian64(start)
}

/** A non-negative safe integer as 8 big-endian bytes, one latin1 character each (no BigInt, no Buffer). */
function bigEndian64(n: number): string {
  const hi = Math.floor(n / 4294967296)
  const lo = n >>> 0
  return String.fromCharCode((hi >>> 24) & 255, (hi >>> 16) & 255, (hi >>> 8) & 255, hi & 255, (lo >>> 24) & 255, (lo >>> 16) & 255, (lo >>> 8) & 255, lo & 255)
}

/**
 * Windowed keys made by punctual's window aggregations carry their id under this symbol (computed once
 * per window and key), so a suppression downstream need not rebuild it for every update.
 */
export const WINDOWED_KEY_ID: unique symbol = Symbol('punctual.windowedKeyId')

export type WithKeyId = { readonly [WINDOWED_KEY_ID]?: string }
