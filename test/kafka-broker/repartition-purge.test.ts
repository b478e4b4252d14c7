import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Serdes, silentLogger, StreamsBuilder } from '../../src/index.js'
import { KafkaRuntime } from '../../src/kafka/kafka-runtime.js'
import { bootstrapServers } from './cluster.js'
import { onSharedBroker } from './shared-broker.js'
import { until } from './workload.js'

const PARTITIONS = 3
const RECORDS = 3000

describe('KafkaRuntime: repartition topics are purged', () => {
  const broker = onSharedBroker('rp')

  for (const guarantee of ['exactly_once_v2', 'at_least_once'] as const) {
    it(`${guarantee}: records the group committed past are deleted from the repartition topic; the counts are whole`, async () => {
      const name = `${broker.run}-${guarantee === 'exactly_once_v2' ? 'eos' : 'alos'}`
      const app = `${name}-app`
      const repartition = `${app}-by-value-repartition`
      await broker.cluster.createTopic(`${name}-in`, PARTITIONS)
      await broker.cluster.createTopic(`${name}-out`, PARTITIONS)
      const values = ['red', 'green', 'blue', 'white', 'black']
      await broker.cluster.produce(
        `${name}-in`,
        PARTITIONS,
        Array.from({ length: RECORDS }, (_, i) => ({ key: `k${i}`, value: values[i % values.length] as string, timestamp: 1_700_000_000_000 + i })),
      )
      const b = new StreamsBuilder()
      b.stream<string, string>(`${name}-in`)
        .groupBy((_k, v) => v, { name: 'by-value', keySerde: Serdes.String() })
        .count({ name: 'counts' })
        .toStream()
        .to(`${name}-out`, { valueSerde: Serdes.JSON() })
      const warnings: string[] = []
      const rt = broker.track(
        new KafkaRuntime(b.build(), {
          applicationId: app,
          bootstrapServers: bootstrapServers(),
          groupProtocol: 'consumer',
          processingGuarantee: guarantee,
          commitIntervalMs: 100,
          repartitionPurgeIntervalMs: 0,
          logger: { ...silentLogger, warn: (_f, message) => void warnings.push(message ?? '') },
        }),
      )
      await rt.start()
      // Each record is processed twice: by the sub-topology that repartitions it, then by the one that counts.
      await until('every record is counted', () => rt.metrics().processedRecords >= 2 * RECORDS)
      // The last commit passed the last records, and its purge (or the one after the purge under way
      // then) deletes up to the group's offsets: under exactly-once that leaves a transaction marker.
      let offsets: Array<{ low: number; high: number }> = []
      let committed: number[] = []
      await until(
        "the repartition topic is purged up to the group's offsets",
        async () => {
          offsets = await broker.cluster.offsets(repartition)
          committed = await broker.cluster.committed(app, repartition)
          return offsets.every((o, p) => o.high === 0 || (o.low === committed[p] && o.low >= o.high - 1))
        },
        30_000,
        () => `offsets ${JSON.stringify(offsets)}, committed ${JSON.stringify(committed)}; ${warnings.join('; ')}`,
      )
      await rt.stop()
      assert.ok(
        offsets.reduce((n, o) => n + o.low, 0) >= RECORDS,
        `every record that went through is deleted: ${JSON.stringify(offsets)}`,
      )
      const last = new Map<string, number>()
      for (const r of (await broker.cluster.readAll(`${name}-out`, PARTITIONS)).flat()) last.set(r.key, Number(r.value))
      assert.deepEqual(Object.fromEntries([...last].sort()), Object.fromEntries(values.map((v) => [v, RECORDS / values.length] as const).sort()))
    })
  }
})
