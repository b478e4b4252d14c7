import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Consumed, Grouped, Joined, JoinWindows, Materialized, Produced, QueryableStoreTypes, Serdes, Stores, StreamJoined, StreamsBuilder, TimeWindows, WallclockTimestampExtractor } from '../../src/index.js'
import type { VersionedStoreBuilder } from '../../src/index.js'
import type { Windowed } from '../../src/index.js'
import { TopologyTestDriver } from '../../src/testing/index.js'

describe("Kafka Streams' option factories (Consumed, Produced, Grouped, Materialized, Joined, StreamJoined)", () => {
  it('make plain option objects: the fields enumerable, each with... a new object', () => {
    const named = Materialized.as<string, number>('counts')
    const withSerde = named.withValueSerde(Serdes.Long()).withRetention(3_600_000)
    assert.deepEqual({ ...named }, { name: 'counts' }, 'with... leaves the object it is called on as it was')
    assert.deepEqual({ ...withSerde }, { name: 'counts', valueSerde: Serdes.Long(), retentionMs: 3_600_000 })
    assert.equal(JSON.stringify(Grouped.as('by-user')), '{"name":"by-user"}')
    const extractor = new WallclockTimestampExtractor()
    assert.deepEqual({ ...Consumed.with(Serdes.String(), undefined).withTimestampExtractor(extractor).withName('src') }, { keySerde: Serdes.String(), timestampExtractor: extractor, name: 'src' })
    assert.deepEqual({ ...Joined.as('enrich').withGracePeriod(500) }, { name: 'enrich', gracePeriodMs: 500 })
    assert.deepEqual({ ...StreamJoined.with(Serdes.String(), undefined, Serdes.Long()).withStoreName('pairs') }, { keySerde: Serdes.String(), otherValueSerde: Serdes.Long(), storeName: 'pairs' })
    const partitioner = () => 0
    assert.deepEqual({ ...Produced.with(Serdes.String(), Serdes.Long()).withStreamPartitioner(partitioner) }, { keySerde: Serdes.String(), valueSerde: Serdes.Long(), partitioner })
  })

  it('serve where their option types do: a pipeline written with them runs', () => {
    const b = new StreamsBuilder()
    const clicks = b.stream('clicks', Consumed.with(Serdes.String(), Serdes.String()).withName('clicks-source'))
    clicks
      .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
      .windowedBy(TimeWindows.ofSizeWithNoGrace(10))
      .count(Materialized.as<Windowed<string>, number>('per-window').withRetention(100))
      .toStream()
      .map((w: Windowed<string>, n: number | null) => ({ key: `${w.key}@${w.window.start}`, value: n }))
      .to('counts', Produced.with<string, number | null>(Serdes.String(), Serdes.Long()))
    const views = b.stream('views', Consumed.with(Serdes.String(), Serdes.String()))
    clicks
      .join(views, (c: string, v: string) => `${c}+${v}`, JoinWindows.ofTimeDifferenceWithNoGrace(5), StreamJoined.as<string, string, string>('clicks-views'))
      .to('pairs', Produced.with(Serdes.String(), Serdes.String()))
    const topology = b.build()
    assert.match(topology.describe(), /Source: clicks-source/)
    // As Kafka Streams' StreamJoined.as(storeName): the stores take the name, the processors keep theirs.
    assert.match(topology.describe(), /clicks-views-this-join-store/)
    assert.match(topology.describe(), /clicks-views-other-join-store/)
    assert.match(topology.describe(), /Processor: KSTREAM-JOINTHIS-\d+/)
    assert.doesNotMatch(topology.describe(), /Processor: clicks-views/)
    const driver = new TopologyTestDriver(topology)
    driver.createInputTopic('clicks', Serdes.String(), Serdes.String()).pipeInput('a', 'c1', 1)
    driver.createInputTopic('views', Serdes.String(), Serdes.String()).pipeInput('a', 'v1', 3)
    driver.createInputTopic('clicks', Serdes.String(), Serdes.String()).pipeInput('a', 'c2', 25)
    assert.deepEqual(driver.createOutputTopic('counts', Serdes.String(), Serdes.Long()).readKeyValuesToList(), [
      { key: 'a@0', value: 1 },
      { key: 'a@20', value: 1 },
    ])
    assert.deepEqual(driver.createOutputTopic('pairs', Serdes.String(), Serdes.String()).readValuesToList(), ['c1+v1'])
    // The retention given through withRetention keeps the closed window [0, 10) queryable.
    const store = driver.store('per-window', QueryableStoreTypes.windowStore<string, number>())
    assert.equal(store.fetch('a', 0), 1)
    driver.close()
  })
})

