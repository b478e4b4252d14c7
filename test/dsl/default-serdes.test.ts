import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { JoinWindows, PunctualError, Serdes, StreamsBuilder } from '../../src/index.js'
import type { Serde } from '../../src/index.js'
import { TopologyTestDriver } from '../../src/testing/index.js'

/** A stream-stream join whose string results are written with no serde given. */
function joined(builder: StreamsBuilder) {
  const right = builder.stream<string, string>('right')
  builder
    .stream<string, string>('left')
    .join(right, (l: string, r: string) => `${l}+${r}`, JoinWindows.ofTimeDifferenceWithNoGrace(10))
    .to('out')
  return builder.build()
}

function run(builder: StreamsBuilder): Array<string | null> {
  const driver = new TopologyTestDriver(joined(builder))
  driver.createInputTopic('left', Serdes.String(), Serdes.String()).pipeInput('k', 'a', 1)
  driver.createInputTopic('right', Serdes.String(), Serdes.String()).pipeInput('k', 'b', 2)
  const out = driver.createOutputTopic('out', Serdes.String(), Serdes.String()).readValuesToList()
  driver.close()
  return out
}

describe("StreamsBuilder's default serdes (Kafka Streams' default.key.serde, default.value.serde)", () => {
  it('without them a join result of unknown serde is written as JSON; with a default String serde, as the string', () => {
    assert.throws(() => run(new StreamsBuilder()), /the topology uses Serdes.JSON\(\) for the values of topic "out", not Serdes.String\(\)/)
    assert.deepEqual(run(new StreamsBuilder({ defaultKeySerde: Serdes.String(), defaultValueSerde: Serdes.String() })), ['a+b'])
  })

  it('sources, repartition topics and stores given no serde use the defaults', () => {
    const b = new StreamsBuilder({ defaultKeySerde: Serdes.String() as Serde<unknown>, defaultValueSerde: Serdes.Long() as Serde<unknown> })
    b.stream<string, number>('amounts')
      .selectKey((k) => k.toUpperCase())
      .groupByKey()
      .reduce((a, v) => a + v)
      .toStream()
      .to('totals')
    const driver = new TopologyTestDriver(b.build())
    const amounts = driver.createInputTopic('amounts', Serdes.String(), Serdes.Long())
    amounts.pipeInput('a', 5, 1)
    amounts.pipeInput('A', 7, 2)
    assert.deepEqual(driver.createOutputTopic('totals', Serdes.String(), Serdes.Long()).readKeyValuesToList(), [
      { key: 'A', value: 5 },
      { key: 'A', value: 12 },
    ])
    driver.close()
  })

  it('refuses what is not a serde, naming the setting', () => {
    assert.throws(
      () => new StreamsBuilder({ defaultValueSerde: 'String' as unknown as Serde<unknown> }),
      (err: unknown) => err instanceof PunctualError && err.code === 'INVALID_CONFIG' && /StreamsBuilder: defaultValueSerde must be a serde \(an object with serialize and deserialize\), got string/.test(err.message),
    )
  })
})
