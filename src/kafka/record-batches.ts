import type { Header } from '../processor/api.js'
import { NO_HEADERS } from '../processor/api.js'
import type { FetchedMessage } from './fetched-partition.js'

/**
 * Decodes the records of a Fetch response's partition (Kafka's record batches, magic 2) straight from the
 * response bytes: keys and values stay views of them, and nothing else is made per record but the
 * message the task reads. Under read_committed, records of aborted transactions are left out as Kafka's
 * Java consumer leaves them out: the response lists the aborted transactions that overlap it (producer id
 * and first offset); a transactional batch of such a producer, from that offset on, is skipped until the
 * producer's abort marker. Control batches (the markers themselves) are never records.
 *
 * Layout of a batch (big endian): base offset i64, length i32, leader epoch i32, magic i8, crc u32,
 * attributes i16, last offset delta i32, base timestamp i64, max timestamp i64, producer id i64, producer
 * epoch i16, base sequence i32, record count i32, then the records (compressed as a whole when the
 * attributes say so). A record: length, attributes i8, timestamp delta, offset delta, key, value, headers,
 * all lengths and deltas zig-zag varints (-1: null).
 */

const BATCH_HEADER = 61
const COMPRESSION_MASK = 0x07
const LOG_APPEND_TIME = 0x08
const TRANSACTIONAL = 0x10
const CONTROL = 0x20
/** A control record's type: the end of an aborted transaction. */
const ABORT_MARKER = 0

/** Decompresses a batch's records: by the codec's number in the batch attributes (1 gzip, 2 snappy, 3 lz4, 4 zstd). */
export type Decompress = (codec: number, data: Buffer) => Buffer

/** An aborted transaction as a Fetch response lists it. */
export interface AbortedTransaction {
  readonly producerId: bigint
  readonly firstOffset: number
}

/** What one partition's records of a response gave. */
export interface DecodedRecords {
  /** The offset to fetch next: past the last complete batch (records before `from` skipped too). */
  next: number
  /** Messages appended to the caller's list. */
  count: number
}

/**
 * Appends to `out` the records of `data` at or after offset `from`, in offset order. A batch cut short
 * at the end of the response (the broker stops at its size limit) is left for the next fetch.
 */
export function decodeRecordBatches(
  data: Buffer,
  from: number,
  aborted: readonly AbortedTransaction[] | undefined,
  decompress: Decompress,
  out: FetchedMessage[],
): DecodedRecords {
  let next = from
  let count = 0
  let pos = 0
  // Under read_committed: the aborted transactions not yet reached (by first offset), and the producers inside one.
  const pending = aborted === undefined || aborted.length === 0 ? undefined : [...aborted].sort((a, b) => a.firstOffset - b.firstOffset)
  let abortedProducers: Set<bigint> | undefined
  while (pos + BATCH_HEADER <= data.length) {
    const baseOffset = readInt64(data, pos)
    const end = pos + 12 + data.readInt32BE(pos + 8)
    if (end > data.length) break
    const magic = data.readInt8(pos + 16)
    if (magic !== 2) throw new Error(`record batch at offset ${baseOffset} has message format ${magic}: only format 2 (Kafka 0.11 and later) is read`)
    const attributes = data.readInt16BE(pos + 21)
    const lastOffset = baseOffset + data.readInt32BE(pos + 23)
    const batchStart = pos
    pos = end
    // Under read_committed, as Kafka's Java consumer (CompletedFetch): every batch with a producer id first
    // brings in the aborted transactions that start by its last offset; an abort marker then ends its
    // producer's, and a transactional batch of a producer inside one is skipped.
    if (pending !== undefined) {
      const producerId = data.readBigInt64BE(batchStart + 43)
      if (producerId >= 0n) {
        while (pending.length > 0 && (pending[0] as AbortedTransaction).firstOffset <= lastOffset) (abortedProducers ??= new Set()).add((pending.shift() as AbortedTransaction).producerId)
        const control = (attributes & CONTROL) !== 0
        if (control && abortedProducers?.has(producerId) && controlType(data, batchStart, end) === ABORT_MARKER) abortedProducers.delete(producerId)
        else if (!control && (attributes & TRANSACTIONAL) !== 0 && abortedProducers?.has(producerId)) {
          if (lastOffset >= from) next = lastOffset + 1
          continue
        }
      }
    }
    if (lastOffset < from) continue
    if ((attributes & CONTROL) !== 0) {
      next = lastOffset + 1
      continue
    }
    const codec = attributes & COMPRESSION_MASK
    const records = codec === 0 ? data : decompress(codec, data.subarray(batchStart + BATCH_HEADER, end))
    const appendTime = (attributes & LOG_APPEND_TIME) !== 0 ? readInt64(data, batchStart + 35) : -1
    count += decodeRecords(records, codec === 0 ? batchStart + BATCH_HEADER : 0, data.readInt32BE(batchStart + 57), baseOffset, readInt64(data, batchStart + 27), appendTime, from, out)
    next = lastOffset + 1
  }
  // The reader lets go of the response (its records hold views of what they need).
  reader.buf = EMPTY
  return { next: Math.max(next, from), count }
}

