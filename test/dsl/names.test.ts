import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { BufferConfig, Named, Serdes, StreamsBuilder, Suppressed, TimeWindows } from '../../src/index.js'
import type { KStream, Topology, Windowed } from '../../src/index.js'

const str = { keySerde: Serdes.String(), valueSerde: Serdes.String() }

/** The stores of a topology's tasks, by name. */
function stores(topology: Topology): string[] {
  return topology.subtopologies().flatMap((s) => s.stores.map((b) => b.name))
}

function views(b: StreamsBuilder): KStream<string, string> {
  return b.stream<string, string>('views', str)
}

// Kafka Streams' rule (GroupedStreamAggregateBuilder, KGroupedTableImpl, KStreamImpl.repartitionForJoin):
// an aggregation's repartition topic is named after the grouping, else after the aggregation's store; a
// store after its Materialized name, else <PREFIX>-STATE-STORE-<n>; a stream-table join's after the join.
describe('DSL names of internal topics and stores, as Kafka Streams names them', () => {
  it('a grouping name names the repartition topic, once for every aggregation of the grouped stream', () => {
    const b = new StreamsBuilder()
    const grouped = views(b).groupBy((_k, v) => v, { name: 'page-counts', keySerde: Serdes.String() })
    grouped.count()
    grouped.reduce((a, v) => a + v)
    const t = b.build()
    assert.deepEqual([...t.internalTopics()], ['page-counts-repartition'])
    assert.match(t.describe(), /Processor: page-counts \(stores: \[\]\)/, 'the key-selecting node takes the grouping name, as in Kafka Streams')
  })

  it('without a grouping name, each aggregation’s repartition topic is named after its store: the Materialized name, else a generated store name', () => {
    const b = new StreamsBuilder()
    const grouped = views(b).groupBy((_k, v) => v, { keySerde: Serdes.String() })
    grouped.count({ name: 'page-counts' })
    grouped.reduce((a, v) => a + v)
    const t = b.build()
    const generated = stores(t).find((s) => s !== 'page-counts') ?? ''
    assert.match(generated, /^KSTREAM-REDUCE-STATE-STORE-\d{10}$/)
    assert.deepEqual(stores(t).sort(), ['page-counts', generated].sort(), 'count(Materialized.as("page-counts")) makes the store page-counts')
    assert.deepEqual([...t.internalTopics()].sort(), ['page-counts-repartition', `${generated}-repartition`].sort())
    assert.doesNotMatch(t.describe(), /KEY-SELECT-\d{10}-repartition|-store\b/)
  })

  it('groupByKey after a key change: the same rule; windowed aggregations too', () => {
    const b = new StreamsBuilder()
    const rekeyed = views(b).selectKey((_k, v) => v)
    rekeyed.groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(10)).count({ name: 'per-page-window' })
    rekeyed.groupByKey({ name: 'pages' }).count()
    const t = b.build()
    const unnamed = stores(t).find((s) => s.startsWith('KSTREAM-AGGREGATE-STATE-STORE-'))
    assert.ok(unnamed !== undefined, stores(t).join(', '))
    assert.deepEqual(stores(t).sort(), ['per-page-window', unnamed].sort())
    assert.deepEqual([...t.internalTopics()].sort(), ['pages-repartition', 'per-page-window-repartition'])
  })

  it('a table grouped by a new key: the grouping name, else the store', () => {
    const b = new StreamsBuilder()
    const users = b.table<string, string>('users', str)
    users.groupBy((_k, v) => ({ key: v, value: v }), { name: 'by-region', keySerde: Serdes.String(), valueSerde: Serdes.String() }).count({ name: 'users-per-region' })
    users.groupBy((k, v) => ({ key: v, value: k }), { keySerde: Serdes.String(), valueSerde: Serdes.String() }).count({ name: 'regions' })
    const t = b.build()
    assert.deepEqual([...t.internalTopics()].sort(), ['by-region-repartition', 'regions-repartition'])
    assert.ok(stores(t).includes('users-per-region') && stores(t).includes('regions'), stores(t).join(', '))
  })

  it('a stream-table join after a key change: the join’s name, else the stream’s node', () => {
    const b = new StreamsBuilder()
    const table = b.table<string, string>('regions', str)
    const stream = views(b)
    stream.selectKey((_k, v) => v, Named.as('by-page')).join(table, (v, r) => v + r, { name: 'lookup' }).to('out', str)
    stream.selectKey((_k, v) => v, Named.as('by-page-2')).join(table, (v, r) => v + r).to('out2', str)
    assert.deepEqual([...b.build().internalTopics()].sort(), ['by-page-2-repartition', 'lookup-repartition'])
  })

  it('a cogroup: each re-keyed grouping through its name, else the store; two unnamed ones, whose topics would collide, are refused', () => {
    const b = new StreamsBuilder()
    const byPage = views(b).groupBy((_k, v) => v, { name: 'by-page', keySerde: Serdes.String() })
    const clicks = b.stream<string, string>('clicks', str).groupBy((_k, v) => v, { keySerde: Serdes.String() })
    byPage.cogroup<string>((_k, v, agg) => agg + v).cogroup(clicks, (_k, v, agg) => agg + v).aggregate(() => '', { name: 'activity' })
    const t = b.build()
    assert.deepEqual([...t.internalTopics()].sort(), ['activity-repartition', 'by-page-repartition'])
    assert.deepEqual(stores(t), ['activity'])

    const c = new StreamsBuilder()
    const one = c.stream<string, string>('a', str).groupBy((_k, v) => v)
    const two = c.stream<string, string>('b', str).groupBy((_k, v) => v)
    assert.throws(
      () => one.cogroup<string>((_k, v, agg) => agg + v).cogroup(two, (_k, v, agg) => agg + v).aggregate(() => '', { name: 'both' }),
      /cogroup "both": several of its grouped streams need a repartition topic .*both-repartition.*name their groupings/,
    )
  })

  it('a suppression’s buffer: <name>-store when named, else KTABLE-SUPPRESS-STATE-STORE-<n>', () => {
    const b = new StreamsBuilder()
    const counts = views(b).groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(10)).count({ name: 'counts' })
    counts.suppress(Suppressed.untilWindowCloses<Windowed<string>, number>(BufferConfig.unbounded()).withName('final'))
    counts.suppress(Suppressed.untilWindowCloses<Windowed<string>, number>(BufferConfig.unbounded()))
    const names = stores(b.build())
    assert.ok(names.includes('final-store'), names.join(', '))
    assert.ok(
      names.some((s) => /^KTABLE-SUPPRESS-STATE-STORE-\d{10}$/.test(s)),
      names.join(', '),
    )
  })
})
