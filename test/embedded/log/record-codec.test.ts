import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../../helpers/fc.js'
import { decodeChunk, encodeChunk } from '../../../src/embedded/log/record-codec.js'
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
