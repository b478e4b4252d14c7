import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { loadKafkaClient } from '../../src/kafka/client.js'
import type { KafkaClient } from '../../src/kafka/client.js'

const bootstrap = process.env.PUNCTUAL_KAFKA_BOOTSTRAP
if (bootstrap === undefined) throw new Error('PUNCTUAL_KAFKA_BOOTSTRAP is not set: run these tests with npm run test:kafka')

/**
 * The ground the Kafka runtime stands on: the broker `npm run test:kafka` provisions, and the client,
 * which creates a topic, writes to it and reads back what it wrote.
 */
describe('the Kafka broker of the tests, through the client', () => {
  let client: KafkaClient
  let kafka: InstanceType<KafkaClient['KafkaJS']['Kafka']>
  const topic = `punctual-test-${process.pid}-${Date.now()}`

  before(async () => {
    client = await loadKafkaClient()
    assert.equal(await loadKafkaClient(), client, 'loaded once per process')
    kafka = new client.KafkaJS.Kafka({ kafkaJS: { brokers: [bootstrap], logLevel: client.KafkaJS.logLevel.ERROR } })
  })

  after(async () => {
    const admin = kafka.admin()
    await admin.connect()
    await admin.deleteTopics({ topics: [topic] }).catch(() => {})
    await admin.disconnect()
  })

  it('creates a topic of 4 partitions, writes 1,000 keyed records, and reads them back in order per partition', async () => {
    const admin = kafka.admin()
    await admin.connect()
    await admin.createTopics({ topics: [{ topic, numPartitions: 4 }] })
    const partitions = (await admin.fetchTopicMetadata({ topics: [topic] }))[0]?.partitions.length
    await admin.disconnect()
    assert.equal(partitions, 4)

    // Idempotent: a batch retried (a new topic's leader may not be known at once) keeps its place.
    const producer = kafka.producer({ kafkaJS: { idempotent: true } })
    await producer.connect()
    const sent = Array.from({ length: 1000 }, (_, i) => ({ key: `k${i % 10}`, value: String(i) }))
    await producer.send({ topic, messages: sent })
    await producer.disconnect()

    const consumer = kafka.consumer({ kafkaJS: { groupId: `${topic}-reader`, fromBeginning: true } })
    await consumer.connect()
    await consumer.subscribe({ topics: [topic] })
    const received: Array<{ key: string; value: string; partition: number }> = []
    await new Promise<void>((resolve, reject) => {
      consumer
        .run({
          eachMessage: async ({ partition, message }) => {
            received.push({ key: String(message.key), value: String(message.value), partition })
            if (received.length === sent.length) resolve()
          },
        })
        .catch(reject)
    })
    await consumer.disconnect()

    // Every record once; a key's records in one partition, in the order they were written.
    assert.equal(received.length, sent.length)
    for (let k = 0; k < 10; k++) {
      const ofKey = received.filter((r) => r.key === `k${k}`)
      assert.equal(new Set(ofKey.map((r) => r.partition)).size, 1, `k${k} is in one partition`)
      assert.deepEqual(
        ofKey.map((r) => Number(r.value)),
        sent.filter((s) => s.key === `k${k}`).map((s) => Number(s.value)),
      )
    }
  })
})
