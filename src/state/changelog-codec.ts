import { Packr } from 'msgpackr'
import { PunctualError } from '../errors.js'
import type { StoreKey } from '../processor/api.js'
import type { Serde } from '../processor/serdes.js'

/**
 * The stored form of values that have no serde: MessagePack, each value self-contained (no shared
 * record structures, so any reader decodes any record alone, in any order). Plain data round-trips:
 * objects, arrays, strings, numbers, booleans, null, undefined, bigints, Uint8Array, Set, Date. A Map
 * comes back as a plain object: a store holding Maps needs a value serde.
 */
const packr = new Packr({ useRecords: false, moreTypes: true, int64AsType: 'bigint' })

export function packValue(value: unknown): Uint8Array {
  return packr.pack(value)
}

export function unpackValue(bytes: Uint8Array): unknown {
  return packr.unpack(bytes)
}

const STRING = 0x73
const NUMBER = 0x6e
const TRUE = 0x74
const FALSE = 0x66
const BIGINT = 0x69

/**
 * A store key as bytes: one type byte, then UTF-8 for strings, a big-endian double for numbers, the
 * decimal digits of a bigint. Equal keys give equal bytes (what compaction needs), and keys of
 * different types never collide (5, 5n and "5" are three keys).
 */
export function encodeStoreKey(key: StoreKey): Uint8Array {
  switch (typeof key) {
    case 'string': {
      const out = Buffer.allocUnsafe(1 + Buffer.byteLength(key, 'utf8'))
      out[0] = STRING
      out.write(key, 1, 'utf8')
      return out
    }
    case 'number': {
      const out = Buffer.allocUnsafe(9)
      out[0] = NUMBER
      out.writeDoubleBE(key, 1)
      return out
    }
    case 'boolean':
      return Buffer.of(key ? TRUE : FALSE)
    default: {
      const digits = key.toString()
      const out = Buffer.allocUnsafe(1 + digits.length)
      out[0] = BIGINT
      out.write(digits, 1, 'latin1')
      return out
    }
  }
}

export function decodeStoreKey(bytes: Uint8Array): StoreKey {
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  switch (buf[0]) {
    case STRING:
      return buf.toString('utf8', 1)
    case NUMBER:
      if (buf.length !== 9) break
      return buf.readDoubleBE(1)
    case TRUE:
      return true
    case FALSE:
      return false
    case BIGINT:
      return BigInt(buf.toString('latin1', 1))
  }
  throw new PunctualError('DESERIALIZATION', `a changelog record's key is not a store key (${buf.length} bytes, type byte ${buf[0]})`)
}

/** How one store's entries become changelog keys and values and back. */
export interface StoreCodec {
  encodeKey(key: StoreKey): Uint8Array
  decodeKey(bytes: Uint8Array): StoreKey
  encodeValue(value: unknown): Uint8Array
  decodeValue(bytes: Uint8Array): unknown
}

/** The codec of a store without serdes: tagged keys, MessagePack values. */
export const defaultStoreCodec: StoreCodec = {
  encodeKey: encodeStoreKey,
  decodeKey: decodeStoreKey,
  encodeValue: packValue,
  decodeValue: unpackValue,
}

/**
 * The codec of a store with serdes (either may be missing: that side uses the default). `topic` is what
 * the serdes are told: the store's changelog topic.
 */
export function storeCodec(topic: string, keySerde: Serde<unknown> | undefined, valueSerde: Serde<unknown> | undefined): StoreCodec {
  if (keySerde === undefined && valueSerde === undefined) return defaultStoreCodec
  return {
    encodeKey: keySerde === undefined ? encodeStoreKey : (key) => nonNull(keySerde.serialize(key, topic), topic, 'key'),
    decodeKey: keySerde === undefined ? decodeStoreKey : (bytes) => keySerde.deserialize(bytes, topic) as StoreKey,
    encodeValue: valueSerde === undefined ? packValue : (value) => nonNull(valueSerde.serialize(value, topic), topic, 'value'),
    decodeValue: valueSerde === undefined ? unpackValue : (bytes) => valueSerde.deserialize(bytes, topic),
  }
}

function nonNull(bytes: Uint8Array | null, topic: string, what: string): Uint8Array {
  if (bytes === null) throw new PunctualError('INVALID_ARGUMENT', `store changelog ${topic}: the ${what} serde returned null for a non-null ${what}`)
  return bytes
}
