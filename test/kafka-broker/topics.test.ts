import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { PunctualError } from '../../src/errors.js'
import { Serdes, StreamsBuilder } from '../../src/index.js'
import { ensureTopics, topicPartitions, waitForTopics } from '../../src/kafka/admin.js'
import { loadKafkaClient } from '../../src/kafka/client.js'
import type { KafkaClient } from '../../src/kafka/client.js'

const bootstrap = process.env.PUNCTUAL_KAFKA_BOOTSTRAP
if (bootstrap === undefined) throw new Error('PUNCTUAL_KAFKA_BOOTSTRAP is not set: run these tests with npm run test:kafka')

describe("an application's topics on a real broker", () => {
  let admin: ReturnType<InstanceType<KafkaClient['KafkaJS']['Kafka']>['admin']>
  const run = `t${process.pid}${Date.now()}`
  const app = `${run}-app`
  const input = `${run}-in`
  const output = `${run}-out`

  before(async () => {
    const client = await loadKafkaClient()
    admin = new client.KafkaJS.Kafka({ kafkaJS: { brokers: [bootstrap], logLevel: client.KafkaJS.logLevel.ERROR } }).admin()
    await admin.connect()
  })

  after(async () => {
    const ours = (await admin.listTopics()).filter((t) => t.startsWith(run))
    if (ours.length > 0) await admin.deleteTopics({ topics: ours })
    await admin.disconnect()
  })

  function topology() {
    const b = new StreamsBuilder()
    b.stream<string, string>(input)
      .groupBy((_k, v) => v, { name: 'by-value', keySerde: Serdes.String() })
      .count({ name: 'counts' })
      .toStream()
      .to(output, { valueSerde: Serdes.JSON() })
    return b.build()
  }

  it('refuses to start while a source topic is missing, naming it', async () => {
    await admin.createTopics({ topics: [{ topic: output, numPartitions: 1 }] })
    await waitForTopics(admin, new Map([[output, 1]]))
    await assert.rejects(ensureTopics(admin, topology(), app), (err: unknown) => err instanceof PunctualError && err.message.includes(`these topics do not exist on the cluster: ${input}`))
  })

  it('creates the repartition and changelog topics with the partitions of their tasks, once', async () => {
    await admin.createTopics({ topics: [{ topic: input, numPartitions: 3 }] })
    await waitForTopics(admin, new Map([[input, 3]]))
    const plan = await ensureTopics(admin, topology(), app)
    const counts = await topicPartitions(admin)
    const created = [`${app}-by-value-repartition`, `${app}-punctual-0-changelog`, `${app}-counts-changelog`, `${app}-punctual-1-changelog`]
    assert.deepEqual(
      created.map((t) => counts.get(t)),
      [3, 3, 3, 3],
    )
    assert.deepEqual(
      plan.create.map((t) => t.name),
      created,
    )
    // A second instance (or a restart) finds them and creates nothing.
    await ensureTopics(admin, topology(), app)
    assert.equal((await admin.listTopics()).filter((t) => t.startsWith(app)).length, created.length)
  })
})
