import { createHash } from 'node:crypto'
import type { Processor, ProcessorContext } from '../processor/api.js'
import type { Serde } from '../processor/serdes.js'
import type { TableGetter } from './table-table-join.js'
import type { SubscriptionStore } from './subscription-store.js'

/**
 * A foreign-key table-table join (KIP-213) as Kafka Streams 4.4 runs it, in four steps over two
 * internal topics:
 * 1. each update of the left table subscribes its key to the foreign key its value names (and
 *    unsubscribes from the one its old value named), through the subscription registration topic,
 *    partitioned like the right table;
 * 2. next to the right table, the subscriptions wait in a store by (foreign key, primary key); a
 *    subscription looks the right table up and answers, and an update of the right table answers every
 *    subscriber of its key, through the subscription response topic, back to the left key's partition;
 * 3. next to the left table, an answer is joined with the left table's current value, and dropped when
 *    that value is no longer the one that subscribed (a hash of its bytes says so), so a key whose
 *    foreign key changed emits nothing stale.
 */

/** What a subscription asks the right side to do (Kafka Streams' `SubscriptionWrapper.Instruction`). */
export const Instruction = {
  /** Unsubscribe; no answer (the key subscribes to its new foreign key right after). */
  DELETE_KEY_NO_PROPAGATE: 0,
  /** Unsubscribe and answer null (the left value was deleted, or an inner join's foreign key became null). */
  DELETE_KEY_AND_PROPAGATE: 1,
  /** Subscribe and answer with the right value, null when the right table lacks the key. */
  PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE: 2,
  /** Subscribe and answer only when the right table holds the key. */
  PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE: 3,
} as const
export type Instruction = (typeof Instruction)[keyof typeof Instruction]

/** A left table update on its way to the right side, keyed by its foreign key. */
export interface Subscription<K> {
  /** Hash of the left value's bytes when it was sent; null for a deletion. */
  readonly hash: Uint8Array | null
  readonly instruction: Instruction
  readonly primaryKey: K
  /** The left key's partition, where the answer goes. */
  readonly primaryPartition: number
}

/** The right side's answer to a subscriber, keyed by the primary key. */
export interface SubscriptionResponse<VO> {
  readonly hash: Uint8Array | null
  readonly foreignValue: VO | null
  readonly primaryPartition: number
}

const HASH_BYTES = 16

/** A left value's hash: 16 bytes of MD5 over its serialized form (only compared for equality, never trusted). */
export function valueHash(bytes: Uint8Array | null): Uint8Array | null {
  return bytes === null ? null : createHash('md5').update(bytes).digest()
}

function sameHash(a: Uint8Array | null, b: Uint8Array | null): boolean {
  if (a === null || b === null) return a === b
  if (a.byteLength !== b.byteLength) return false
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false
  return true
}

/**
 * A subscription's bytes: version (1), instruction, hash flag (0 or 1), the 16-byte hash when present,
 * the primary partition (4 bytes, big-endian), then the primary key's bytes.
 */
export function subscriptionSerde<K>(primaryKeySerde: Serde<K>): Serde<Subscription<K>> {
  return {
    name: `Subscription<${primaryKeySerde.name}>`,
    serialize(s, topic) {
      if (s === null) return null
      const key = primaryKeySerde.serialize(s.primaryKey, topic) ?? new Uint8Array(0)
      const hashLength = s.hash === null ? 0 : HASH_BYTES
      const out = new Uint8Array(3 + hashLength + 4 + key.byteLength)
      out[0] = 1
      out[1] = s.instruction
      out[2] = s.hash === null ? 0 : 1
      if (s.hash !== null) out.set(s.hash, 3)
      new DataView(out.buffer).setInt32(3 + hashLength, s.primaryPartition)
      out.set(key, 7 + hashLength)
      return out
    },
    deserialize(data, topic) {
      if (data === null) return null
      if (data.byteLength < 7 || data[0] !== 1 || data[1]! > 3 || data[2]! > 1) throw new Error(`not a foreign-key join subscription: ${data.byteLength} bytes on topic ${topic}`)
      const hashLength = data[2] === 1 ? HASH_BYTES : 0
      if (data.byteLength < 7 + hashLength) throw new Error(`a foreign-key join subscription of ${data.byteLength} bytes is cut short on topic ${topic}`)
      return {
        instruction: data[1] as Instruction,
        hash: hashLength === 0 ? null : data.slice(3, 3 + HASH_BYTES),
        primaryPartition: new DataView(data.buffer, data.byteOffset, data.byteLength).getInt32(3 + hashLength),
        primaryKey: primaryKeySerde.deserialize(data.subarray(7 + hashLength), topic) as K,
      }
    },
  }
}

