import assert from 'node:assert/strict'
import { gunzipSync } from 'node:zlib'
import { describe, it } from 'node:test'
import { createRecordsBatch } from '@platformatic/kafka'
import fc from '../helpers/fc.js'
import { decodeRecordBatches } from '../../src/kafka/record-batches.js'
import type { AbortedTransaction, Decompress } from '../../src/kafka/record-batches.js'
import type { FetchedMessage } from '../../src/kafka/fetched-partition.js'
import { batch } from '../helpers/record-batches.js'

// Record batches written by test/helpers/record-batches.ts from the protocol's description (magic 2),
// and, as a second writer, by @platformatic/kafka's producer code: the decoder must read both.

const gunzip: Decompress = (codec, data) => {
  assert.equal(codec, 1)
  return gunzipSync(data)
}

function decode(data: Buffer, from: number, aborted?: AbortedTransaction[]): { next: number; messages: FetchedMessage[] } {
  const messages: FetchedMessage[] = []
  const { next, count } = decodeRecordBatches(data, from, aborted, gunzip, messages)
  assert.equal(count, messages.length)
  return { next, messages }
}

const text = (b: Uint8Array | null): string | null => (b === null ? null : Buffer.from(b).toString())
const summary = (m: FetchedMessage): [number, string | null, string | null, number] => [m.offset, text(m.key), text(m.value), m.timestamp]

