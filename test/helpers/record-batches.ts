import { gzipSync } from 'node:zlib'

// Kafka record batches (magic 2) written from the protocol's description, for the tests of the direct fetch.

export interface TestRecord {
  key: string | null
  value: string | null
  timestampDelta?: number
  headers?: Array<[string, string | null]>
}

export interface BatchOptions {
  baseOffset: number
  baseTimestamp?: number
  producerId?: bigint
  transactional?: boolean
  /** A control batch: one marker record, 0 abort or 1 commit. */
  marker?: 0 | 1
  logAppendTime?: number
  gzip?: boolean
}

function zigzag(n: number): Buffer {
  const out: number[] = []
  let v = n >= 0 ? n * 2 : -n * 2 - 1
  while (v >= 128) {
    out.push((v % 128) | 0x80)
    v = Math.floor(v / 128)
  }
  out.push(v)
  return Buffer.from(out)
}

function bytesField(s: string | Buffer | null): Buffer {
  if (s === null) return zigzag(-1)
  const b = typeof s === 'string' ? Buffer.from(s) : s
  return Buffer.concat([zigzag(b.length), b])
}

function encodeRecord(r: { key: string | Buffer | null; value: string | null; timestampDelta: number; offsetDelta: number; headers: Array<[string, string | null]> }): Buffer {
  const body = Buffer.concat([
    Buffer.from([0]),
    zigzag(r.timestampDelta),
    zigzag(r.offsetDelta),
    bytesField(r.key),
    bytesField(r.value),
    zigzag(r.headers.length),
    ...r.headers.flatMap(([k, v]) => [bytesField(k), bytesField(v)]),
  ])
  return Buffer.concat([zigzag(body.length), body])
}

/** One record batch of `records` (or a control batch with `marker`), its first offset `baseOffset`. */
export function batch(records: TestRecord[], o: BatchOptions): Buffer {
  const control = o.marker !== undefined
  const encoded = control
    ? [encodeRecord({ key: Buffer.from([0, 0, 0, o.marker as number]), value: null, timestampDelta: 0, offsetDelta: 0, headers: [] })]
    : records.map((r, i) => encodeRecord({ key: r.key, value: r.value, timestampDelta: r.timestampDelta ?? i, offsetDelta: i, headers: r.headers ?? [] }))
  let payload = Buffer.concat(encoded)
  if (o.gzip) payload = gzipSync(payload)
  const count = control ? 1 : records.length
  const head = Buffer.alloc(61)
  head.writeBigInt64BE(BigInt(o.baseOffset), 0)
  head.writeInt32BE(61 - 12 + payload.length, 8)
  head.writeInt32BE(0, 12)
  head.writeInt8(2, 16)
  const attributes = (o.gzip ? 1 : 0) | (o.logAppendTime !== undefined ? 0x08 : 0) | (o.transactional || control ? 0x10 : 0) | (control ? 0x20 : 0)
  head.writeInt16BE(attributes, 21)
  head.writeInt32BE(count - 1, 23)
  head.writeBigInt64BE(BigInt(o.baseTimestamp ?? 1_000), 27)
  head.writeBigInt64BE(BigInt(o.logAppendTime ?? o.baseTimestamp ?? 1_000), 35)
  head.writeBigInt64BE(o.producerId ?? -1n, 43)
  head.writeInt16BE(0, 51)
  head.writeInt32BE(0, 53)
  head.writeInt32BE(count, 57)
  return Buffer.concat([head, payload])
}
