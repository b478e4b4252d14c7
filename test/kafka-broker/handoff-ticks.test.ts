import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { silentLogger } from '../../src/index.js'
import { KafkaRuntime } from '../../src/kafka/kafka-runtime.js'
import { bootstrapServers } from './cluster.js'
import { onSharedBroker } from './shared-broker.js'
import { embedded, lines, PARTITIONS, records, ticks, until } from './workload.js'

describe('KafkaRuntime: punctuations across a handoff', () => {
  const broker = onSharedBroker('tk')
  const { run } = broker

  function runtime(app: string, input: string, output: string): KafkaRuntime {
    const rt = new KafkaRuntime(ticks(input, output), { applicationId: app, bootstrapServers: bootstrapServers(), groupProtocol: 'consumer', processingGuarantee: 'exactly_once_v2', commitIntervalMs: 100, logger: silentLogger })
    broker.track(rt)
    return rt
  }

  it('exactly_once_v2: stream time and punctuation last-fire times move with a task: each grid point ticks once per task, as in a single embedded run', async () => {
    const name = `${run}-ticks`
    await broker.cluster.createTopic(`${name}-in`, PARTITIONS)
    await broker.cluster.createTopic(`${name}-out`, PARTITIONS)
    const first = records(3000)
    const second = records(3000, 3000)
    const expected = await embedded([...first, ...second], ticks)
    assert.ok(expected.length > 40, `enough ticks to compare: ${expected.length}`)

    const a = runtime(`${name}-app`, `${name}-in`, `${name}-out`)
    await broker.cluster.produce(`${name}-in`, PARTITIONS, first)
    await a.start()
    await until('the first half is processed', () => a.metrics().processedRecords >= first.length)
    const b = runtime(`${name}-app`, `${name}-in`, `${name}-out`)
    await b.start()
    await until('the tasks are shared by both instances', () => a.taskIds().length === PARTITIONS / 2 && b.taskIds().length === PARTITIONS / 2)
    await broker.cluster.produce(`${name}-in`, PARTITIONS, second)
    await until('every record is processed', () => a.metrics().processedRecords + b.metrics().processedRecords >= first.length + second.length)
    await a.stop()
    await b.stop()
    assert.deepEqual(lines(await broker.cluster.readAll(`${name}-out`, PARTITIONS)), expected)
  })
})
