import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { murmur2, partitionForKey } from '../../src/processor/murmur2.js'
import { TopicRegistry } from '../../src/embedded/log/topics.js'
import { NO_HEADERS } from '../../src/processor/api.js'

// Values Kafka's own UtilsTest asserts for Utils.murmur2.
const KAFKA_VECTORS: Array<[string, number]> = [
  ['21', -973932308],
  ['foobar', -790332482],
  ['a-little-bit-long-string', -985981536],
  ['a-little-bit-longer-string', -1486304829],
  ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
  ['abc', 479470107],
]

describe("murmur2 matches Kafka's default partitioner", () => {
  for (const [input, expected] of KAFKA_VECTORS) {
    it(`murmur2("${input}") = ${expected}`, () => {
      assert.equal(murmur2(Buffer.from(input)), expected)
    })
  }

  it('partitionForKey is toPositive(murmur2) % n', () => {
    assert.equal(partitionForKey(Buffer.from('foobar'), 7), (-790332482 & 0x7fffffff) % 7)
  })
})

describe('TopicRegistry partitioning', () => {
  it('puts every record of a key into the same partition, murmur2-chosen', () => {
    const topics = new TopicRegistry(4)
    for (const key of ['a', 'b', 'c', 'a', 'b', 'a']) topics.sendBytes('t', undefined, Buffer.from(key), null, 0, NO_HEADERS)
    const logs = topics.partitions('t')
    for (const key of ['a', 'b', 'c']) {
      const p = partitionForKey(Buffer.from(key), 4)
      const count = logs[p]!.endOffset()
      assert.ok(count >= { a: 3, b: 2, c: 1 }[key]!)
    }
    assert.equal(logs.reduce((n, l) => n + l.endOffset(), 0), 6)
  })

  it('spreads null keys round robin', () => {
    const topics = new TopicRegistry(3)
    for (let i = 0; i < 6; i++) topics.sendBytes('t', undefined, null, null, 0, NO_HEADERS)
    assert.deepEqual(topics.partitions('t').map((l) => l.endOffset()), [2, 2, 2])
  })

  it('rejects a partition that does not exist, and a partition count that conflicts', () => {
    const topics = new TopicRegistry(2)
    assert.throws(() => topics.sendBytes('t', 5, null, null, 0, NO_HEADERS), /topic "t" has 2 partitions; partition 5 does not exist/)
    assert.throws(() => topics.create('t', 3), /already exists with 2 partitions, not 3/)
    assert.throws(() => topics.create('u', 0), /partitions must be an integer >= 1, got 0/)
  })
})

describe('in-memory topics keep typed records only for identity serdes', () => {
  it('a reader with the same identity serde gets the value itself; another serde gets the bytes', async () => {
    const { Serdes } = await import('../../src/processor/serdes.js')
    const { readValue } = await import('../../src/processor/record-io.js')
    const topics = new TopicRegistry(1)
    topics.send('t', undefined, 'k', Serdes.String() as never, 'héllo', Serdes.String() as never, 1, NO_HEADERS)
    const r = topics.partitions('t')[0]!.get(0)!
    assert.equal(r.valueSerde, Serdes.String(), 'stored typed')
    assert.equal(readValue(r, Serdes.String() as never, 't'), 'héllo')
    assert.deepEqual(readValue(r, Serdes.Bytes() as never, 't'), Buffer.from('héllo'))
  })

  it('a non-identity serde serializes at the writer, so its errors surface there', async () => {
    const { Serdes } = await import('../../src/processor/serdes.js')
    const topics = new TopicRegistry(1)
    assert.throws(() => topics.send('t', undefined, null, Serdes.Bytes() as never, 2 ** 40, Serdes.Integer() as never, 1, NO_HEADERS), /not a 32-bit integer/)
    topics.send('t', undefined, null, Serdes.Bytes() as never, { a: 1 }, Serdes.JSON() as never, 1, NO_HEADERS)
    const r = topics.partitions('t')[0]!.get(0)!
    assert.equal(r.valueSerde, undefined, 'stored as bytes')
    assert.deepEqual(Serdes.JSON().deserialize(r.value as Uint8Array, 't'), { a: 1 })
  })
})

describe('partitionForStringKey', () => {
  it('agrees with murmur2 over the UTF-8 bytes, ASCII or not (property)', async () => {
    const fc = (await import('fast-check')).default
    const { partitionForStringKey } = await import('../../src/processor/murmur2.js')
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.integer({ min: 1, max: 64 }), (s, n) => {
        assert.equal(partitionForStringKey(s, n), partitionForKey(Buffer.from(s, 'utf8'), n))
      }),
      { numRuns: 3000 },
    )
  })
})
