import { isUtf8 } from 'node:buffer'
import { PunctualError } from '../errors.js'

/**
 * Turns values into bytes and back, per topic. `null` is a tombstone and passes through as `null`.
 * A deserializer throws on bytes it cannot read: the record then goes to the error handler.
 */
export interface Serde<T> {
  /** A name for messages and `describe()`: `String`, `JSON`, or the user's own. */
  readonly name: string
  /**
   * @internal True when values are immutable and `deserialize(serialize(v))` equals `v`: in-memory topics may then
   * hand the value itself to a reader that uses the same serde, skipping both conversions.
   */
  readonly inMemoryIdentity?: boolean
  /** The serialized size in bytes, when it can be known without serializing (buffer accounting). */
  sizeOf?(data: T | null): number
  /**
   * The bytes of `data` for `topic` (Kafka's `Serializer.serialize`, with the value first: a serializer
   * of one parameter, `(value) => ...`, then gets the value, not the topic); null for null. What it
   * throws fails the write.
   */
  serialize(data: T | null, topic: string): Uint8Array | null
  /**
   * The value of `data` read from `topic` (Kafka's `Deserializer.deserialize`, with the bytes first);
   * null for null. What it throws sends the record to the error handler as a `deserialization` error (by
   * default skipped).
   */
  deserialize(data: Uint8Array | null, topic: string): T | null
}

/**
 * What a built-in serde can write, as a check: undefined when it takes `data`, else what it takes. A
 * serde that keeps values typed in memory (String, Double) would otherwise hold a value it cannot
 * serialize until a commit or a reader with bytes needs it, far from where it was written, or hand it
 * on as a key that differs from the same key read back (`42` and `'42'`).
 */
const TAKES: unique symbol = Symbol('punctual.serde.takes')

type Checked<T> = Serde<T> & { readonly [TAKES]: (data: unknown) => string | undefined }

const isInt32 = (data: unknown): boolean => Number.isInteger(data) && (data as number) >= -0x80000000 && (data as number) <= 0x7fffffff

function asBuffer(data: Uint8Array): Buffer {
  return Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength)
}

const stringSerde: Checked<string> = {
  name: 'String',
  [TAKES]: (data) => (typeof data === 'string' ? undefined : 'a string'),
  inMemoryIdentity: true,
  sizeOf: (data) => (data === null ? 0 : Buffer.byteLength(data, 'utf8')),
  serialize: (data) => (data === null ? null : Buffer.from(data, 'utf8')),
  deserialize(data, topic) {
    if (data === null) return null
    const buf = asBuffer(data)
    const text = buf.toString('utf8')
    // Decoding replaces every invalid sequence with U+FFFD, so text without one came from valid UTF-8:
    // the full check (a native call, a tenth of a busy pipeline's time) runs only when one is there.
    if (text.includes('\uFFFD') && !isUtf8(buf)) throw new Error(`invalid UTF-8 in a ${data.byteLength}-byte string on topic ${topic}`)
    return text
  },
}

const bytesSerde: Checked<Uint8Array> = {
  name: 'Bytes',
  [TAKES]: (data) => (data instanceof Uint8Array ? undefined : 'a Uint8Array'),
  sizeOf: (data) => (data === null ? 0 : data.byteLength),
  serialize: (data) => data,
  // Bytes read from Kafka are views of the whole fetched response: a value kept (in a store, a buffer)
  // is copied, so that it does not hold the response in memory.
  deserialize: (data) => (data === null || data.byteLength === data.buffer.byteLength ? data : Uint8Array.prototype.slice.call(data)),
}

/** IEEE-754 double, 8 bytes big-endian (Kafka's DoubleSerde layout). */
const doubleSerde: Checked<number> = {
  name: 'Double',
  [TAKES]: (data) => (typeof data === 'number' ? undefined : 'a number'),
  inMemoryIdentity: true,
  sizeOf: (data) => (data === null ? 0 : 8),
  serialize(data) {
    if (data === null) return null
    const buf = Buffer.allocUnsafe(8)
    buf.writeDoubleBE(data, 0)
    return buf
  },
  deserialize(data, topic) {
    if (data === null) return null
    if (data.byteLength !== 8) throw new Error(`Double expects 8 bytes, got ${data.byteLength} on topic ${topic}`)
    return asBuffer(data).readDoubleBE(0)
  },
}

/** Signed 32-bit integer, big-endian (Kafka's IntegerSerde layout). */
const integerSerde: Checked<number> = {
  name: 'Integer',
  [TAKES]: (data) => (isInt32(data) ? undefined : 'a 32-bit integer'),
  sizeOf: (data) => (data === null ? 0 : 4),
  serialize(data, topic) {
    if (data === null) return null
    if (!isInt32(data)) {
      throw new RangeError(`Integer serde: ${data} is not a 32-bit integer (topic ${topic})`)
    }
    const buf = Buffer.allocUnsafe(4)
    buf.writeInt32BE(data, 0)
    return buf
  },
  deserialize(data, topic) {
    if (data === null) return null
    if (data.byteLength !== 4) throw new Error(`Integer expects 4 bytes, got ${data.byteLength} on topic ${topic}`)
    return asBuffer(data).readInt32BE(0)
  },
}

