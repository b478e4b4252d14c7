import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  EmbeddedRuntime,
  FailOnInvalidTimestamp,
  LogAndSkipOnInvalidTimestamp,
  PunctualError,
  Serdes,
  silentLogger,
  StreamsBuilder,
  TimeWindows,
  Topology,
  UsePartitionTimeOnInvalidTimestamp,
  UseWallClockOnInvalidTimestamp,
  WallclockTimestampExtractor,
} from '../../src/index.js'
import type { ErrorContext, TimestampExtractor, Windowed } from '../../src/index.js'
import { TopologyTestDriver } from '../../src/testing/index.js'

interface Order {
  readonly id: string
  readonly placedAt?: unknown
}

const orderSerde = Serdes.JSON<Order>()

/** Event time read from the order's `placedAt`. */
const placedAt = (r: { value: Order }) => r.value.placedAt

/** A topology that forwards each order with the event time it was given, as `id@time`. */
function echoTimes(extractor: TimestampExtractor<string, Order> | undefined): Topology {
  const b = new StreamsBuilder()
  b.stream<string, Order>('orders', { valueSerde: orderSerde, ...(extractor === undefined ? {} : { timestampExtractor: extractor }) })
    .process<string, string>(() => {
      let forward: (r: { key: string; value: string; timestamp: number; headers: readonly [] }) => void
      return {
        init(ctx) {
          forward = (r) => ctx.forward(r)
        },
        process(r) {
          forward({ key: r.key, value: `${r.value.id}@${r.timestamp}`, timestamp: r.timestamp, headers: [] })
        },
      }
    })
    .to('times', { keySerde: Serdes.String(), valueSerde: Serdes.String() })
  return b.build()
}

function run(topology: Topology, orders: ReadonlyArray<[Order, number]>, options: ConstructorParameters<typeof TopologyTestDriver>[1] = {}): { out: Array<string | null>; dropped: ErrorContext[] } {
  const dropped: ErrorContext[] = []
  const driver = new TopologyTestDriver(topology, {
    wallClockStartMs: 1_000_000,
    errorHandler: (ctx) => {
      dropped.push(ctx)
      return ctx.reason === 'invalid-timestamp' ? 'continue' : 'fail'
    },
    ...options,
  })
  const input = driver.createInputTopic('orders', Serdes.String(), orderSerde)
  for (const [order, ts] of orders) input.pipeInput('k', order, ts)
  const out = driver.createOutputTopic('times', Serdes.String(), Serdes.String()).readValuesToList()
  driver.close()
  return { out, dropped }
}