/**
 * A response's bytes: flags (1: a hash, 2: a foreign value), the 16-byte hash when present, the primary
 * partition (4 bytes, big-endian), then the foreign value's bytes.
 */
export function subscriptionResponseSerde<VO>(foreignValueSerde: Serde<VO>): Serde<SubscriptionResponse<VO>> {
  return {
    name: `SubscriptionResponse<${foreignValueSerde.name}>`,
    serialize(r, topic) {
      if (r === null) return null
      const value = r.foreignValue === null ? null : foreignValueSerde.serialize(r.foreignValue, topic)
      const hashLength = r.hash === null ? 0 : HASH_BYTES
      const out = new Uint8Array(1 + hashLength + 4 + (value?.byteLength ?? 0))
      out[0] = (r.hash === null ? 0 : 1) | (value === null ? 0 : 2)
      if (r.hash !== null) out.set(r.hash, 1)
      new DataView(out.buffer).setInt32(1 + hashLength, r.primaryPartition)
      if (value !== null) out.set(value, 5 + hashLength)
      return out
    },
    deserialize(data, topic) {
      if (data === null) return null
      if (data.byteLength < 5 || data[0]! > 3) throw new Error(`not a foreign-key join response: ${data.byteLength} bytes on topic ${topic}`)
      const hashLength = (data[0]! & 1) === 0 ? 0 : HASH_BYTES
      if (data.byteLength < 5 + hashLength) throw new Error(`a foreign-key join response of ${data.byteLength} bytes is cut short on topic ${topic}`)
      return {
        hash: hashLength === 0 ? null : data.slice(1, 1 + HASH_BYTES),
        primaryPartition: new DataView(data.buffer, data.byteOffset, data.byteLength).getInt32(1 + hashLength),
        foreignValue: (data[0]! & 2) === 0 ? null : foreignValueSerde.deserialize(data.subarray(5 + hashLength), topic),
      }
    },
  }
}

/**
 * Step 1, below the left table (Kafka Streams' SubscriptionSendProcessorSupplier): each update becomes
 * subscriptions keyed by foreign key. An inner join drops a value whose foreign key is null (after
 * unsubscribing the old one, with a null answer); a left join sends it with a null foreign key, and is
 * answered null.
 */
