import type * as Client from '@confluentinc/kafka-javascript'
import { loadKafkaClient } from '../../src/kafka/client.js'
import { partitionForStringKey } from '../../src/processor/murmur2.js'

/** The broker of `npm run test:kafka`. */
export function bootstrapServers(): string {
  const bootstrap = process.env.PUNCTUAL_KAFKA_BOOTSTRAP
  if (bootstrap === undefined) throw new Error('PUNCTUAL_KAFKA_BOOTSTRAP is not set: run these tests with npm run test:kafka')
  return bootstrap
}

export interface TextRecord {
  readonly key: string
  readonly value: string
  readonly timestamp: number
}

/** A record as read back, with its headers (values as UTF-8 text) and its value's bytes. */
export interface ReadRecord extends TextRecord {
  readonly offset: number
  readonly bytes: Buffer | null
  readonly headers: Readonly<Record<string, string>>
  /** The headers' values as bytes (a commit number's six bytes, say). */
  readonly headerBytes: Readonly<Record<string, Buffer>>
}

/** What the tests do on the cluster: create topics, write records as a Java producer would partition them, read a topic to its end. */
export class TestCluster {
  private constructor(
    private readonly client: typeof Client,
    private readonly admin: Client.KafkaJS.Admin,
    readonly bootstrap: string,
  ) {}

  /** The cluster at `bootstrap`: by default the broker of `npm run test:kafka`. */
  static async connect(bootstrap = bootstrapServers()): Promise<TestCluster> {
    const client = await loadKafkaClient()
    const admin = new client.KafkaJS.Kafka({ kafkaJS: { brokers: [bootstrap], logLevel: client.KafkaJS.logLevel.ERROR } }).admin()
    await admin.connect()
    return new TestCluster(client, admin, bootstrap)
  }

  async createTopic(topic: string, partitions: number): Promise<void> {
    await this.admin.createTopics({ topics: [{ topic, numPartitions: partitions }] })
    for (let i = 0; i < 100; i++) {
      const meta = await this.admin.fetchTopicMetadata({ topics: [topic] }).catch(() => [])
      if (meta[0]?.partitions.length === partitions) return
      await new Promise((r) => setTimeout(r, 100))
    }
    throw new Error(`topic ${topic} did not appear`)
  }

  /** The names of the topics on the cluster. */
  async topics(): Promise<string[]> {
    return this.admin.listTopics()
  }

  /** Deletes every topic whose name starts with `prefix`. */
  async deleteTopics(prefix: string): Promise<void> {
    const ours = (await this.admin.listTopics()).filter((t) => t.startsWith(prefix))
    if (ours.length > 0) await this.admin.deleteTopics({ topics: ours })
  }

  /**
   * Writes string records, each to the partition Kafka's default (murmur2) partitioner gives its key;
   * `transactional`: each 5,000 in a transaction of their own, so each batch ends with a commit marker.
   */
  async produce(
    topic: string,
    partitions: number,
    records: ReadonlyArray<TextRecord | { readonly key: string; readonly value: Buffer | null; readonly timestamp: number; readonly headers?: Record<string, Buffer> }>,
    { transactional = false }: { transactional?: boolean } = {},
  ): Promise<void> {
    const producer = new this.client.KafkaJS.Kafka({ kafkaJS: { brokers: [this.bootstrap], logLevel: this.client.KafkaJS.logLevel.ERROR } }).producer({
      kafkaJS: { idempotent: true, ...(transactional ? { transactionalId: `test-producer-${topic}` } : {}) },
    })
    await producer.connect()
    for (let i = 0; i < records.length; i += 5000) {
      const sender = transactional ? await producer.transaction() : producer
      await sender.send({
        topic,
        messages: records.slice(i, i + 5000).map((r) => ({
          key: r.key,
          value: r.value,
          timestamp: String(r.timestamp),
          partition: partitionForStringKey(r.key, partitions),
          ...('headers' in r && r.headers !== undefined ? { headers: r.headers } : {}),
        })),
      })
      if (transactional) await sender.commit()
    }
    await producer.disconnect()
  }

  /**
   * Every committed record of `topic`, per partition in offset order, read to the end as it is now: to
   * the high watermark, so that a transaction still open (a killed instance's, until it times out) is
   * waited for rather than ending the read at the last stable offset before it.
   */
  async readAll(topic: string, partitions: number): Promise<ReadRecord[][]> {
    const consumer = new this.client.RdKafka.KafkaConsumer({
      'bootstrap.servers': this.bootstrap,
      'group.id': `reader-${topic}`,
      'enable.auto.commit': false,
      'enable.partition.eof': true,
      'isolation.level': 'read_committed',
    } as Client.ConsumerGlobalConfig)
    await new Promise<void>((resolve, reject) => consumer.connect({}, (err) => (err ? reject(err) : resolve())))
    const out: ReadRecord[][] = Array.from({ length: partitions }, () => [])
    const highs = await Promise.all(
      Array.from({ length: partitions }, (_, partition) =>
        new Promise<number>((resolve, reject) => consumer.queryWatermarkOffsets(topic, partition, 10_000, (err, o) => (err ? reject(err) : resolve(o.highOffset)))),
      ),
    )
    const ended = new Set<number>()
    consumer.on('partition.eof', (eof) => {
      if (eof.offset >= (highs[eof.partition] as number)) ended.add(eof.partition)
    })
    consumer.assign(Array.from({ length: partitions }, (_, partition) => ({ topic, partition, offset: -2 })))
    while (ended.size < partitions) {
      const batch = await new Promise<Client.Message[]>((resolve, reject) => consumer.consume(1000, (err, m) => (err && err.code !== -185 ? reject(err) : resolve(m ?? []))))
      for (const m of batch) {
        const headers = Object.fromEntries((m.headers ?? []).flatMap((h) => Object.entries(h).map(([k, v]) => [k, String(v)])))
        const headerBytes = Object.fromEntries((m.headers ?? []).flatMap((h) => Object.entries(h).map(([k, v]) => [k, Buffer.from(v)])))
        out[m.partition]?.push({ key: String(m.key), value: String(m.value), timestamp: m.timestamp ?? 0, offset: m.offset, bytes: m.value ?? null, headers, headerBytes })
      }
    }
    await new Promise<void>((resolve) => consumer.disconnect(() => resolve()))
    return out
  }

  /** Each partition's log start offset (low) and high watermark, in partition order. */
  async offsets(topic: string): Promise<Array<{ low: number; high: number }>> {
    const offsets = await this.admin.fetchTopicOffsets(topic)
    return offsets.sort((a, b) => a.partition - b.partition).map((o) => ({ low: Number(o.low), high: Number(o.high) }))
  }

  /** The group's committed offset of each partition of `topic`, in partition order (-1: none). */
  async committed(group: string, topic: string): Promise<number[]> {
    const [offsets] = await this.admin.fetchOffsets({ groupId: group, topics: [topic] })
    return (offsets?.partitions ?? []).sort((a, b) => a.partition - b.partition).map((p) => Number(p.offset))
  }

  /** The metadata of the group's committed offset of each partition of `topic`, in partition order. */
  async committedMarks(group: string, topic: string): Promise<Array<string | undefined>> {
    const [offsets] = await this.admin.fetchOffsets({ groupId: group, topics: [topic] })
    return (offsets?.partitions ?? []).sort((a, b) => a.partition - b.partition).map((p) => (p as { metadata?: string | null }).metadata ?? undefined)
  }

  async close(): Promise<void> {
    await this.admin.disconnect()
  }
}
