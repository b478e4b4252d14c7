import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { silentLogger } from '../../src/index.js'
import type { TaskEvent } from '../../src/index.js'
import { KafkaRuntime } from '../../src/kafka/kafka-runtime.js'
import { bootstrapServers } from './cluster.js'
import { onSharedBroker } from './shared-broker.js'
import { counts, PARTITIONS, records, until, windowedFinal } from './workload.js'

// Two applications deployed under one applicationId by mistake, each with its own topology on the same
// input topic: the group must not share the input's partitions between them, each member running what
// its own topology makes of them (and the changelogs of one read as the other's). The instance that
// comes second is refused, naming the applicationId and saying that its topology differs from the one
// the group runs; the first goes on with every task, none revoked.

describe('KafkaRuntime: a second application with the same applicationId and another topology', () => {
  const broker = onSharedBroker('tm')
  const { run } = broker

  it("is refused: start() rejects (or it reports 'error') naming the applicationId and saying the topology differs; the first keeps all its tasks", async () => {
    const { cluster } = broker
    const [input, countsOut, windowsOut, app] = [`${run}-in`, `${run}-counts`, `${run}-windows`, `${run}-app`]
    for (const t of [input, countsOut, windowsOut]) await cluster.createTopic(t, PARTITIONS)
    const firstRecords = records(2000)
    const moreRecords = records(2000, 2000)
    await cluster.produce(input, PARTITIONS, firstRecords)
    const config = { applicationId: app, bootstrapServers: bootstrapServers(), groupProtocol: 'consumer' as const, processingGuarantee: 'at_least_once' as const, commitIntervalMs: 100, logger: silentLogger }

    const first = broker.track(new KafkaRuntime(counts(input, countsOut), config))
    const firstErrors: Error[] = []
    first.on('error', (e) => firstErrors.push(e))
    await first.start()
    await until('the first application runs every task and processed the input', () => first.taskIds().length === PARTITIONS && first.metrics().processedRecords >= firstRecords.length)
    const lostByFirst: TaskEvent[] = []
    first.on('task', (e) => {
      if (e.type === 'revoked' || e.type === 'lost') lostByFirst.push(e)
    })

    // Same applicationId and input topic, another topology (windows instead of plain counts).
    const second = broker.track(new KafkaRuntime(windowedFinal(input, windowsOut), config))
    const secondErrors: Error[] = []
    second.on('error', (e) => secondErrors.push(e))
    let rejected: Error | undefined
    const starting = second.start().then(
      () => undefined,
      (e: unknown) => void (rejected = e as Error),
    )
    // Either it is refused, or the group hands it partitions of the first (what happens without a check).
    await until(
      'the second instance is refused, or takes partitions of the first',
      () => rejected !== undefined || secondErrors.length > 0 || second.taskIds().length > 0 || second.restoreProgress().length > 0 || lostByFirst.length > 0,
      90_000,
      () => `second: ${second.state}, tasks ${second.taskIds().join(' ')}; first: tasks ${first.taskIds().join(' ')}`,
    )
    await starting
    const refusal = rejected ?? secondErrors[0]
    // Not refused: for the failure message, let the second show which tasks it took.
    if (refusal === undefined) await until('the second runs tasks', () => second.taskIds().length > 0, 30_000).catch(() => {})
    const seen = `second ${second.state}, running tasks ${second.taskIds().join(' ') || '-'}${second.restoreProgress().length > 0 ? `, restoring ${second.restoreProgress().map((r) => r.taskId).join(' ')}` : ''}; first revoked ${lostByFirst.map((e) => `${e.taskId} (${e.type})`).join(' ') || 'nothing'}`
    assert.ok(refusal !== undefined, `the second instance was not refused: ${seen}`)
    assert.match(refusal.message, new RegExp(app), 'the refusal names the applicationId')
    assert.match(refusal.message, /topology/i, 'the refusal is about the topology')
    assert.match(refusal.message, /differ/i, 'the refusal says the topology differs')
    await second.stop().catch(() => {})

    // The first goes on with every task: nothing revoked, the new records all processed by it.
    await cluster.produce(input, PARTITIONS, moreRecords)
    await until('the first processed the new records', () => first.metrics().processedRecords >= firstRecords.length + moreRecords.length, 60_000, () => `first: ${first.metrics().processedRecords} records, tasks ${first.taskIds().join(' ')}`)
    assert.deepEqual(first.taskIds().sort(), ['0_0', '0_1', '0_2', '0_3'])
    assert.deepEqual(lostByFirst, [], 'the first lost no task')
    assert.deepEqual(firstErrors, [])
    await first.stop()
  })
})