/** Signed 64-bit integer, big-endian (Kafka's LongSerde layout), limited to JavaScript's safe integers. */
const longSerde: Checked<number> = {
  name: 'Long',
  [TAKES]: (data) => (Number.isSafeInteger(data) ? undefined : 'a safe integer'),
  sizeOf: (data) => (data === null ? 0 : 8),
  serialize(data, topic) {
    if (data === null) return null
    if (!Number.isSafeInteger(data)) throw new RangeError(`Long serde: ${data} is not a safe integer (topic ${topic})`)
    const buf = Buffer.allocUnsafe(8)
    buf.writeBigInt64BE(BigInt(data), 0)
    return buf
  },
  deserialize(data, topic) {
    if (data === null) return null
    if (data.byteLength !== 8) throw new Error(`Long expects 8 bytes, got ${data.byteLength} on topic ${topic}`)
    const n = asBuffer(data).readBigInt64BE(0)
    if (n > BigInt(Number.MAX_SAFE_INTEGER) || n < BigInt(Number.MIN_SAFE_INTEGER)) {
      throw new RangeError(`Long ${n} on topic ${topic} is outside JavaScript's safe integer range`)
    }
    return Number(n)
  },
}

/** JSON.stringify writes nothing for these (undefined, a function, a symbol) or throws (a bigint). */
const NOT_JSON: ReadonlySet<string> = new Set(['undefined', 'function', 'symbol', 'bigint'])

function jsonSerde<T>(): Checked<T> {
  return {
    name: 'JSON',
    [TAKES]: (data) => (NOT_JSON.has(typeof data) ? 'a JSON value (not undefined, a function, a symbol or a bigint)' : undefined),
    serialize: (data) => (data === null ? null : Buffer.from(JSON.stringify(data), 'utf8')),
    deserialize: (data) => (data === null ? null : (JSON.parse(asBuffer(data).toString('utf8')) as T)),
  }
}

/** The JSON serdes made where no serde was given or known (see fallbackJsonSerde). */
const FALLBACKS = new WeakSet<Serde<unknown>>()

/**
 * @internal A JSON serde for a key or value no serde was given or known for (the DSL's last resort, where
 * Kafka Streams would fail for want of a default serde). It writes what `Serdes.JSON()` writes; it is
 * told apart so that `describe()` can mark it and a runtime can warn of a sink that writes with it.
 */
export function fallbackJsonSerde<T>(): Serde<T> {
  const serde = jsonSerde<T>()
  FALLBACKS.add(serde as Serde<unknown>)
  return serde
}

/** @internal Whether `serde` is one that {@link fallbackJsonSerde} made. */
export function isFallbackSerde(serde: Serde<unknown>): boolean {
  return FALLBACKS.has(serde)
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

/** @internal Where a key or value is written: a topic or a store, by name. */
export type WriteTarget = 'topic' | 'store'

/**
 * @internal Refuses, where a record is written (a producer's send, a sink, a store's put), a key or
 * value that a built-in serde cannot write, with an INVALID_ARGUMENT error naming the target, the
 * record's key and the type the serde takes. `null` is a tombstone and always fits. Serdes of the
 * application's own are not checked here: their `serialize` decides. One property read and a typeof on
 * a value that fits: this runs once per key and value written.
 */
export function checkWritable(serde: Serde<unknown>, part: 'key' | 'value', data: unknown, key: unknown, target: WriteTarget, name: string, caller?: string): void {
  if (data === null) return
  const takes = (serde as Partial<Checked<unknown>>)[TAKES]
  if (takes === undefined) return
  const wanted = takes(data)
  if (wanted === undefined) return
  const what = part === 'key' ? `key ${describeValue(data)}` : `value ${describeValue(data)} of key ${describeValue(key)}`
  throw new PunctualError(
    'INVALID_ARGUMENT',
    `${caller === undefined ? '' : `${caller}: `}${target} "${name}" cannot take ${what}: its ${part} serde Serdes.${serde.name}() takes ${wanted}`,
  )
}

/** @internal A value as a message shows it: strings quoted, numbers and bigints as written, other things by kind. */
export function describeValue(v: unknown): string {
  switch (typeof v) {
    case 'string':
      return JSON.stringify(v.length > 60 ? `${v.slice(0, 60)}…` : v)
    case 'number':
    case 'boolean':
      return String(v)
    case 'bigint':
      return `${v}n`
    case 'undefined':
      return 'undefined'
    case 'symbol':
      return 'a symbol'
    case 'function':
      return 'a function'
    default:
      if (v === null) return 'null'
      if (v instanceof Uint8Array) return `(a ${v.byteLength}-byte ${v.constructor.name})`
      if (Array.isArray(v)) return `(an array of ${v.length})`
      {
        const ctor = (v as { constructor?: { name?: string } }).constructor
        return `(an object${ctor !== undefined && ctor !== Object && ctor.name !== undefined ? ` of class ${ctor.name}` : ''})`
      }
  }
}