/** Decodes `n` records starting at `start` of `buf`; returns how many were at or after `from`. */
function decodeRecords(buf: Buffer, start: number, n: number, baseOffset: number, baseTimestamp: number, appendTime: number, from: number, out: FetchedMessage[]): number {
  const r = reader
  r.buf = buf
  r.pos = start
  let count = 0
  for (let i = 0; i < n; i++) {
    r.varint() // the record's length
    r.pos++ // its attributes (unused)
    const timestampDelta = r.varlong()
    const offset = baseOffset + r.varint()
    const key = r.bytes()
    const value = r.bytes()
    const headerCount = r.varint()
    let headers = NO_HEADERS
    if (headerCount > 0) {
      const hs: Header[] = []
      for (let h = 0; h < headerCount; h++) {
        const k = r.bytes()
        hs.push({ key: k === null ? '' : k.toString('utf8'), value: r.bytes() })
      }
      headers = hs
    }
    if (offset < from) continue
    out.push({ offset, key, value, timestamp: appendTime >= 0 ? appendTime : baseTimestamp + timestampDelta, headers })
    count++
  }
  return count
}

/** A control batch's record type (its key: version i16, type i16). */
function controlType(data: Buffer, batchStart: number, end: number): number {
  const r = reader
  r.buf = data
  r.pos = batchStart + BATCH_HEADER
  r.varint()
  r.pos++
  r.varlong()
  r.varint()
  const keyLength = r.varint()
  if (keyLength < 4 || r.pos + 4 > end) return -1
  return data.readInt16BE(r.pos + 2)
}

/** Offsets and timestamps: 64-bit on the wire, exact as numbers up to 2^53. */
function readInt64(buf: Buffer, at: number): number {
  return buf.readInt32BE(at) * 4_294_967_296 + buf.readUInt32BE(at + 4)
}

const EMPTY: Buffer = Buffer.alloc(0)

/** Zig-zag varints read in place (one reader: decoding is synchronous). */
const reader = {
  buf: EMPTY,
  pos: 0,
  varint(): number {
    const buf = this.buf
    let v = 0
    let shift = 0
    let b: number
    do {
      b = buf[this.pos++] as number
      v |= (b & 0x7f) << shift
      shift += 7
    } while ((b & 0x80) !== 0 && shift < 35)
    return (v >>> 1) ^ -(v & 1)
  },
  /** A 64-bit zig-zag varint, exact up to 2^53. */
  varlong(): number {
    const buf = this.buf
    let v = 0
    let scale = 1
    let b: number
    do {
      b = buf[this.pos++] as number
      v += (b & 0x7f) * scale
      scale *= 128
    } while ((b & 0x80) !== 0 && scale <= 2 ** 63)
    return v % 2 === 0 ? v / 2 : -(v + 1) / 2
  },
  /** Length-prefixed bytes as a view (-1: null). */
  bytes(): Buffer | null {
    const n = this.varint()
    if (n < 0) return null
    const at = this.pos
    this.pos += n
    return this.buf.subarray(at, at + n)
  },
}