describe("a table's store: Materialized.as(name), or a versioned store as Kafka Streams declares one", () => {
  it('Materialized.as(Stores.persistentVersionedKeyValueStore(name, history)) makes a versioned table, queried by that name', () => {
    const versioned = Materialized.as(Stores.persistentVersionedKeyValueStore<string, string>('prices', 100))
    assert.deepEqual({ ...versioned }, { name: 'prices', historyRetentionMs: 100 })
    const b = new StreamsBuilder()
    const prices = b.table('prices-topic', Consumed.with(Serdes.String(), Serdes.String()), versioned)
    b.stream<string, string>('orders')
      .leftJoin(prices, (order, price) => `${order} at ${price ?? '?'}`)
      .to('priced', Produced.with(Serdes.String(), Serdes.String()))
    const driver = new TopologyTestDriver(b.build())
    const pricesIn = driver.createInputTopic<string, string>('prices-topic')
    pricesIn.pipeInput('apple', '1.00', 10)
    pricesIn.pipeInput('apple', '2.00', 20)
    driver.createInputTopic<string, string>('orders').pipeInput('apple', 'order-1', 15)
    assert.deepEqual(driver.createOutputTopic<string, string>('priced').readValuesToList(), ['order-1 at 1.00'], 'joined as of the order, not the latest')
    const store = driver.store('prices', QueryableStoreTypes.versionedKeyValueStore<string, string>())
    assert.deepEqual(store.get('apple', 15), { value: '1.00', timestamp: 10, validTo: 20 })
    assert.equal(store.get('pear'), undefined)
    driver.close()
  })

  it("a table's changes are written with Produced.with, though their values may be null (tombstones)", () => {
    const b = new StreamsBuilder()
    const seen: Array<string | null> = []
    b.table('t', Consumed.with(Serdes.String(), Serdes.String()))
      .toStream()
      .to('changes', Produced.with(Serdes.String(), Serdes.String()).withStreamPartitioner((_topic, _key, value) => {
        seen.push(value)
        return 0
      }))
    const driver = new TopologyTestDriver(b.build())
    const input = driver.createInputTopic<string, string | null>('t')
    input.pipeInput('k', 'v', 1)
    input.pipeInput('k', null, 2)
    assert.deepEqual(seen, ['v', null], 'the partitioner is given the tombstone')
    assert.deepEqual(driver.createOutputTopic<string, string | null>('changes').readValuesToList(), ['v', null])
    driver.close()
  })

  it('the plain object says the same; a global table is named the same way', () => {
    const b = new StreamsBuilder()
    b.table('a', {}, { name: 'a-store', historyRetentionMs: 5 })
    b.globalTable('g', {}, Materialized.as('g-store'))
    const driver = new TopologyTestDriver(b.build())
    driver.createInputTopic<string, string>('a').pipeInput('k', 'v', 1)
    driver.createInputTopic<string, string>('g').pipeInput('k', 'w', 1)
    assert.deepEqual(driver.store('a-store', QueryableStoreTypes.versionedKeyValueStore<string, string>()).get('k'), { value: 'v', timestamp: 1 })
    assert.equal(driver.store('g-store', QueryableStoreTypes.keyValueStore<string, string>()).get('k'), 'w')
    driver.close()
  })

  it('refuses what a table does not take, naming the table and the option', () => {
    const b = new StreamsBuilder()
    const legacy = { storeName: 'x' } as unknown as { name: string }
    assert.throws(() => b.table('t1', {}, legacy), /table "t1": a table's store is named with \{ name \} and versioned with \{ historyRetentionMs \}/)
    assert.throws(() => b.table('t2', {}, Materialized.as('x').withValueSerde(Serdes.Long())), /table "t2": materialized valueSerde has no effect on a table/)
    assert.throws(() => b.table('t3', {}, { historyRetentionMs: -1 }), /table "t3": historyRetentionMs must be an integer >= 0, got -1/)
    assert.throws(() => b.globalTable('g1', {}, { historyRetentionMs: 10 }), /globalTable "g1": a global table cannot be versioned/)
    const notAStore = { name: 'kv', build: () => ({}) } as unknown as VersionedStoreBuilder<string, unknown>
    assert.throws(() => Materialized.as(notAStore), /Materialized.as takes a store name, a key-value store \(Stores.persistentKeyValueStore\(name\), Stores.inMemoryKeyValueStore\(name\)\) or a versioned one .*, got/)
  })
})

describe("an aggregation's store chosen as Kafka Streams chooses it: Materialized.as(Stores.*KeyValueStore(name))", () => {
  it('takes the builder name, where the store lives and its serdes; the store answers queries by that name', () => {
    assert.deepEqual({ ...Materialized.as(Stores.inMemoryKeyValueStore<string, number>('counts')) }, { name: 'counts', storeType: 'inMemory' })
    assert.deepEqual({ ...Materialized.as(Stores.persistentKeyValueStore<string, number>('counts', { valueSerde: Serdes.Long() })) }, { name: 'counts', storeType: 'persistent', valueSerde: Serdes.Long() })
    const b = new StreamsBuilder()
    b.stream<string, string>('clicks').groupByKey().count(Materialized.as(Stores.inMemoryKeyValueStore<string, number>('clicks-per-user')))
    // A builder made without type arguments fits any aggregation; one whose types differ does not compile.
    b.stream<string, string>('likes').groupByKey().count(Materialized.as(Stores.persistentKeyValueStore('likes', { valueSerde: Serdes.Long() })))
    b.stream<string, string>('shares').groupByKey().count(Materialized.as(Stores.inMemoryKeyValueStore('shares')))
    // @ts-expect-error a store of string values does not hold counts
    const typeOnly = (): unknown => b.stream<string, string>('x').groupByKey().count(Materialized.as(Stores.inMemoryKeyValueStore<string, string>('x')))
    void typeOnly
    const driver = new TopologyTestDriver(b.build())
    const clicks = driver.createInputTopic<string, string>('clicks')
    clicks.pipeInput('u1', 'x', 1)
    clicks.pipeInput('u1', 'y', 2)
    assert.equal(driver.store('clicks-per-user', QueryableStoreTypes.keyValueStore<string, number>()).get('u1'), 2)
    driver.close()
  })
})
