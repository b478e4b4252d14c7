import { PunctualError } from '../../errors.js'
import type { Headers } from '../../processor/api.js'
import { Serdes } from '../../processor/serdes.js'
import type { Serde } from '../../processor/serdes.js'
import { store, storedSerde } from '../../processor/record-io.js'
import type { InputPartition, RecordCollector } from '../../processor/record-io.js'
import { PartitionLog } from './partition-log.js'
import { RecordPartitioner } from '../../processor/partitioner.js'

const BYTES = Serdes.Bytes() as Serde<unknown>

/** A set of in-memory partitioned topics. Both the embedded runtime and the test driver store data here. */
export class TopicRegistry implements RecordCollector {
  private readonly topics = new Map<string, PartitionLog[]>()
  private readonly partitioner = new RecordPartitioner()

  constructor(
    private readonly defaultPartitions: number,
    /** Told after every append to any partition (the embedded runtime wakes up on it). */
    private readonly onAppend?: () => void,
  ) {}

  /** Creates a topic, or checks that an existing one has the asked partition count. */
  create(topic: string, partitions = this.defaultPartitions): PartitionLog[] {
    if (!Number.isSafeInteger(partitions) || partitions < 1) {
      throw new PunctualError('INVALID_CONFIG', `topic "${topic}": partitions must be an integer >= 1, got ${partitions}`)
    }
    const existing = this.topics.get(topic)
    if (existing !== undefined) {
      if (existing.length !== partitions) {
        throw new PunctualError('INVALID_CONFIG', `topic "${topic}" already exists with ${existing.length} partitions, not ${partitions}`)
      }
      return existing
    }
    const logs = Array.from({ length: partitions }, (_, p) => new PartitionLog(topic, p))
    if (this.onAppend !== undefined) for (const log of logs) log.onAppend(this.onAppend)
    this.topics.set(topic, logs)
    return logs
  }

  has(topic: string): boolean {
    return this.topics.has(topic)
  }

  partitions(topic: string): PartitionLog[] {
    return this.topics.get(topic) ?? this.create(topic)
  }

  partitionsFor(topic: string): number {
    return this.partitions(topic).length
  }

  /** What a task reads and writes through, over these topics: their partitions and this registry. */
  taskIo(): { inputs: (topic: string, partition: number) => InputPartition | undefined; collector: RecordCollector } {
    return { inputs: (topic, partition) => this.partitions(topic)[partition], collector: this }
  }

  names(): string[] {
    return [...this.topics.keys()]
  }

  send(
    topic: string,
    partition: number | undefined,
    key: unknown,
    keySerde: Serde<unknown>,
    value: unknown,
    valueSerde: Serde<unknown>,
    timestamp: number,
    headers: Headers,
  ): number {
    const logs = this.partitions(topic)
    const storedKey = store(keySerde, topic, key)
    const storedValue = store(valueSerde, topic, value)
    // A key stored typed (an identity serde) is serialized only if partitioning needs its bytes.
    const p = this.partitioner.choose(topic, logs.length, partition, key, keySerde, keySerde.inMemoryIdentity === true ? undefined : (storedKey as Uint8Array | null))
    ;(logs[p] as PartitionLog).appendFields(storedKey, storedSerde(keySerde), storedValue, storedSerde(valueSerde), timestamp, headers)
    return p
  }

  /** Appends already serialized bytes (what a raw producer or a test of bad input writes). */
  sendBytes(topic: string, partition: number | undefined, key: Uint8Array | null, value: Uint8Array | null, timestamp: number, headers: Headers): number {
    return this.send(topic, partition, key, BYTES, value, BYTES, timestamp, headers)
  }
}
