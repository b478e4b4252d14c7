import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { LogAndSkipOnInvalidTimestamp, silentLogger, StreamsBuilder, UsePartitionTimeOnInvalidTimestamp } from '../../src/index.js'
import { KafkaRuntime } from '../../src/kafka/kafka-runtime.js'
import { bootstrapServers } from './cluster.js'
import { onSharedBroker } from './shared-broker.js'
import { until } from './workload.js'

/** Event time from the value, a decimal integer ("1200"); what is not one is invalid. */
const valueTime = (r: { value: string }): unknown => (/^[0-9]+$/.test(r.value) ? Number(r.value) : undefined)

describe('timestamp extractors on a real broker', () => {
  const broker = onSharedBroker('ts')

  for (const guarantee of ['exactly_once_v2', 'at_least_once'] as const) {
    it(`${guarantee}: the default extractor and a source's own give the records their payload time, which the sink writes`, async () => {
      const name = `${broker.run}-${guarantee === 'exactly_once_v2' ? 'eos' : 'alos'}`
      for (const t of ['orders', 'returns', 'out']) await broker.cluster.createTopic(`${name}-${t}`, 1)
      const b = new StreamsBuilder()
      const returns = b.stream<string, string>(`${name}-returns`, { timestampExtractor: new UsePartitionTimeOnInvalidTimestamp<string, string>(valueTime) })
      b.stream<string, string>(`${name}-orders`).merge(returns).to(`${name}-out`)
      const rt = broker.track(
        new KafkaRuntime(b.build(), {
          applicationId: `${name}-app`,
          bootstrapServers: bootstrapServers(),
          groupProtocol: 'consumer',
          processingGuarantee: guarantee,
          commitIntervalMs: 100,
          logger: silentLogger,
          defaultTimestampExtractor: new LogAndSkipOnInvalidTimestamp<string, string>(valueTime),
        }),
      )
      // The records' own timestamps (1, 2, ...) play no part.
      await broker.cluster.produce(`${name}-orders`, 1, [
        { key: 'o1', value: '5000', timestamp: 1 },
        { key: 'o2', value: 'soon', timestamp: 2 },
        { key: 'o3', value: '7000', timestamp: 3 },
      ])
      await broker.cluster.produce(`${name}-returns`, 1, [
        { key: 'r1', value: '6000', timestamp: 4 },
        { key: 'r2', value: '?', timestamp: 5 },
      ])
      await rt.start()
      await until('every record is read', () => rt.metrics().processedRecords + rt.metrics().droppedRecords['invalid-timestamp'] >= 5)
      await rt.stop()
      const out = (await broker.cluster.readAll(`${name}-out`, 1)).flat().map((r) => `${r.key}@${r.timestamp}`)
      assert.deepEqual(out.sort(), ['o1@5000', 'o3@7000', 'r1@6000', 'r2@6000'])
      assert.equal(rt.metrics().droppedRecords['invalid-timestamp'], 1)
    })
  }
})
