import { isUtf8 } from 'node:buffer'

/**
 * Turns values into bytes and back, per topic. `null` is a tombstone and passes through as `null`.
 * A deserializer throws on bytes it cannot read: the record then goes to the error handler.
 */
export interface Serde<T> {
  readonly name: string
  /**
   * True when values are immutable and `deserialize(serialize(v))` equals `v`: in-memory topics may then
   * hand the value itself to a reader that uses the same serde, skipping both conversions.
   */
  readonly inMemoryIdentity?: boolean
  /** The serialized size in bytes, when it can be known without serializing (buffer accounting). */
  sizeOf?(data: T | null): number
  serialize(topic: string, data: T | null): Uint8Array | null
  deserialize(topic: string, data: Uint8Array | null): T | null
}

function asBuffer(data: Uint8Array): Buffer {
  return Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength)
}

const stringSerde: Serde<string> = {
  name: 'String',
  inMemoryIdentity: true,
  sizeOf: (data) => (data === null ? 0 : Buffer.byteLength(data, 'utf8')),
  serialize: (_topic, data) => (data === null ? null : Buffer.from(data, 'utf8')),
  deserialize(topic, data) {
    if (data === null) return null
    const buf = asBuffer(data)
    const text = buf.toString('utf8')
    // Decoding replaces every invalid sequence with U+FFFD, so text without one came from valid UTF-8:
    // the full check (a native call, a tenth of a busy pipeline's time) runs only when one is there.
    if (text.includes('\uFFFD') && !isUtf8(buf)) throw new Error(`invalid UTF-8 in a ${data.byteLength}-byte string on topic ${topic}`)
    return text
  },
}

const bytesSerde: Serde<Uint8Array> = {
  name: 'Bytes',
  sizeOf: (data) => (data === null ? 0 : data.byteLength),
  serialize: (_topic, data) => data,
  deserialize: (_topic, data) => data,
}

/** IEEE-754 double, 8 bytes big-endian (Kafka's DoubleSerde layout). */
const doubleSerde: Serde<number> = {
  name: 'Double',
  inMemoryIdentity: true,
  sizeOf: (data) => (data === null ? 0 : 8),
  serialize(_topic, data) {
    if (data === null) return null
    const buf = Buffer.allocUnsafe(8)
    buf.writeDoubleBE(data, 0)
    return buf
  },
  deserialize(topic, data) {
    if (data === null) return null
    if (data.byteLength !== 8) throw new Error(`Double expects 8 bytes, got ${data.byteLength} on topic ${topic}`)
    return asBuffer(data).readDoubleBE(0)
  },
}

/** Signed 32-bit integer, big-endian (Kafka's IntegerSerde layout). */
const integerSerde: Serde<number> = {
  name: 'Integer',
  sizeOf: (data) => (data === null ? 0 : 4),
  serialize(topic, data) {
    if (data === null) return null
    if (!Number.isInteger(data) || data < -0x80000000 || data > 0x7fffffff) {
      throw new RangeError(`Integer serde: ${data} is not a 32-bit integer (topic ${topic})`)
    }
    const buf = Buffer.allocUnsafe(4)
    buf.writeInt32BE(data, 0)
    return buf
  },
  deserialize(topic, data) {
    if (data === null) return null
    if (data.byteLength !== 4) throw new Error(`Integer expects 4 bytes, got ${data.byteLength} on topic ${topic}`)
    return asBuffer(data).readInt32BE(0)
  },
}

/** Signed 64-bit integer, big-endian (Kafka's LongSerde layout), limited to JavaScript's safe integers. */
const longSerde: Serde<number> = {
  name: 'Long',
  sizeOf: (data) => (data === null ? 0 : 8),
  serialize(topic, data) {
    if (data === null) return null
    if (!Number.isSafeInteger(data)) throw new RangeError(`Long serde: ${data} is not a safe integer (topic ${topic})`)
    const buf = Buffer.allocUnsafe(8)
    buf.writeBigInt64BE(BigInt(data), 0)
    return buf
  },
  deserialize(topic, data) {
    if (data === null) return null
    if (data.byteLength !== 8) throw new Error(`Long expects 8 bytes, got ${data.byteLength} on topic ${topic}`)
    const n = asBuffer(data).readBigInt64BE(0)
    if (n > BigInt(Number.MAX_SAFE_INTEGER) || n < BigInt(Number.MIN_SAFE_INTEGER)) {
      throw new RangeError(`Long ${n} on topic ${topic} is outside JavaScript's safe integer range`)
    }
    return Number(n)
  },
}

function jsonSerde<T>(): Serde<T> {
  return {
    name: 'JSON',
    serialize: (_topic, data) => (data === null ? null : Buffer.from(JSON.stringify(data), 'utf8')),
    deserialize: (_topic, data) => (data === null ? null : (JSON.parse(asBuffer(data).toString('utf8')) as T)),
  }
}

/** Built-in serdes. Each call returns a serde; the stateless ones are shared. */
export const Serdes = {
  String: (): Serde<string> => stringSerde,
  Bytes: (): Serde<Uint8Array> => bytesSerde,
  Double: (): Serde<number> => doubleSerde,
  Integer: (): Serde<number> => integerSerde,
  Long: (): Serde<number> => longSerde,
  JSON: <T>(): Serde<T> => jsonSerde<T>(),
} as const
