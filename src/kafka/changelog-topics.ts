import { PunctualError } from '../errors.js'
import type { ChangelogRecord } from '../runtime/changelog.js'
import { changelogTopic, taskChangelogTopic } from './topics.js'

/** A changelog record as a Kafka record: its topic, key and value (null: a tombstone). */
export interface ChangelogMessage {
  readonly topic: string
  readonly key: Buffer
  readonly value: Buffer | null
}

/** Stores of punctual's own parts of a task (`changelog-records.ts`): clocks and positions, timers, keyed state. */
const OWN_PREFIX = 'punctual.'

/**
 * Where the records of one sub-topology's changelog go on Kafka, and back. A state store's records go to
 * its own compacted topic as they are (key and value as the store's serdes wrote them). punctual's own
 * parts share one topic per sub-topology; their
 * key carries the part's name in front (a 16-bit length, then its UTF-8), so that compaction keeps the
 * last value per part and key.
 */
export class ChangelogTopics {
  private readonly storeTopics = new Map<string, string>()
  private readonly storeOfTopic = new Map<string, string>()
  readonly ownTopic: string

  constructor(applicationId: string, subtopology: number, stores: readonly string[]) {
    this.ownTopic = taskChangelogTopic(applicationId, subtopology)
    for (const store of stores) {
      const topic = changelogTopic(applicationId, store)
      this.storeTopics.set(store, topic)
      this.storeOfTopic.set(topic, store)
    }
  }

  /** The topics a task of this sub-topology restores from. */
  topics(): string[] {
    return [...this.storeTopics.values(), this.ownTopic]
  }

  toMessage(record: ChangelogRecord): ChangelogMessage {
    const value = record.value === null ? null : Buffer.from(record.value.buffer, record.value.byteOffset, record.value.byteLength)
    if (record.store.startsWith(OWN_PREFIX)) {
      const nameLength = Buffer.byteLength(record.store, 'utf8')
      const key = Buffer.allocUnsafe(2 + nameLength + record.key.byteLength)
      key.writeUInt16BE(nameLength, 0)
      key.write(record.store, 2, 'utf8')
      key.set(record.key, 2 + nameLength)
      return { topic: this.ownTopic, key, value }
    }
    const topic = this.storeTopics.get(record.store)
    if (topic === undefined) throw new PunctualError('ILLEGAL_STATE', `changelog record of store "${record.store}", which the sub-topology does not have`)
    return { topic, key: Buffer.from(record.key.buffer, record.key.byteOffset, record.key.byteLength), value }
  }

  fromMessage(topic: string, key: Buffer, value: Buffer | null): ChangelogRecord {
    if (topic === this.ownTopic) {
      const nameEnd = key.length >= 2 ? 2 + key.readUInt16BE(0) : Infinity
      if (nameEnd > key.length) throw new PunctualError('DESERIALIZATION', `changelog topic ${topic}: a record key is malformed (${key.length} bytes)`)
      const store = key.toString('utf8', 2, nameEnd)
      if (!store.startsWith(OWN_PREFIX)) throw new PunctualError('DESERIALIZATION', `changelog topic ${topic}: a record names the part ${JSON.stringify(store)}, which is not punctual's`)
      return { store, key: key.subarray(nameEnd), value }
    }
    const store = this.storeOfTopic.get(topic)
    if (store === undefined) throw new PunctualError('ILLEGAL_STATE', `${topic} is not a changelog topic of this sub-topology`)
    return { store, key, value }
  }
}
