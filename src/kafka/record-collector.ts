import { PunctualError } from '../errors.js'
import { RecordPartitioner } from '../processor/partitioner.js'
import type { Headers } from '../processor/api.js'
import type { RecordCollector } from '../processor/record-io.js'
import type { Serde } from '../processor/serdes.js'

/** Where a collector's records go: the producer (inside the open transaction, under exactly-once). */
export type ProduceRecord = (topic: string, partition: number, key: Uint8Array | null, value: Uint8Array | null, timestamp: number, headers: Headers) => void

/**
 * The sinks' collector on Kafka: serializes each record at once (an error surfaces at the writer),
 * chooses its partition as the embedded log does (murmur2 over the key's bytes), and hands it to the
 * producer under the topic's name on the cluster (the application's own topics carry its id).
 */
export class KafkaRecordCollector implements RecordCollector {
  private readonly partitioner = new RecordPartitioner()

  constructor(
    /** The cluster's name of each topic the topology writes (`TopicPlan.names`). */
    private readonly names: ReadonlyMap<string, string>,
    /** Partition counts by the cluster's topic names. */
    private readonly counts: ReadonlyMap<string, number>,
    private readonly produce: ProduceRecord,
  ) {}

  partitionsFor(topic: string): number {
    const count = this.counts.get(this.names.get(topic) ?? topic)
    if (count === undefined) throw new PunctualError('ILLEGAL_STATE', `topic "${topic}" is not a topic this application writes on the cluster`)
    return count
  }

  send(topic: string, partition: number | undefined, key: unknown, keySerde: Serde<unknown>, value: unknown, valueSerde: Serde<unknown>, timestamp: number, headers: Headers): number {
    const name = this.names.get(topic) ?? topic
    const count = this.partitionsFor(topic)
    const keyBytes = keySerde.serialize(key, name)
    const valueBytes = valueSerde.serialize(value, name)
    const p = this.partitioner.choose(name, count, partition, key, keySerde, keyBytes)
    this.produce(name, p, keyBytes, valueBytes, timestamp, headers)
    return p
  }
}
