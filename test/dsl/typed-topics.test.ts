import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { EmbeddedRuntime, Serdes, silentLogger, StreamsBuilder, Topic } from '../../src/index.js'
import type { Serde } from '../../src/index.js'
import { TopologyTestDriver } from '../../src/testing/index.js'

interface Order {
  readonly customer: string
  readonly cents: number
}

const orders = Topic.of('orders', Serdes.String(), Serdes.JSON<Order>())
const totals = Topic.of('totals', Serdes.String(), Serdes.Double())

/** Totals per customer, the topics declared once as typed handles. */
function topology(): ReturnType<StreamsBuilder['build']> {
  const b = new StreamsBuilder()
  b.stream(orders)
    .mapValues((o) => o.cents)
    .groupByKey({ keySerde: Serdes.String(), valueSerde: Serdes.Double() })
    .reduce((a, c) => a + c, { name: 'totals', valueSerde: Serdes.Double() })
    .toStream()
    .to(totals)
  return b.build()
}

describe('typed topics (Topic.of)', () => {
  it('stream(), to(), the test driver and the runtime take the handle, with its types and serdes', async () => {
    const driver = new TopologyTestDriver(topology())
    const input = driver.createInputTopic(orders)
    const output = driver.createOutputTopic(totals)
    input.pipeInput('c1', { customer: 'c1', cents: 250 }, 1)
    input.pipeInput('c1', { customer: 'c1', cents: 100 }, 2)
    assert.deepEqual(output.readKeyValuesToList(), [
      { key: 'c1', value: 250 },
      { key: 'c1', value: 350 },
    ])
    driver.close()

    const rt = new EmbeddedRuntime(topology(), { applicationId: 'typed-topics', logger: silentLogger })
    const seen: Array<[string | null, number | null]> = []
    rt.subscribe(totals, (r) => void seen.push([r.key, r.value]))
    await rt.start()
    rt.producer(orders).send('c2', { customer: 'c2', cents: 7 }, 1)
    await rt.idle()
    await rt.stop()
    assert.deepEqual(seen, [['c2', 7]])
  })

  it('a key or value of the wrong type fails to compile', () => {
    // Never called: the compiler checks it (npm run typecheck), and each line below must fail to compile.
    const typeOnly = (driver: TopologyTestDriver, rt: EmbeddedRuntime): void => {
      // @ts-expect-error an Order has cents, not amount
      driver.createInputTopic(orders).pipeInput('c1', { customer: 'c1', amount: 1 }, 1)
      // @ts-expect-error a topic's keys are strings
      rt.producer(orders).send(42, { customer: 'c1', cents: 1 })
      // @ts-expect-error the listener of a topic of numbers gets numbers
      rt.subscribe(totals, (r: { key: string | null; value: string | null }) => void r)
      // @ts-expect-error an output topic of numbers reads numbers
      const output: { readKeyValuesToList(): Array<{ key: string | null; value: string | null }> } = driver.createOutputTopic(totals)
      void output
      // @ts-expect-error a stream of Orders is not written to a topic of numbers
      new StreamsBuilder().stream(orders).to(totals)
      // @ts-expect-error nor is a stream of numbers written to a topic of Orders
      new StreamsBuilder().stream(totals).to(orders)
      // @ts-expect-error nor a stream of string keys to a topic of number keys
      new StreamsBuilder().stream(totals).to(Topic.of('by-number', Serdes.Double(), Serdes.Double()))
    }
    assert.equal(typeof typeOnly, 'function')
  })

  it("a stream whose values are narrower than the topic's is written to it (a literal union to a topic of strings)", () => {
    const sizes = Topic.of('sizes', Serdes.String(), Serdes.String())
    const b = new StreamsBuilder()
    b.stream(orders)
      .mapValues((o): 'big' | 'small' => (o.cents > 100 ? 'big' : 'small'))
      .to(sizes)
    const driver = new TopologyTestDriver(b.build())
    driver.createInputTopic(orders).pipeInput('c1', { customer: 'c1', cents: 250 }, 1)
    assert.deepEqual(driver.createOutputTopic(sizes).readValuesToList(), ['big'])
    driver.close()
  })

  it('refuses a handle that is not one, and serdes passed beside a handle, naming the call', () => {
    assert.throws(() => Topic.of('', Serdes.String(), Serdes.String()), /Topic.of: the name must be a non-empty string, got ""/)
    assert.throws(() => Topic.of('t', Serdes.String(), 42 as unknown as Serde<string>), /Topic.of\("t"\): valueSerde must be a serde .* got 42/)
    const driver = new TopologyTestDriver(topology())
    assert.throws(
      () => (driver.createInputTopic as (t: unknown, k: Serde<unknown>) => unknown)(orders, Serdes.JSON()),
      /createInputTopic: topic "orders" is a Topic, which carries its serdes; pass no others/,
    )
    const rt = new EmbeddedRuntime(topology(), { applicationId: 't', logger: silentLogger })
    assert.throws(() => rt.producer({ topic: 'orders' } as unknown as Topic<string, Order>), /runtime.producer: the topic must be a name or a Topic \(Topic.of\(name, keySerde, valueSerde\)\), got/)
    driver.close()
  })

  it("a handle whose built-in serde is not the topology's is refused, as a serde given by name is", () => {
    const rt = new EmbeddedRuntime(topology(), { applicationId: 't', logger: silentLogger })
    const ordersAsText = Topic.of('orders', Serdes.String(), Serdes.String())
    assert.throws(() => rt.producer(ordersAsText), /the topology uses Serdes.JSON\(\) for the values of topic "orders", not Serdes.String\(\)/)
  })
})
