import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { BufferConfig, Serdes, StreamsBuilder, Suppressed } from '../../src/index.js'
import { TopologyTestDriver } from '../../src/testing/index.js'

const str = { keySerde: Serdes.String(), valueSerde: Serdes.String() }

describe('KStream.toTable', () => {
  it('each record is its key’s latest value, a null value deletes, a null key is dropped', () => {
    const b = new StreamsBuilder()
    b.stream<string, string | null>('in', str)
      .toTable({ name: 'latest' })
      .filter((_k, v) => v !== 'hidden')
      .toStream()
      .to('out', str)
    const driver = new TopologyTestDriver(b.build())
    const input = driver.createInputTopic('in', Serdes.String(), Serdes.String())
    input.pipeInput('a', 'x', 1)
    input.pipeInput(null, 'no key', 2)
    input.pipeInput('a', null, 3)
    input.pipeInput('b', 'hidden', 4)
    assert.deepEqual(driver.createOutputTopic('out', Serdes.String(), Serdes.String()).readKeyValuesToList(), [
      { key: 'a', value: 'x' },
      { key: 'a', value: null },
      { key: 'b', value: null },
    ])
  })

  it('after a key-changing operation, goes through a repartition topic; a table operation (suppress) follows', () => {
    const b = new StreamsBuilder()
    b.stream<string, string>('in', str)
      .selectKey((_k, v) => v.split(':')[0] as string)
      .toTable({ name: 'by-prefix' })
      .suppress(Suppressed.untilTimeLimit<string, string>(10, BufferConfig.unbounded()))
      .toStream()
      .to('out', str)
    const topology = b.build()
    assert.match(topology.describe(), /by-prefix-repartition/)
    const driver = new TopologyTestDriver(topology)
    const input = driver.createInputTopic('in', Serdes.String(), Serdes.String())
    input.pipeInput('1', 'p:one', 0)
    input.pipeInput('2', 'p:two', 5)
    input.pipeInput('3', 'q:three', 20)
    assert.deepEqual(driver.createOutputTopic('out', Serdes.String(), Serdes.String()).readKeyValuesToList(), [{ key: 'p', value: 'p:two' }])
  })
})