describe('timestamp extractors (Kafka Streams TimestampExtractor)', () => {
  it('a custom extractor takes event time from the payload; windows follow it, not the record timestamp', () => {
    const b = new StreamsBuilder()
    const fromPayload: TimestampExtractor<string, Order> = { extract: (r) => r.value.placedAt as number }
    b.stream<string, Order>('orders', { valueSerde: orderSerde, timestampExtractor: fromPayload })
      .groupByKey()
      .windowedBy(TimeWindows.ofSizeWithNoGrace(10))
      .count()
      .toStream()
      .map((w: Windowed<string>, n: number | null) => ({ key: `${w.key}@${w.window.start}`, value: n }))
      .to('counts', { keySerde: Serdes.String(), valueSerde: Serdes.Long() })
    const driver = new TopologyTestDriver(b.build())
    const input = driver.createInputTopic('orders', Serdes.String(), orderSerde)
    // Record timestamps all 1000; the payload's times spread them over two windows.
    input.pipeInput('c1', { id: 'o1', placedAt: 3 }, 1000)
    input.pipeInput('c1', { id: 'o2', placedAt: 12 }, 1000)
    input.pipeInput('c1', { id: 'o3', placedAt: 15 }, 1000)
    assert.deepEqual(driver.createOutputTopic('counts', Serdes.String(), Serdes.Long()).readKeyValuesToList(), [
      { key: 'c1@0', value: 1 },
      { key: 'c1@10', value: 1 },
      { key: 'c1@10', value: 2 },
    ])
    driver.close()
  })

  it('the extracted time is the record time downstream: what a processor sees and what a sink writes', () => {
    const { out } = run(echoTimes({ extract: (r) => (r.value.placedAt as number) * 2 }), [
      [{ id: 'a', placedAt: 5 }, 1],
      [{ id: 'b', placedAt: 7 }, 2],
    ])
    assert.deepEqual(out, ['a@10', 'b@14'])
  })

  it('the extractor gets the record with its place and timestamp, the partition time and the wall clock', () => {
    const seen: unknown[] = []
    const spy: TimestampExtractor<string, Order> = {
      extract(record, partitionTime, wallClockMs) {
        seen.push({ topic: record.topic, partition: record.partition, offset: record.offset, key: record.key, id: record.value.id, timestamp: record.timestamp, partitionTime, wallClockMs })
        return record.timestamp
      },
    }
    run(echoTimes(spy), [
      [{ id: 'a' }, 50],
      [{ id: 'b' }, 40],
    ])
    assert.deepEqual(seen, [
      { topic: 'orders', partition: 0, offset: 0, key: 'k', id: 'a', timestamp: 50, partitionTime: -1, wallClockMs: 1_000_000 },
      { topic: 'orders', partition: 0, offset: 1, key: 'k', id: 'b', timestamp: 40, partitionTime: 50, wallClockMs: 1_000_000 },
    ])
  })

  it('an extractor returning an invalid timestamp: the record goes to the error handler as invalid-timestamp and is skipped', () => {
    const { out, dropped } = run(echoTimes({ extract: (r) => r.value.placedAt as number }), [
      [{ id: 'a', placedAt: 5 }, 1],
      [{ id: 'b', placedAt: Number.NaN }, 2], // null once through JSON
      [{ id: 'c', placedAt: -3 }, 3],
      [{ id: 'd', placedAt: 1.5 }, 4],
      [{ id: 'e', placedAt: 9 }, 5],
    ])
    assert.deepEqual(out, ['a@5', 'e@9'])
    assert.deepEqual(
      dropped.map((d) => [d.reason, d.offset]),
      [
        ['invalid-timestamp', 1],
        ['invalid-timestamp', 2],
        ['invalid-timestamp', 3],
      ],
    )
    assert.match(String((dropped[0]?.error as Error).message), /timestamp extractor returned null for the record's timestamp 2/)
  })

  describe('invalid-timestamp policies, on the record timestamp or on a payload field', () => {
    const orders: Array<[Order, number]> = [
      [{ id: 'a', placedAt: 100 }, 1],
      [{ id: 'b', placedAt: 'yesterday' }, 2],
      [{ id: 'c', placedAt: 90 }, 3],
    ]

    it('FailOnInvalidTimestamp stops with INVALID_TIMESTAMP naming the record', () => {
      assert.throws(
        () => run(echoTimes(new FailOnInvalidTimestamp<string, Order>(placedAt)), orders),
        (err: unknown) => err instanceof PunctualError && err.code === 'INVALID_TIMESTAMP' && /record orders-0@1 has an invalid timestamp "yesterday" \(FailOnInvalidTimestamp\)/.test(err.message),
      )
    })

    it('LogAndSkipOnInvalidTimestamp skips the record through the error handler', () => {
      const { out, dropped } = run(echoTimes(new LogAndSkipOnInvalidTimestamp<string, Order>(placedAt)), orders)
      assert.deepEqual(out, ['a@100', 'c@90'])
      assert.deepEqual(
        dropped.map((d) => [d.reason, d.topic, d.offset]),
        [['invalid-timestamp', 'orders', 1]],
      )
    })

    it('UsePartitionTimeOnInvalidTimestamp gives the largest time read from the partition so far', () => {
      const { out, dropped } = run(echoTimes(new UsePartitionTimeOnInvalidTimestamp<string, Order>(placedAt)), [...orders, [{ id: 'd' }, 4]])
      assert.deepEqual(out, ['a@100', 'b@100', 'c@90', 'd@100'])
      assert.deepEqual(dropped, [])
    })

    it('UsePartitionTimeOnInvalidTimestamp before any valid time stops with INVALID_TIMESTAMP', () => {
      assert.throws(
        () => run(echoTimes(new UsePartitionTimeOnInvalidTimestamp<string, Order>(placedAt)), [[{ id: 'x' }, 1]]),
        (err: unknown) => err instanceof PunctualError && err.code === 'INVALID_TIMESTAMP' && /orders-0@0 .*its partition has no time yet/.test(err.message),
      )
    })

    it('UseWallClockOnInvalidTimestamp gives the wall-clock time (the driver\'s manual clock)', () => {
      const { out } = run(echoTimes(new UseWallClockOnInvalidTimestamp<string, Order>(placedAt)), orders)
      assert.deepEqual(out, ['a@100', 'b@1000000', 'c@90'])
    })

    it('without a source, the policies apply to the record timestamp, which is valid here', () => {
      const { out } = run(echoTimes(new FailOnInvalidTimestamp<string, Order>()), orders)
      assert.deepEqual(out, ['a@1', 'b@2', 'c@3'])
    })
  })

  it('WallclockTimestampExtractor: every record at the wall-clock time it is read', () => {
    const b = echoTimes(new WallclockTimestampExtractor())
    const driver = new TopologyTestDriver(b, { wallClockStartMs: 500 })
    const input = driver.createInputTopic('orders', Serdes.String(), orderSerde)
    input.pipeInput('k', { id: 'a' }, 1)
    driver.advanceWallClockTime(250)
    input.pipeInput('k', { id: 'b' }, 2)
    assert.deepEqual(driver.createOutputTopic('times', Serdes.String(), Serdes.String()).readValuesToList(), ['a@500', 'b@750'])
    driver.close()
  })

  it('an extractor that throws stops processing, naming the source and the record', () => {
    const b = new StreamsBuilder()
    b.stream<string, Order>('orders', { valueSerde: orderSerde, name: 'orders-in', timestampExtractor: { extract: () => { throw new TypeError('no placedAt') } } }).to('times', { valueSerde: orderSerde })
    const driver = new TopologyTestDriver(b.build())
    assert.throws(
      () => driver.createInputTopic('orders', Serdes.String(), orderSerde).pipeInput('k', { id: 'a' }, 1),
      (err: unknown) => err instanceof PunctualError && /the timestamp extractor of source "orders-in" threw on record orders-0@0: no placedAt/.test(err.message) && err.cause instanceof TypeError,
    )
  })

  it('defaultTimestampExtractor applies to sources that set none, not to repartition topics', () => {
    // The default reads `placedAt` of an Order; after the re-key the values are strings, whose
    // repartitioned records keep the time they were written with.
    const b = new StreamsBuilder()
    b.stream<string, Order>('orders', { valueSerde: orderSerde })
      .map((_k, o) => ({ key: o.id, value: o.id }))
      .groupByKey({ keySerde: Serdes.String(), valueSerde: Serdes.String() })
      .windowedBy(TimeWindows.ofSizeWithNoGrace(100))
      .count()
      .toStream()
      .map((w: Windowed<string>, n: number | null) => ({ key: `${w.key}@${w.window.start}`, value: n }))
      .to('counts', { keySerde: Serdes.String(), valueSerde: Serdes.Long() })
    const driver = new TopologyTestDriver(b.build(), { defaultTimestampExtractor: new FailOnInvalidTimestamp<string, Order>(placedAt) })
    const input = driver.createInputTopic('orders', Serdes.String(), orderSerde)
    input.pipeInput('x', { id: 'a', placedAt: 250 }, 1)
    input.pipeInput('x', { id: 'a', placedAt: 420 }, 2)
    assert.deepEqual(driver.createOutputTopic('counts', Serdes.String(), Serdes.Long()).readKeyValuesToList(), [
      { key: 'a@200', value: 1 },
      { key: 'a@400', value: 1 },
    ])
    driver.close()
  })

  it('a source\'s own extractor wins over the default; null keeps the record timestamp', () => {
    const topology = new Topology()
      .addSource<string, Order>('own', 'orders', { valueSerde: orderSerde, timestampExtractor: { extract: () => 7 } })
      .addSource<string, Order>('plain', 'other', { valueSerde: orderSerde, timestampExtractor: null })
      .addProcessor<string, Order, string, string>('echo', () => {
        let fwd: (k: string, v: string, t: number) => void
        return {
          init(ctx) {
            fwd = (k, v, t) => ctx.forward({ key: k, value: v, timestamp: t, headers: [] })
          },
          process(r) {
            fwd(r.key, `${r.value.id}@${r.timestamp}`, r.timestamp)
          },
        }
      }, 'own', 'plain')
      .addSink('out', 'times', {}, 'echo')
    const driver = new TopologyTestDriver(topology, { defaultTimestampExtractor: { extract: () => 99 } })
    driver.createInputTopic('orders', Serdes.String(), orderSerde).pipeInput('k', { id: 'a' }, 1)
    driver.createInputTopic('other', Serdes.String(), orderSerde).pipeInput('k', { id: 'b' }, 8)
    assert.deepEqual(driver.createOutputTopic('times', Serdes.String(), Serdes.String()).readValuesToList(), ['a@7', 'b@8'])
    driver.close()
  })

  it('what is not an extractor is refused where it is given', () => {
    assert.throws(
      () => new StreamsBuilder().stream('in', { timestampExtractor: {} as TimestampExtractor<string, string> }),
      (err: unknown) => err instanceof PunctualError && err.code === 'INVALID_CONFIG' && /source "KSTREAM-SOURCE-0000000000": timestampExtractor must be an object with an extract/.test(err.message),
    )
    assert.throws(
      () => new TopologyTestDriver(echoTimes(undefined), { defaultTimestampExtractor: (() => 1) as unknown as TimestampExtractor }),
      (err: unknown) => err instanceof PunctualError && /TopologyTestDriver: defaultTimestampExtractor: timestampExtractor must be an object/.test(err.message),
    )
    assert.throws(
      () => new StreamsBuilder().globalTable('in', { timestampExtractor: new WallclockTimestampExtractor() }),
      /globalTable "in": a timestamp extractor has no effect on a global table/,
    )
  })
})

describe('timestamp extractors on the embedded runtime', () => {
  it('defaultTimestampExtractor in the config gives the records their payload time, and the sink writes it', async () => {
    const topology = new Topology().addSource<string, Order>('src', 'orders', { valueSerde: orderSerde }).addSink('sink', 'out', { valueSerde: orderSerde }, 'src')
    const rt = new EmbeddedRuntime(topology, { applicationId: 'extract', logger: silentLogger, defaultTimestampExtractor: new LogAndSkipOnInvalidTimestamp<string, Order>(placedAt) })
    const got: Array<[string, number]> = []
    rt.subscribe<string, Order>('out', (r) => got.push([r.value!.id, r.timestamp]))
    await rt.start()
    const producer = rt.producer<string, Order>('orders')
    producer.send('k', { id: 'a', placedAt: 42 }, 1)
    producer.send('k', { id: 'b', placedAt: 'soon' }, 2)
    producer.send('k', { id: 'c', placedAt: 7 }, 3)
    await rt.stop({ drain: true })
    assert.deepEqual(got, [
      ['a', 42],
      ['c', 7],
    ])
    assert.equal(rt.metrics().droppedRecords['invalid-timestamp'], 1)
  })

  it('the config refuses what is not an extractor, naming the setting', () => {
    assert.throws(
      () => new EmbeddedRuntime(new Topology().addSource('s', 'in'), { applicationId: 'x', logger: silentLogger, defaultTimestampExtractor: 5 as unknown as TimestampExtractor }),
      /EmbeddedRuntime config: defaultTimestampExtractor: timestampExtractor must be an object with an extract\(record, partitionTime, wallClockMs\) method, got number/,
    )
  })
})
