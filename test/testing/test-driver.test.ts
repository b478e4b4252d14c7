import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { PunctualError, Serdes, Topology } from '../../src/index.js'
import type { ProcessorContext, StreamRecord } from '../../src/index.js'
import { TopologyTestDriver } from '../../src/testing/index.js'

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
    const input = d.createInputTopic('in', Serdes.String(), Serdes.String())
    input.pipeInput('a', 'x', -3)
    input.pipeInput('a', 'y', 3)
    assert.equal(d.metrics().droppedRecords['invalid-timestamp'], 1)
    assert.equal(d.metrics().processedRecords, 1)
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