export function subscriptionSendProcessor<K, V, KO>(options: {
  readonly foreignKey: (value: V, key: K) => KO | null | undefined
  readonly foreignKeyId: (key: KO) => string
  readonly valueBytes: (value: V) => Uint8Array | null
  /** Made once per task: what the left table held for the key being updated. */
  readonly oldValue: (ctx: ProcessorContext<KO | null, Subscription<K>>) => () => V | null
  readonly leftJoin: boolean
}): () => Processor<K, V | null, KO | null, Subscription<K>> {
  const { foreignKey, foreignKeyId, valueBytes, leftJoin } = options
  return () => {
    let ctx: ProcessorContext<KO | null, Subscription<K>>
    let oldValueOf: () => V | null
    return {
      init(c) {
        ctx = c
        oldValueOf = options.oldValue(c)
      },
      process(record) {
        const key = record.key
        const newValue = record.value ?? null
        const oldValue = oldValueOf()
        if (oldValue === null && newValue === null) return
        const oldFk = oldValue === null ? null : (foreignKey(oldValue, key) ?? null)
        const newFk = newValue === null ? null : (foreignKey(newValue, key) ?? null)
        const changed = oldFk !== null && (newFk === null || foreignKeyId(newFk) !== foreignKeyId(oldFk))
        // At most an unsubscription from the old foreign key, then a subscription to the new one.
        let unsubscribe: Instruction | undefined
        let subscribe: Instruction | undefined
        if (leftJoin) {
          if (changed) unsubscribe = Instruction.DELETE_KEY_NO_PROPAGATE
          subscribe = Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE
        } else if (newValue === null || newFk === null) {
          // Deleted, or dropped for its null foreign key: the old one, if any, is unsubscribed and answered null.
          if (oldFk === null) return
          unsubscribe = Instruction.DELETE_KEY_AND_PROPAGATE
        } else if (changed) {
          unsubscribe = Instruction.DELETE_KEY_NO_PROPAGATE
          subscribe = Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE
        } else subscribe = Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE
        const hash = newValue === null ? null : valueHash(valueBytes(newValue))
        const partition = ctx.taskId.partition
        const { timestamp, headers } = record
        if (unsubscribe !== undefined) ctx.forward({ key: oldFk, value: { hash, instruction: unsubscribe, primaryKey: key, primaryPartition: partition }, timestamp, headers })
        if (subscribe !== undefined) ctx.forward({ key: newFk, value: { hash, instruction: subscribe, primaryKey: key, primaryPartition: partition }, timestamp, headers })
      },
    }
  }
}

/** A received subscription on its way to the right table's lookup. */
export interface ReceivedSubscription<K, KO> {
  readonly foreignKey: KO | null
  readonly subscription: Subscription<K>
}

/**
 * Step 2a, reading the registration topic next to the right table (Kafka Streams'
 * SubscriptionReceiveProcessorSupplier): stores or removes the subscription, then passes it on. A
 * subscription with a null foreign key (a left join's) is passed on without being stored; another with
 * one is dropped.
 */
export function subscriptionReceiveProcessor<K, KO>(
  storeName: string,
  foreignKeyId: (key: KO) => string,
  primaryKeyId: (key: K) => string,
): () => Processor<KO | null, Subscription<K>, K, ReceivedSubscription<K, KO>> {
  return () => {
    let ctx: ProcessorContext<K, ReceivedSubscription<K, KO>>
    let store: SubscriptionStore<K>
    return {
      init(c) {
        ctx = c
        store = c.getStateStore(storeName)
      },
      process(record) {
        const s = record.value
        if (s === null || s === undefined) return
        const fk = record.key ?? null
        if (fk === null && s.instruction !== Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE) return
        if (fk !== null) {
          const fkId = foreignKeyId(fk)
          const pkId = primaryKeyId(s.primaryKey)
          if (s.instruction === Instruction.DELETE_KEY_AND_PROPAGATE || s.instruction === Instruction.DELETE_KEY_NO_PROPAGATE) store.delete(fkId, pkId)
          else store.put(fkId, pkId, { hash: s.hash, primaryKey: s.primaryKey, primaryPartition: s.primaryPartition, ts: record.timestamp })
        }
        ctx.forward({ key: s.primaryKey, value: { foreignKey: fk, subscription: s }, timestamp: record.timestamp, headers: record.headers })
      },
    }
  }
}

/**
 * Step 2b (Kafka Streams' SubscriptionJoinProcessorSupplier): answers a subscription with the right
 * table's value of its foreign key, at the later of the subscription's and that value's timestamps.
 */
