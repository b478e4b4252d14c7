import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { inspect } from 'node:util'
import fc from '../helpers/fc.js'
import { NO_HEADERS, Serdes } from '../../src/index.js'
import type { Serde } from '../../src/index.js'
import { KafkaRecordCollector } from '../../src/kafka/record-collector.js'
import { TopicRegistry } from '../../src/embedded/log/topics.js'

type Sent = { topic: string; partition: number; key: Uint8Array | null; value: Uint8Array | null; timestamp: number }

function collector(partitions: number, names = new Map([['out', 'out']])): { c: KafkaRecordCollector; sent: Sent[] } {
  const sent: Sent[] = []
  const counts = new Map([...names.values()].map((n) => [n, partitions]))
  const c = new KafkaRecordCollector(names, counts, (topic, partition, key, value, timestamp) => void sent.push({ topic, partition, key, value, timestamp }))
  return { c, sent }
}

describe('the Kafka runtime\'s record collector', () => {
  it('puts every key in the partition the embedded log puts it in, null keys included (property)', () => {
    const serdes: Array<[string, Serde<unknown>, fc.Arbitrary<unknown>]> = [
      ['String', Serdes.String() as Serde<unknown>, fc.option(fc.string(), { nil: null })],
      ['JSON', Serdes.JSON() as Serde<unknown>, fc.option(fc.jsonValue(), { nil: null })],
      ['Double', Serdes.Double() as Serde<unknown>, fc.double({ noNaN: true })],
      ['Bytes', Serdes.Bytes() as Serde<unknown>, fc.option(fc.uint8Array({ maxLength: 20 }), { nil: null })],
    ]
    for (const [name, serde, keys] of serdes) {
      fc.assert(
        fc.property(fc.integer({ min: 1, max: 12 }), fc.array(keys, { maxLength: 40 }), (partitions, batch) => {
          const embedded = new TopicRegistry(partitions)
          const { c } = collector(partitions)
          for (const key of batch) {
            const want = embedded.send('out', undefined, key, serde, 'v', Serdes.String() as Serde<unknown>, 1, NO_HEADERS)
            assert.equal(c.send('out', undefined, key, serde, 'v', Serdes.String() as Serde<unknown>, 1, NO_HEADERS), want, `${name} key ${inspect(key)}`)
          }
        }),
      )
    }
  })

  it('serializes at once, under the topic\'s name on the cluster, and checks a chosen partition', () => {
    const { c, sent } = collector(4, new Map([['by-value-repartition', 'app-by-value-repartition']]))
    assert.equal(c.partitionsFor('by-value-repartition'), 4)
    c.send('by-value-repartition', 2, 'k', Serdes.String() as Serde<unknown>, { n: 1 }, Serdes.JSON() as Serde<unknown>, 7, NO_HEADERS)
    assert.deepEqual(sent, [{ topic: 'app-by-value-repartition', partition: 2, key: Buffer.from('k'), value: Buffer.from('{"n":1}'), timestamp: 7 }])
    assert.throws(() => c.send('by-value-repartition', 4, 'k', Serdes.String() as Serde<unknown>, 1, Serdes.JSON() as Serde<unknown>, 7, NO_HEADERS), /has 4 partitions; partition 4 does not exist/)
    assert.throws(() => c.partitionsFor('elsewhere'), /"elsewhere" is not a topic this application writes on the cluster/)
  })
})
