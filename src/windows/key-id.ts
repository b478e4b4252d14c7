import type { Serde } from '../processor/serdes.js'

/**
 * A key's serialized bytes as a latin1 string: one character per byte, so string order is byte order
 * (how Kafka orders keys) and equal keys get equal ids whatever their type.
 */
export function keyIdFunction<K>(keySerde: Serde<K>, topic = ''): (key: K) => string {
  return (key) => {
    const bytes = keySerde.serialize(topic, key)
    return bytes === null ? '' : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1')
  }
}

/** Id of a windowed key: key bytes, then the window start as 8 big-endian bytes (Kafka's layout). */
export function windowedKeyId(keyId: string, start: number): string {
  const b = Buffer.allocUnsafe(8)
  b.writeBigInt64BE(BigInt(start))
  return keyId + b.toString('latin1')
}
