import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Produced, Serdes, StreamsBuilder } from '../../src/index.js'
import type { Serde, Topology } from '../../src/index.js'
import { TopologyTestDriver } from '../../src/testing/index.js'

const str = { keySerde: Serdes.String(), valueSerde: Serdes.String() }
const FALLBACK = 'JSON (fallback: none given or known)'

/** The serdes line of each sink of the topology's description, by sink name. */
function sinkSerdes(topology: Topology): Record<string, string> {
  const out: Record<string, string> = {}
  for (const m of topology.describe().matchAll(/ {4}Sink: (\S+) \(topic: \S+\)\n {6}<-- .*\n {6}serdes: (.*)\n/g)) out[m[1] ?? ''] = m[2] ?? ''
  return out
}

/** Orders joined with customers, by a joiner that returns strings: the DSL knows no serde of the result. */
function joinToOut(b: StreamsBuilder, produced?: Produced<string, string>): void {
  const customers = b.table<string, string>('customers', str)
  b.stream<string, string>('orders', str)
    .join(customers, (order, customer) => `${order} for ${customer}`)
    .to('out', { name: 'joined-out', ...produced })
}

describe("a sink's serdes: shown by describe(), a fallback to JSON marked", () => {
  it('describe() shows the key and value serde of each sink, and marks JSON chosen for want of a serde', () => {
    const b = new StreamsBuilder()
    joinToOut(b)
    const source = b.stream<string, string>('clicks', str)
    source.filter(() => true).to('kept', { name: 'known-from-upstream' })
    source.mapValues((v) => v.length).to('lengths', { name: 'given', ...Produced.with(Serdes.String(), Serdes.Long()) })
    source.map((k, v) => ({ key: [k], value: { v } })).to('pairs', { name: 'neither' })
    const upper: Serde<string> = { name: 'Upper', serialize: (s) => (s === null ? null : Buffer.from(s.toUpperCase())), deserialize: (d) => (d === null ? null : Buffer.from(d).toString()) }
    source.mapValues((v) => v).to('upper', { name: 'own-serde', valueSerde: upper })
    assert.deepEqual(sinkSerdes(b.build()), {
      'joined-out': `key String, value ${FALLBACK}`,
      'known-from-upstream': 'key String, value String',
      given: 'key String, value Long',
      neither: `key ${FALLBACK}, value ${FALLBACK}`,
      'own-serde': `key String, value Upper`,
    })
  })

  it('a builder default serde is no fallback; a repartition topic shows the serdes it is written with', () => {
    const b = new StreamsBuilder({ defaultValueSerde: Serdes.String() })
    joinToOut(b)
    b.stream<string, string>('clicks', str)
      .selectKey((_k, v) => v.length)
      .groupByKey()
      .count({ name: 'per-length' })
      .toStream()
      .to('counts', { name: 'counts-out' })
    const t = b.build()
    const serdes = sinkSerdes(t)
    assert.equal(serdes['joined-out'], 'key String, value String')
    assert.equal(serdes['counts-out'], `key ${FALLBACK}, value Long`, 'the key selected was given no serde, and kept the fallback through the grouping')
    const repartition = Object.entries(serdes).filter(([name]) => !name.endsWith('-out'))
    assert.deepEqual(repartition, [[repartition[0]?.[0], `key ${FALLBACK}, value String`]], 'the repartition sink, numbered')
  })

  it('writes what it wrote before: the JSON of the value, a string quoted', () => {
    const b = new StreamsBuilder()
    joinToOut(b)
    const driver = new TopologyTestDriver(b.build())
    driver.createInputTopic('customers', Serdes.String(), Serdes.String()).pipeInput('c', 'Ada', 1)
    driver.createInputTopic('orders', Serdes.String(), Serdes.String()).pipeInput('c', 'tea', 2)
    assert.deepEqual(driver.createOutputTopic('out').readValuesToList(), ['tea for Ada'])
    driver.close()
    const sink = b.build().subtopologies().flatMap((sub) => sub.nodes).find((node) => node.name === 'joined-out')
    assert.ok(sink?.kind === 'sink')
    assert.equal(Buffer.from(sink.valueSerde.serialize('tea for Ada', 'out') ?? []).toString(), '"tea for Ada"')
    assert.deepEqual(sink.valueSerde.serialize({ n: 1 }, 'out'), Serdes.JSON().serialize({ n: 1 }, 'out'))
  })
})
