// A producer per task (exactly-once in a streams group): each task's transaction commits its records
// and offsets alone, and a producer of the task's id on another instance fences this one's for good.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { validateKafkaRuntimeConfig } from '../../src/kafka/config.js'
import { StreamsProducer } from '../../src/kafka/streams-producer.js'
import { TaskProducers } from '../../src/kafka/task-producers.js'
import { silentLogger } from '../../src/index.js'
import { MockCluster } from './mock-clients.js'
import type { GroupConsumer } from '../../src/kafka/client-supplier.js'

const config = validateKafkaRuntimeConfig({ applicationId: 'app', bootstrapServers: 'mock:9092', processingGuarantee: 'exactly_once_v2', logger: silentLogger })

function instance(cluster: MockCluster) {
  const supplier = cluster.supplier()
  const failures: Error[] = []
  const events = { transactionFailed: (err: Error) => failures.push(err), failed: (err: Error) => failures.push(err) }
  const consumer = supplier.getConsumer({ 'group.id': 'app' }) as GroupConsumer
  const producers = new TaskProducers((taskId) => new StreamsProducer(supplier, config, `app-${taskId}`, silentLogger, events, false), consumer, silentLogger)
  return { producers, failures }
}

describe('TaskProducers', () => {
  it('commits each task in a transaction of its own producer, its records and its offsets together', async () => {
    const cluster = new MockCluster()
    cluster.createTopic('out', 2)
    const { producers } = instance(cluster)
    assert.deepEqual(await producers.open(['0_0', '0_1']), ['0_0', '0_1'])
    for (const [task, partition] of [['0_0', 0], ['0_1', 1]] as const) {
      const { sink, client } = producers.scopeOf(task)
      sink.send('out', partition, Buffer.from('k'), Buffer.from(task), 0, [])
      await client.sendOffsetsToTransaction([{ topic: 'in', partition, offset: 7 + partition }])
      await client.commitTransaction()
      await client.beginTransaction()
    }
    assert.deepEqual(cluster.events.filter((e) => e.startsWith('commit')), ['commit 1 records, offsets in-0@7', 'commit 1 records, offsets in-1@8'])
    assert.deepEqual(cluster.committed('out').map((r) => r.value), ['0_0', '0_1'])
    await producers.close()
  })

  it('a task whose producer another instance took over is migrated: closed, not replaced, and not started again until the group takes it away', async () => {
    const cluster = new MockCluster()
    cluster.createTopic('out', 1)
    const zombie = instance(cluster)
    const owner = instance(cluster)
    await zombie.producers.open(['0_0', '0_1'])
    zombie.producers.scopeOf('0_0').sink.send('out', 0, Buffer.from('k'), Buffer.from('zombie'), 0, [])
    // The task's new owner initializes its producer: the zombie's is fenced, its open transaction aborted.
    await owner.producers.open(['0_0'])
    await assert.rejects(zombie.producers.scopeOf('0_0').client.commitTransaction(), (err: { code?: number }) => err.code === -144)
    await zombie.producers.abortOrReplace()
    assert.equal(cluster.producers.length, 3, 'no producer replaced the fenced one: it would fence the new owner in turn')
    assert.throws(() => zombie.producers.scopeOf('0_0'), /task 0_0 has no producer here/)
    assert.deepEqual(await zombie.producers.open(['0_0', '0_1']), ['0_1'], 'the migrated task does not start here again')
    // The owner commits: nothing of the zombie's is read.
    owner.producers.scopeOf('0_0').sink.send('out', 0, Buffer.from('k'), Buffer.from('owner'), 0, [])
    await owner.producers.scopeOf('0_0').client.commitTransaction()
    assert.deepEqual(cluster.committed('out').map((r) => r.value), ['owner'])
    // The group took the task from the zombie (revoked or lost), then gave it back: it starts again.
    await zombie.producers.closeTasks(['0_0'])
    assert.deepEqual(await zombie.producers.open(['0_0']), ['0_0'])
    await zombie.producers.close()
    await owner.producers.close()
  })
})
