import { PunctualError } from '../errors.js'
import type { Serde } from './serdes.js'
import { partitionForKey, partitionForStringKey } from './murmur2.js'

/**
 * Chooses the partition of a record a sink writes, as Kafka's Java producer does for keyed records:
 * murmur2 over the key's bytes; a record with a null key goes round robin (Kafka spreads them, sticky
 * per batch). The embedded log and the Kafka runtime choose through the same one, so a key lands in the
 * same partition on both (librdkafka's own default, CRC32, would not agree with Java producers).
 */
export class RecordPartitioner {
  private roundRobin = 0

  /**
   * The partition of a record for a topic of `count` partitions: `partition` when given (checked), else
   * by key. `keyBytes` is the key's serialized form when the caller has it; undefined means the serde
   * serializes it here if needed (a string key with the String serde needs no bytes at all).
   */
  choose(topic: string, count: number, partition: number | undefined, key: unknown, keySerde: Serde<unknown>, keyBytes: Uint8Array | null | undefined): number {
    if (partition !== undefined) {
      if (!Number.isInteger(partition) || partition < 0 || partition >= count) {
        throw new PunctualError('INVALID_CONFIG', `topic "${topic}" has ${count} partitions; partition ${partition} does not exist`)
      }
      return partition
    }
    if (count === 1) return 0
    if (typeof key === 'string' && keySerde.name === 'String') return partitionForStringKey(key, count)
    if (key !== null) {
      const bytes = keyBytes === undefined ? keySerde.serialize(key, topic) : keyBytes
      if (bytes !== null) return partitionForKey(bytes, count)
    }
    return this.roundRobin++ % count
  }
}
