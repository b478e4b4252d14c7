import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { PunctualError, Serdes, StreamsBuilder, Topology } from '../../src/index.js'
import type { ProcessorContext, StreamRecord } from '../../src/index.js'
import { ManualClock, TopologyTestDriver } from '../../src/testing/index.js'

const upper = () =>
  new Topology()
    .addSource('src', 'in')
    .addProcessor<string, string, string, string>(
      'upper',
      () => {
        let ctx: ProcessorContext<string, string>
        return {
          init(c) {
            ctx = c
          },
          process(r: StreamRecord<string, string>) {
            ctx.forward({ ...r, value: r.value.toUpperCase() })
          },
        }
      },
      'src',
    )
    .addSink('sink', 'out', {}, 'upper')

describe('TopologyTestDriver', () => {
  it('processes each piped record at once and exposes the output topic', () => {
    const d = new TopologyTestDriver(upper())
    const input = d.createInputTopic('in', Serdes.String(), Serdes.String())
    const output = d.createOutputTopic('out', Serdes.String(), Serdes.String())
    input.pipeInput('a', 'x', 7)
    assert.equal(output.getQueueSize(), 1)
    const r = output.readRecord()
    assert.deepEqual([r.key, r.value, r.timestamp], ['a', 'X', 7])
    assert.ok(output.isEmpty())
  })

  it('defaults a piped record timestamp to the manual wall clock', () => {
    const d = new TopologyTestDriver(upper(), { wallClockStartMs: 500 })
    d.advanceWallClockTime(20)
    d.createInputTopic('in', Serdes.String(), Serdes.String()).pipeInput('a', 'x')
    assert.equal(d.createOutputTopic('out', Serdes.String(), Serdes.String()).readRecord().timestamp, 520)
  })

  it('counts dropped records in its metrics', () => {
    const d = new TopologyTestDriver(upper(), { errorHandler: () => 'continue' })
    const input = d.createInputTopic('in', Serdes.String(), Serdes.Bytes())
    input.pipeInput('a', Buffer.from([0xff]), 3) // not UTF-8
    input.pipeInput('a', Buffer.from('y'), 3)
    assert.equal(d.metrics().droppedRecords.deserialization, 1)
    assert.equal(d.metrics().processedRecords, 1)
  })

  it('refuses a timestamp that is not an integer epoch millisecond >= 0 at the call', () => {
    const d = new TopologyTestDriver(upper())
    const input = d.createInputTopic('in')
    for (const ts of [1000.5, -3]) assert.throws(() => input.pipeInput('a', 'x', ts), /pipeInput on "in": a timestamp is an integer epoch millisecond >= 0, got/)
    assert.equal(d.metrics().processedRecords, 0)
  })

  it('refuses a wall-clock start or step that is not an integer >= 0, with a code and the value (issue 39)', () => {
    for (const start of [-5, 1.5, NaN]) {
      assert.throws(
        () => new TopologyTestDriver(upper(), { wallClockStartMs: start }),
        (e: unknown) => e instanceof PunctualError && e.code === 'INVALID_CONFIG' && e.message === `TopologyTestDriver: wallClockStartMs must be an integer epoch millisecond >= 0, got ${start}`,
      )
    }
    const d = new TopologyTestDriver(upper(), { wallClockStartMs: 100 })
    for (const step of [-1, 0.5, NaN]) {
      assert.throws(
        () => d.advanceWallClockTime(step),
        (e: unknown) => e instanceof PunctualError && e.code === 'INVALID_ARGUMENT' && e.message === `advanceWallClockTime: ms must be an integer >= 0 (the clock never goes back), got ${step}`,
      )
    }
    assert.equal(d.wallClockTime(), 100)
    assert.throws(() => new ManualClock(-5), (e: unknown) => e instanceof PunctualError && e.code === 'INVALID_CONFIG' && /ManualClock: startMs must be an integer epoch millisecond >= 0, got -5/.test(e.message))
    assert.throws(() => new ManualClock(0).advance(-1), (e: unknown) => e instanceof PunctualError && e.code === 'INVALID_ARGUMENT' && /ManualClock\.advance: ms must be an integer >= 0/.test(e.message))
  })

  it('refuses input and output topics the topology does not use, listing its topics', () => {
    const d = new TopologyTestDriver(upper())
    assert.throws(() => d.createInputTopic('typo'), /createInputTopic\("typo"\): no source of the topology reads topic "typo"; source topics: in; sink topics: out/)
    assert.throws(() => d.createOutputTopic('typo'), /createOutputTopic\("typo"\): no sink of the topology writes topic "typo"; source topics: in; sink topics: out/)
  })

  it('output topics read with the serdes of the sink that writes them; another built-in serde is refused', () => {
    const b = new StreamsBuilder()
    b.stream('in').groupByKey().count().toStream().to('counts', { valueSerde: Serdes.Long() })
    const d = new TopologyTestDriver(b.build())
    assert.throws(() => d.createOutputTopic('counts', Serdes.String(), Serdes.String()), /uses Serdes\.Long\(\) for the values of topic "counts", not Serdes\.String\(\)/)
    const counts = d.createOutputTopic<string, number>('counts')
    d.createInputTopic<string, string>('in').pipeInput('a', 'x', 1)
    assert.deepEqual(counts.readKeyValuesToList(), [{ key: 'a', value: 1 }])
  })

  it('refuses input after close', () => {
    const d = new TopologyTestDriver(upper())
    const input = d.createInputTopic('in', Serdes.String(), Serdes.String())
    d.close()
    assert.throws(() => input.pipeInput('a', 'x', 1), (e: unknown) => e instanceof PunctualError && e.code === 'ILLEGAL_STATE')
  })

  it('reading an empty output topic is an error, not undefined', () => {
    const d = new TopologyTestDriver(upper())
    assert.throws(() => d.createOutputTopic('out', Serdes.String(), Serdes.String()).readRecord(), /output topic "out" has no record to read/)
  })
})
