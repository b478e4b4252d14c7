import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Serdes, silentLogger, StreamsBuilder } from '../../src/index.js'
import type { Logger } from '../../src/util/logger.js'
import { KafkaRuntime } from '../../src/kafka/kafka-runtime.js'
import { bootstrapServers } from './cluster.js'
import { onSharedBroker } from './shared-broker.js'
import { until } from './workload.js'

const KEYS = Number(process.env.PUNCTUAL_KAFKA_RESTORE_KEYS ?? 1_000_000)
const str = { keySerde: Serdes.String(), valueSerde: Serdes.String() }

/** Counts per key in a table; only counts above 1 reach the output, so a first pass over new keys writes nothing. */
function countsAboveOne(input: string, output: string) {
  const b = new StreamsBuilder()
  b.stream<string, string>(input, str)
    .groupByKey()
    .count({ name: 'counts' })
    .toStream()
    .filter((_k, v) => v !== null && v > 1)
    .mapValues((v) => String(v))
    .to(output, str)
  return b.build()
}

/** A logger that hands each restore report (the info line with taskId, records and ms) to `onRestored`. */
function restoreLogger(onRestored: (taskId: string, records: number, ms: number) => void): Logger {
  const logger: Logger = {
    ...silentLogger,
    info: (fields: unknown) => {
      const f = fields as { taskId?: unknown; records?: unknown; ms?: unknown }
      if (typeof f.taskId === 'string' && typeof f.records === 'number' && typeof f.ms === 'number') onRestored(f.taskId, f.records, f.ms)
    },
    child: () => logger,
  }
  return logger
}

describe('KafkaRuntime: a big task moves', () => {
  const broker = onSharedBroker('rs')
  const { run } = broker

  it(`a task holding ${KEYS.toLocaleString('en')} keys is restored from its changelog by another instance, every count intact`, async () => {
    const input = `${run}-in`
    const output = `${run}-out`
    await broker.cluster.createTopic(input, 1)
    await broker.cluster.createTopic(output, 1)
    // Values are not empty: the client reads an empty value as null, which an aggregation skips.
    const keys = Array.from({ length: KEYS }, (_, i) => ({ key: `key-${i}`, value: 'v', timestamp: 1_700_000_000_000 + i }))
    await broker.cluster.produce(input, 1, keys)

    const config = { applicationId: `${run}-app`, bootstrapServers: bootstrapServers(), processingGuarantee: 'at_least_once' as const, commitIntervalMs: 1000 }
    const first = new KafkaRuntime(countsAboveOne(input, output), { ...config, logger: silentLogger })
    broker.track(first)
    await first.start()
    await until('the first instance counted every key once', () => first.metrics().processedRecords >= KEYS, 600_000)
    await first.stop()

    const restores: Array<{ taskId: string; records: number; ms: number }> = []
    const second = new KafkaRuntime(countsAboveOne(input, output), { ...config, logger: restoreLogger((taskId, records, ms) => restores.push({ taskId, records, ms })) })
    broker.track(second)
    await second.start()
    await until('the second instance restored the task', () => restores.length === 1, 600_000)
    const [restore] = restores as [{ taskId: string; records: number; ms: number }]
    process.stdout.write(`# restored task ${restore.taskId}: ${restore.records} changelog records in ${restore.ms} ms\n`)
    assert.equal(restore.taskId, '0_0')
    assert.ok(restore.records >= KEYS, `${restore.records} changelog records restored, at least one per key`)

    // Every key seen again: each count goes on from the restored one.
    const again = [0, 1, Math.floor(KEYS / 2), KEYS - 1].map((i) => ({ key: `key-${i}`, value: 'v', timestamp: 1_700_000_000_000 + KEYS + i }))
    await broker.cluster.produce(input, 1, again)
    await until('the second instance counted them', () => second.metrics().processedRecords >= again.length, 120_000)
    await second.stop()
    const out = (await broker.cluster.readAll(output, 1)).flat().map((r) => `${r.key}=${r.value}`)
    assert.deepEqual(out.sort(), again.map((r) => `${r.key}=2`).sort())
  })
})