describe('record batches of a Fetch response', () => {
  it('reads records with their offsets, timestamps, null keys and values, and headers', () => {
    const data = Buffer.concat([
      batch([{ key: 'a', value: '1' }, { key: null, value: 'two', timestampDelta: -5 }], { baseOffset: 10, baseTimestamp: 1_700_000_000_000 }),
      batch([{ key: 'c', value: null, headers: [['trace', 'x'], ['empty', null]] }], { baseOffset: 12, baseTimestamp: 2_000 }),
    ])
    const { next, messages } = decode(data, 10)
    assert.deepEqual(messages.map(summary), [
      [10, 'a', '1', 1_700_000_000_000],
      [11, null, 'two', 1_699_999_999_995],
      [12, 'c', null, 2_000],
    ])
    assert.deepEqual(messages[2]?.headers?.map((h) => [h.key, text(h.value)]), [['trace', 'x'], ['empty', null]])
    assert.equal(next, 13)
  })

  it('leaves out records before the position fetched (a batch starts before it)', () => {
    const data = batch([{ key: 'a', value: '1' }, { key: 'b', value: '2' }, { key: 'c', value: '3' }], { baseOffset: 100 })
    const { next, messages } = decode(data, 102)
    assert.deepEqual(messages.map((m) => m.offset), [102])
    assert.equal(next, 103)
  })

  it('leaves a batch cut short at the end of the response for the next fetch', () => {
    const whole = batch([{ key: 'a', value: '1' }], { baseOffset: 0 })
    const cut = batch([{ key: 'b', value: '2' }, { key: 'c', value: '3' }], { baseOffset: 1 })
    const { next, messages } = decode(Buffer.concat([whole, cut.subarray(0, cut.length - 3)]), 0)
    assert.deepEqual(messages.map((m) => m.offset), [0])
    assert.equal(next, 1)
  })

  it('reads timestamp deltas beyond 32 bits', () => {
    const { messages } = decode(batch([{ key: 'a', value: '1', timestampDelta: 2 ** 33 + 1 }, { key: 'b', value: '2', timestampDelta: -(2 ** 31) - 7 }], { baseOffset: 0, baseTimestamp: 2 ** 40 }), 0)
    assert.deepEqual(messages.map((m) => m.timestamp), [2 ** 40 + 2 ** 33 + 1, 2 ** 40 - 2 ** 31 - 7])
  })

  it('gives the broker time to every record of a batch with log-append time', () => {
    const { messages } = decode(batch([{ key: 'a', value: '1' }, { key: 'b', value: '2' }], { baseOffset: 0, baseTimestamp: 5, logAppendTime: 9_999 }), 0)
    assert.deepEqual(messages.map((m) => m.timestamp), [9_999, 9_999])
  })

  it('decompresses a compressed batch', () => {
    const { next, messages } = decode(batch([{ key: 'a', value: 'x'.repeat(500) }, { key: 'b', value: 'y' }], { baseOffset: 7, gzip: true }), 7)
    assert.deepEqual(messages.map((m) => [m.offset, text(m.key), text(m.value)?.length]), [
      [7, 'a', 500],
      [8, 'b', 1],
    ])
    assert.equal(next, 9)
  })

  it('never reads a control batch as records, and moves past it', () => {
    const data = Buffer.concat([
      batch([{ key: 'a', value: '1' }], { baseOffset: 0, producerId: 5n, transactional: true }),
      batch([], { baseOffset: 1, producerId: 5n, marker: 1 }),
    ])
    const { next, messages } = decode(data, 0)
    assert.deepEqual(messages.map((m) => m.offset), [0])
    assert.equal(next, 2)
  })

  it('under read_committed, skips an aborted transaction up to its abort marker, and keeps the other producers and later transactions', () => {
    const data = Buffer.concat([
      batch([{ key: 'a', value: 'aborted' }], { baseOffset: 0, producerId: 7n, transactional: true }),
      batch([{ key: 'b', value: 'other' }], { baseOffset: 1, producerId: 8n, transactional: true }),
      batch([{ key: 'c', value: 'aborted too' }], { baseOffset: 2, producerId: 7n, transactional: true }),
      batch([], { baseOffset: 3, producerId: 7n, marker: 0 }),
      batch([], { baseOffset: 4, producerId: 8n, marker: 1 }),
      batch([{ key: 'd', value: 'committed' }], { baseOffset: 5, producerId: 7n, transactional: true }),
      batch([], { baseOffset: 6, producerId: 7n, marker: 1 }),
      batch([{ key: 'e', value: 'plain' }], { baseOffset: 7 }),
    ])
    const { next, messages } = decode(data, 0, [{ producerId: 7n, firstOffset: 0 }])
    assert.deepEqual(messages.map((m) => [m.offset, text(m.value)]), [
      [1, 'other'],
      [5, 'committed'],
      [7, 'plain'],
    ])
    assert.equal(next, 8)
  })

  it('an aborted transaction starts at its first offset: the producer\'s earlier committed transaction is kept', () => {
    const data = Buffer.concat([
      batch([{ key: 'a', value: 'committed' }], { baseOffset: 0, producerId: 7n, transactional: true }),
      batch([], { baseOffset: 1, producerId: 7n, marker: 1 }),
      batch([{ key: 'b', value: 'aborted' }], { baseOffset: 2, producerId: 7n, transactional: true }),
      batch([], { baseOffset: 3, producerId: 7n, marker: 0 }),
    ])
    const { next, messages } = decode(data, 0, [{ producerId: 7n, firstOffset: 2 }])
    assert.deepEqual(messages.map((m) => text(m.value)), ['committed'])
    assert.equal(next, 4)
  })

  it("a response that starts at an aborted transaction's marker keeps the producer's next transaction", () => {
    // The transaction began at 11 and its marker is at 21, where this fetch starts (the last fetch
    // ended at its records): the broker still lists it as aborted.
    const data = Buffer.concat([
      batch([], { baseOffset: 21, producerId: 7n, marker: 0 }),
      batch([{ key: 'a', value: 'committed' }, { key: 'b', value: 'committed too' }], { baseOffset: 22, producerId: 7n, transactional: true }),
      batch([], { baseOffset: 24, producerId: 7n, marker: 1 }),
    ])
    const { next, messages } = decode(data, 21, [{ producerId: 7n, firstOffset: 11 }])
    assert.deepEqual(messages.map((m) => [m.offset, text(m.value)]), [
      [22, 'committed'],
      [23, 'committed too'],
    ])
    assert.equal(next, 25)
  })

  it("reads batches written by another client's producer code (@platformatic/kafka), compressed or not (property)", () => {
    const message = fc.record({
      key: fc.option(fc.string({ maxLength: 20 }), { nil: undefined }),
      value: fc.string({ maxLength: 200 }),
      // Deltas within a batch below 2^30: @platformatic/kafka 1.35 writes a larger delta wrongly (2^31 as -1).
      timestamp: fc.integer({ min: 1_700_000_000_000, max: 1_700_000_000_000 + 2 ** 30 }),
    })
    fc.assert(
      fc.property(fc.array(fc.array(message, { minLength: 1, maxLength: 20 }), { minLength: 1, maxLength: 5 }), fc.boolean(), (batches, gzip) => {
        let base = 0
        const parts: Buffer[] = []
        const expected: Array<[number, string | null, string, number]> = []
        for (const messages of batches) {
          const written = createRecordsBatch(
            messages.map((m) => ({ topic: 't', key: m.key === undefined ? undefined : Buffer.from(m.key), value: Buffer.from(m.value), timestamp: BigInt(m.timestamp) })),
            gzip ? { compression: 'gzip' } : {},
          ).buffer
          const b = Buffer.from(written)
          b.writeBigInt64BE(BigInt(base), 0)
          parts.push(b)
          messages.forEach((m, i) => expected.push([base + i, m.key ?? null, m.value, m.timestamp]))
          base += messages.length
        }
        const { next, messages } = decode(Buffer.concat(parts), 0)
        assert.deepEqual(messages.map(summary), expected)
        assert.equal(next, base)
      }),
    )
  })

  it('refuses a batch of an old message format, naming it', () => {
    const b = batch([{ key: 'a', value: '1' }], { baseOffset: 3 })
    b.writeInt8(1, 16)
    assert.throws(() => decode(b, 0), /record batch at offset 3 has message format 1/)
  })
})