export function subscriptionJoinProcessor<K, KO, VO>(
  foreignKeyId: (key: KO) => string,
  rightTable: (ctx: ProcessorContext<K, SubscriptionResponse<VO>>) => TableGetter<VO>,
): () => Processor<K, ReceivedSubscription<K, KO>, K, SubscriptionResponse<VO>> {
  return () => {
    let ctx: ProcessorContext<K, SubscriptionResponse<VO>>
    let right: TableGetter<VO>
    return {
      init(c) {
        ctx = c
        right = rightTable(c)
      },
      process(record) {
        const r = record.value
        const s = r.subscription
        const foreign = r.foreignKey === null ? null : right(foreignKeyId(r.foreignKey))
        const timestamp = foreign === null ? record.timestamp : Math.max(record.timestamp, foreign.ts)
        let foreignValue: VO | null
        switch (s.instruction) {
          case Instruction.DELETE_KEY_AND_PROPAGATE:
            foreignValue = null
            break
          case Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE:
            foreignValue = foreign === null ? null : foreign.value
            break
          case Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE:
            if (foreign === null) return
            foreignValue = foreign.value
            break
          default:
            return
        }
        ctx.forward({ key: s.primaryKey, value: { hash: s.hash, foreignValue, primaryPartition: s.primaryPartition }, timestamp, headers: record.headers })
      },
    }
  }
}

/**
 * Step 2c, below the right table (Kafka Streams' ForeignTableJoinProcessorSupplier): an update of a
 * right key answers each of its subscribers, in primary key order, at the update's timestamp (null
 * for a deletion).
 */
export function foreignTableJoinProcessor<K, KO, VO>(storeName: string, foreignKeyId: (key: KO) => string): () => Processor<KO, VO | null, K, SubscriptionResponse<VO>> {
  return () => {
    let ctx: ProcessorContext<K, SubscriptionResponse<VO>>
    let store: SubscriptionStore<K>
    return {
      init(c) {
        ctx = c
        store = c.getStateStore(storeName)
      },
      process(record) {
        if (record.key === null || record.key === undefined) return
        const foreignValue = record.value ?? null
        for (const s of store.subscribers(foreignKeyId(record.key))) {
          ctx.forward({ key: s.primaryKey, value: { hash: s.hash, foreignValue, primaryPartition: s.primaryPartition }, timestamp: record.timestamp, headers: record.headers })
        }
      },
    }
  }
}

/**
 * Step 3, reading the response topic next to the left table (Kafka Streams'
 * ResponseJoinProcessorSupplier): joins an answer with the left table's current value when that value
 * is still the one that subscribed; a stale answer is dropped. The result is null (a tombstone) when
 * the answer holds no right value, unless a left join still holds the left value.
 */
export function responseJoinProcessor<K, V, VO, VR>(options: {
  readonly primaryKeyId: (key: K) => string
  readonly valueBytes: (value: V) => Uint8Array | null
  readonly leftTable: (ctx: ProcessorContext<K, VR | null>) => TableGetter<V>
  readonly joiner: (value: V | null, foreignValue: VO | null, key: K) => VR
  readonly leftJoin: boolean
}): () => Processor<K, SubscriptionResponse<VO>, K, VR | null> {
  const { primaryKeyId, valueBytes, joiner, leftJoin } = options
  return () => {
    let ctx: ProcessorContext<K, VR | null>
    let left: TableGetter<V>
    return {
      init(c) {
        ctx = c
        left = options.leftTable(c)
      },
      process(record) {
        const r = record.value
        if (r === null || r === undefined || record.key === null || record.key === undefined) return
        const current = left(primaryKeyId(record.key))
        const currentHash = current === null ? null : valueHash(valueBytes(current.value))
        if (!sameHash(r.hash, currentHash)) return
        const value = r.foreignValue !== null || (leftJoin && current !== null) ? joiner(current === null ? null : current.value, r.foreignValue, record.key) : null
        ctx.forward({ key: record.key, value, timestamp: record.timestamp, headers: record.headers })
      },
    }
  }
}
