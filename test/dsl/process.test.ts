import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { PunctualError, Serdes, StateDescriptors, Stores, StreamsBuilder } from '../../src/index.js'
import type { KeyedProcessor, KeyedProcessorContext, KeyValueStore, ProcessorContext, StreamRecord, Timer } from '../../src/index.js'
import { TopologyTestDriver } from '../../src/testing/index.js'

const str = { keySerde: Serdes.String(), valueSerde: Serdes.String() }

describe('KStream.process, processValues and their keyed forms', () => {
  it('process: a processor of your own with a store added to the builder, re-keying; grouping after it repartitions', () => {
    const b = new StreamsBuilder()
    b.addStateStore(Stores.inMemoryKeyValueStore<string, number>('seen'))
    b.stream<string, string>('clicks', str)
      // Per user, the number of clicks so far; the page becomes the key.
      .process<string, number>(
        () => {
          let ctx: ProcessorContext<string, number>
          let seen: KeyValueStore<string, number>
          return {
            init(c) {
              ctx = c
              seen = c.getStateStore<KeyValueStore<string, number>>('seen')
            },
            process(r) {
              const n = (seen.get(r.key) ?? 0) + 1
              seen.put(r.key, n)
              ctx.forward({ key: r.value, value: n, timestamp: r.timestamp, headers: r.headers })
            },
          }
        },
        { name: 'clicks-so-far' },
        'seen',
      )
      .groupByKey({ keySerde: Serdes.String(), valueSerde: Serdes.Long() })
      .count({ name: 'per-page' })
      .toStream()
      .to('pages', { keySerde: Serdes.String(), valueSerde: Serdes.Long() })
    const topology = b.build()
    const description = topology.describe()
    assert.match(description, /Processor: clicks-so-far \(stores: \[seen\]\)/)
    assert.match(description, /per-page-repartition/, 'a key-changing processor: grouping goes through a repartition topic, named after the store')
    const driver = new TopologyTestDriver(topology)
    const clicks = driver.createInputTopic('clicks', Serdes.String(), Serdes.String())
    clicks.pipeInput('ann', 'home', 1)
    clicks.pipeInput('ann', 'cart', 2)
    clicks.pipeInput('bob', 'home', 3)
    const out = driver.createOutputTopic('pages', Serdes.String(), Serdes.Long()).readKeyValuesToList()
    assert.deepEqual(out, [
      { key: 'home', value: 1 },
      { key: 'cart', value: 1 },
      { key: 'home', value: 2 },
    ])
  })

  it('processValues keeps the key (no repartition after it) and refuses a processor that changes it, naming it', () => {
    const build = (changeKey: boolean) => {
      const b = new StreamsBuilder()
      b.stream<string, string>('in', str)
        .processValues<number>(
          () => {
            let ctx: ProcessorContext<string, number>
            return {
              init(c) {
                ctx = c
              },
              process(r) {
                ctx.forward({ key: changeKey ? `${r.key}!` : r.key, value: r.value.length, timestamp: r.timestamp, headers: r.headers })
              },
            }
          },
          { name: 'lengths' },
        )
        .groupByKey({ valueSerde: Serdes.Long() })
        .reduce((a, v) => a + v, { name: 'total' })
        .toStream()
        .to('out', { keySerde: Serdes.String(), valueSerde: Serdes.Long() })
      return b.build()
    }
    const topology = build(false)
    assert.doesNotMatch(topology.describe(), /repartition/)
    const driver = new TopologyTestDriver(topology)
    const input = driver.createInputTopic('in', Serdes.String(), Serdes.String())
    input.pipeInput('a', 'xyz', 1)
    input.pipeInput('a', 'pq', 2)
    assert.deepEqual(driver.createOutputTopic('out', Serdes.String(), Serdes.Long()).readKeyValuesToList(), [
      { key: 'a', value: 3 },
      { key: 'a', value: 5 },
    ])

    const bad = new TopologyTestDriver(build(true))
    assert.throws(
      () => bad.createInputTopic('in', Serdes.String(), Serdes.String()).pipeInput('a', 'xyz', 1),
      (err: unknown) => err instanceof PunctualError && /processor "lengths" .*: processValues processor "lengths" forwarded key "a!" while processing key "a": it must keep the key/.test(err.message),
    )
  })

  it('processKeyed: a keyed processor with an event-time timer and TTL state inside a pipeline', () => {
    const b = new StreamsBuilder()
    b.stream<string, string>('logins', str)
      .filter((_user, device) => device !== 'bot')
      // Per user: remember the last device; 10 ms after a login without another, say the session ended.
      .processKeyed<string, string>(() => {
        let ctx: KeyedProcessorContext<string, string, string>
        return {
          init(c) {
            ctx = c
          },
          process(r: StreamRecord<string, string>) {
            const last = ctx.getState(StateDescriptors.value<number>('last', { ttl: { ttlMs: 1000, timeDomain: 'event' } }))
            const previous = last.value()
            if (previous !== undefined) ctx.timers.deleteEventTimeTimer(previous + 10)
            last.update(r.timestamp)
            ctx.timers.registerEventTimeTimer(r.timestamp + 10)
          },
          onTimer(t: Timer<string>) {
            ctx.forward({ key: t.key, value: `ended at ${t.timestamp}`, timestamp: t.timestamp, headers: [] })
          },
        }
      })
      .mapValues((v) => v.toUpperCase())
      .to('sessions', str)
    const driver = new TopologyTestDriver(b.build())
    const logins = driver.createInputTopic('logins', Serdes.String(), Serdes.String())
    logins.pipeInput('ann', 'phone', 0)
    logins.pipeInput('ann', 'laptop', 5)
    logins.pipeInput('bob', 'bot', 6)
    logins.pipeInput('bob', 'phone', 7)
    logins.pipeInput('cy', 'phone', 30)
    assert.deepEqual(driver.createOutputTopic('sessions', Serdes.String(), Serdes.String()).readKeyValuesToList(), [
      { key: 'ann', value: 'ENDED AT 15' },
      { key: 'bob', value: 'ENDED AT 17' },
    ])
  })

  it('processValuesKeyed passes on onTimer and onExpire: what they forward reaches the stream', () => {
    // Per customer: an event-time timer 30 after each order and state with a 10 ms event-time TTL.
    const inactivity = (): KeyedProcessor<string, string, string, string> => {
      let ctx: KeyedProcessorContext<string, string, string>
      return {
        init(c) {
          ctx = c
        },
        process(r) {
          ctx.getState(StateDescriptors.value<string>('last', { ttl: { ttlMs: 10, timeDomain: 'event' } })).update(r.value)
          ctx.timers.registerEventTimeTimer(r.timestamp + 30)
        },
        onTimer(t) {
          ctx.forward({ key: t.key, value: 'inactive for 30', timestamp: t.timestamp, headers: [] })
        },
        onExpire(e) {
          ctx.forward({ key: e.key, value: `state expired: ${String(e.value)}`, timestamp: e.now, headers: [] })
        },
      }
    }
    const run = (keyed: 'processKeyed' | 'processValuesKeyed') => {
      const b = new StreamsBuilder()
      const orders = b.stream<string, string>('orders', str)
      const out = keyed === 'processKeyed' ? orders.processKeyed(inactivity) : orders.processValuesKeyed(inactivity)
      out.to('alerts', str)
      const driver = new TopologyTestDriver(b.build())
      const input = driver.createInputTopic('orders', Serdes.String(), Serdes.String())
      input.pipeInput('c1', 'book', 0)
      input.pipeInput('c2', 'pen', 40)
      return driver.createOutputTopic('alerts', Serdes.String(), Serdes.String()).readKeyValuesToList()
    }
    // User timers fire before TTL timers due at the same advance.
    const expected = [
      { key: 'c1', value: 'inactive for 30' },
      { key: 'c1', value: 'state expired: book' },
    ]
    assert.deepEqual(run('processKeyed'), expected)
    assert.deepEqual(run('processValuesKeyed'), expected)
  })

  it('processValuesKeyed refuses a timer that forwards another key than the timer\'s, naming the processor', () => {
    const b = new StreamsBuilder()
    b.stream<string, string>('in', str)
      .processValuesKeyed<string>(
        () => {
          let ctx: KeyedProcessorContext<string, string, string>
          return {
            init(c) {
              ctx = c
            },
            process(r) {
              ctx.timers.registerEventTimeTimer(r.timestamp + 1)
            },
            onTimer(t) {
              ctx.forward({ key: `${t.key}!`, value: 'x', timestamp: t.timestamp, headers: [] })
            },
          }
        },
        { name: 'rekeying-timer' },
      )
      .to('out', str)
    const driver = new TopologyTestDriver(b.build())
    const input = driver.createInputTopic('in', Serdes.String(), Serdes.String())
    input.pipeInput('a', 'v', 0)
    assert.throws(
      () => input.pipeInput('b', 'v', 5),
      (err: unknown) => err instanceof PunctualError && /processValuesKeyed processor "rekeying-timer" forwarded key "a!" while processing key "a": it must keep the key \(use processKeyed\(\) to change it\)/.test(err.message),
    )
  })

  it('a store not added to the builder is refused, naming the processor and the store', () => {
    const b = new StreamsBuilder()
    assert.throws(
      () => b.stream<string, string>('in', str).process(() => ({ process() {} }), 'missing'),
      /processor "KSTREAM-PROCESSOR-0000000001": state store "missing" is not added to the builder \(add it first with builder.addStateStore/,
    )
  })
})
