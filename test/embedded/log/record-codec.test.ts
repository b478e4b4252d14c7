import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../../helpers/fc.js'
import { decodeChunk, encodeChunk, encodeRange } from '../../../src/embedded/log/record-codec.js'
import { PartitionLog } from '../../../src/embedded/log/partition-log.js'
import type { LogRecord } from '../../../src/processor/record-io.js'
import { Serdes } from '../../../src/processor/serdes.js'
import type { Serde } from '../../../src/processor/serdes.js'

const STRING = Serdes.String() as Serde<unknown>
const DOUBLE = Serdes.Double() as Serde<unknown>
const JSON_SERDE = Serdes.JSON<unknown>() as Serde<unknown>

/** A stored field: typed string, typed double, bytes, null, or a value of a serde that is not stored typed. */
const field = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }).map((s) => ({ data: s as unknown, serde: STRING as Serde<unknown> | undefined })),
  fc.double({ noNaN: true }).map((d) => ({ data: d as unknown, serde: DOUBLE as Serde<unknown> | undefined })),
  fc.uint8Array({ maxLength: 40 }).map((b) => ({ data: b as unknown, serde: undefined })),
  fc.constant({ data: null as unknown, serde: undefined }),
)
const record = fc.record({
  timestamp: fc.nat(),
  key: field,
  value: field,
  headers: fc.array(fc.record({ key: fc.string({ maxLength: 8 }), value: fc.option(fc.uint8Array({ maxLength: 8 }), { nil: null }) }), { maxLength: 3 }),
})

describe('log chunk codec', () => {
  it('round-trips timestamps, typed strings and doubles, bytes, nulls and headers (property)', () => {
    fc.assert(
      fc.property(fc.array(record, { maxLength: 30 }), (recs) => {
        const records: LogRecord[] = recs.map((r) => ({ timestamp: r.timestamp, key: r.key.data, keySerde: r.key.serde, value: r.value.data, valueSerde: r.value.serde, headers: r.headers }))
        const back = decodeChunk(encodeChunk(records, 't'))
        assert.equal(back.length, records.length)
        back.forEach((b, i) => {
          const r = records[i]!
          assert.equal(b.timestamp, r.timestamp)
          for (const [got, gotSerde, want, wantSerde] of [
            [b.key, b.keySerde, r.key, r.keySerde],
            [b.value, b.valueSerde, r.value, r.valueSerde],
          ] as const) {
            assert.equal(gotSerde, want === null ? undefined : wantSerde, 'strings and doubles come back typed')
            if (want instanceof Uint8Array) assert.deepEqual(Buffer.from(got as Uint8Array), Buffer.from(want))
            else assert.equal(got, want)
          }
          assert.deepEqual(
            b.headers.map((h) => [h.key, h.value === null ? null : Buffer.from(h.value).toString('hex')]),
            r.headers.map((h) => [h.key, h.value === null ? null : Buffer.from(h.value).toString('hex')]),
          )
        })
      }),
      { numRuns: 500 },
    )
  })

  it('encodes any range of a partition log across its chunks, as the records it holds (property)', () => {
    // Hundreds of records span several of the log's chunks; long strings make the encoder grow its buffer.
    const longField = fc.oneof(field, fc.string({ unit: 'grapheme', minLength: 10, maxLength: 120 }).map((s) => ({ data: s as unknown, serde: STRING as Serde<unknown> | undefined })))
    const logRecord = fc.record({ timestamp: fc.nat(), key: longField, value: longField, headers: record.map((r) => r.headers) })
    fc.assert(
      fc.property(fc.array(logRecord, { minLength: 1, maxLength: 300 }), fc.nat(), fc.nat(), (recs, a, b) => {
        const log = new PartitionLog('t', 0)
        for (const r of recs) log.appendFields(r.key.data, r.key.serde, r.value.data, r.value.serde, r.timestamp, r.headers)
        const from = a % recs.length
        const to = from + (b % (recs.length - from + 1))
        const back = decodeChunk(encodeRange(log, from, to, 't'))
        const want = log.slice(from, to)
        assert.equal(back.length, want.length)
        back.forEach((got, i) => {
          const r = want[i]!
          assert.equal(got.timestamp, r.timestamp)
          if (r.key instanceof Uint8Array) assert.deepEqual(Buffer.from(got.key as Uint8Array), Buffer.from(r.key))
          else assert.equal(got.key, r.key)
          if (r.value instanceof Uint8Array) assert.deepEqual(Buffer.from(got.value as Uint8Array), Buffer.from(r.value))
          else assert.equal(got.value, r.value)
          assert.equal(got.headers.length, r.headers.length)
        })
      }),
      { numRuns: 100 },
    )
  })

  it('refuses to encode records the log no longer holds', () => {
    const log = new PartitionLog('t', 0)
    for (let i = 0; i < 3; i++) log.appendFields('k', STRING, i, DOUBLE, i, [])
    assert.throws(() => encodeRange(log, 1, 4, 't'), /not all held in memory/)
  })

  it('stores values of other serdes as their bytes', () => {
    const [r] = decodeChunk(encodeChunk([{ timestamp: 5, key: null, keySerde: undefined, value: { a: 1 }, valueSerde: JSON_SERDE, headers: [] }], 't'))
    assert.equal(r!.valueSerde, undefined)
    assert.deepEqual(JSON_SERDE.deserialize(r!.value as Uint8Array, 't'), { a: 1 })
  })

  it('refuses a truncated chunk', () => {
    const buf = encodeChunk([{ timestamp: 1, key: 'k', keySerde: STRING, value: 'v', valueSerde: STRING, headers: [] }], 't')
    assert.throws(() => decodeChunk(buf.subarray(0, buf.length - 1)))
    assert.throws(() => decodeChunk(Buffer.concat([buf, Buffer.from([0])])), /bytes left/)
  })
})
