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
    const bytes = keySerde.serialize(key, topic)
    return bytes === null ? '' : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1')
  }
}

/** Id of a windowed key: key bytes, then the window start as 8 big-endian bytes (Kafka's layout). */
export function windowedKeyId(keyId: string, start: number): string {
  return keyId + bigEndian64(start)
}

/** The number `bigEndian64` wrote at character `at` of `s`. */
export function fromBigEndian64(s: string, at: number): number {
  let hi = 0
  let lo = 0
  for (let i = 0; i < 4; i++) hi = hi * 256 + s.charCodeAt(at + i)
  for (let i = 4; i < 8; i++) lo = lo * 256 + s.charCodeAt(at + i)
  return hi * 4294967296 + lo
}

/** Id of a session key: key bytes, then end and start as 8 big-endian bytes each (Kafka's session layout). */
export function sessionKeyId(keyId: string, start: number, end: number): string {
  return keyId + bigEndian64(end) + bigEndian64(start)
}

/** A non-negative safe integer as 8 big-endian bytes, one latin1 character each (no BigInt, no Buffer). */
export function bigEndian64(n: number): string {
  const hi = Math.floor(n / 4294967296)
  const lo = n >>> 0
  return String.fromCharCode((hi >>> 24) & 255, (hi >>> 16) & 255, (hi >>> 8) & 255, hi & 255, (lo >>> 24) & 255, (lo >>> 16) & 255, (lo >>> 8) & 255, lo & 255)
}

/** A constructor that returns its argument: a subclass then adds its private fields to that object. */
class ReturnsArgument {
  constructor(target: object) {
    // The point: the subclass's private fields land on `target`.
    return target
  }
}

/**
 * Windowed keys made by punctual's window aggregations carry their id (computed once per window and key),
 * so a suppression downstream need not rebuild it for every update. The id is a private field stamped
 * onto the plain object (a subclass constructor adds its private fields to whatever the base constructor
 * returns): the key keeps Object.prototype, compares equal to a plain `{ key, window }` under
 * deepStrictEqual and prints as one, yet reading the id costs a property load. It replaced a
 * non-enumerable symbol property set with Object.defineProperty, which cost about a microsecond per
 * window (a runtime call), against a third of that for the stamp.
 */
class KeyIdStamp extends ReturnsArgument {
  readonly #id: string

  constructor(target: object, id: string) {
    super(target)
    this.#id = id
  }

  static of(target: object): string | undefined {
    return #id in target ? (target as KeyIdStamp).#id : undefined
  }
}

/** Stamps a windowed key made by a window store with its id. */
export function stampKeyId(windowedKey: object, id: string): void {
  new KeyIdStamp(windowedKey, id)
}

/** The id stamped on a windowed key, or undefined (a key made elsewhere). */
export function stampedKeyId(windowedKey: object): string | undefined {
  return KeyIdStamp.of(windowedKey)
}
