import type { KeyValueStore, Processor, ProcessorContext } from '../processor/api.js'
import type { Serde } from '../processor/serdes.js'
import type { KeyValue } from './options.js'

/**
 * A table update as a grouped table's repartition topic carries it (Kafka Streams' `Change`): the value
 * to add to the new group, the one to take out of the old group, or both when the group stays.
 */
export interface Change<V> {
  readonly newValue: V | null
  readonly oldValue: V | null
}

/**
 * A `Change`'s bytes: a flags byte (1: a new value, 2: an old value), the new value's length (4 bytes,
 * big-endian), the new value's bytes, then the old value's.
 */
export function changeSerde<V>(inner: Serde<V>): Serde<Change<V>> {
  return {
    name: `Change<${inner.name}>`,
    serialize(change, topic) {
      if (change === null) return null
      const n = change.newValue === null ? null : inner.serialize(change.newValue, topic)
      const o = change.oldValue === null ? null : inner.serialize(change.oldValue, topic)
      const out = new Uint8Array(5 + (n?.byteLength ?? 0) + (o?.byteLength ?? 0))
      out[0] = (n === null ? 0 : 1) | (o === null ? 0 : 2)
      new DataView(out.buffer).setUint32(1, n?.byteLength ?? 0)
      if (n !== null) out.set(n, 5)
      if (o !== null) out.set(o, 5 + (n?.byteLength ?? 0))
      return out
    },
    deserialize(data, topic) {
      if (data === null) return null
      if (data.byteLength < 5 || data[0]! > 3) throw new Error(`not a grouped table's change: ${data.byteLength} bytes, flags ${data[0]} on topic ${topic}`)
      const length = new DataView(data.buffer, data.byteOffset, data.byteLength).getUint32(1)
      if (5 + length > data.byteLength) throw new Error(`a grouped table's change holds ${data.byteLength} bytes, fewer than its new value's ${length} on topic ${topic}`)
      return {
        newValue: (data[0]! & 1) === 0 ? null : inner.deserialize(data.subarray(5, 5 + length), topic),
        oldValue: (data[0]! & 2) === 0 ? null : inner.deserialize(data.subarray(5 + length), topic),
      }
    },
  }
}

/**
 * `KTable.groupBy`'s selector (Kafka Streams' KTableRepartitionMap): each table update maps the key's
 * old value (what the table held before, read through `oldValueReader`) and new value to their groups. When
 * both land in the same group one change carries both; otherwise the old value's removal goes first,
 * then the new value's addition. A pair whose key or value is null is skipped.
 */
export function tableSelectProcessor<K, V, KR, VR>(
  selector: (key: K, value: V) => KeyValue<KR, VR>,
  /** Made once per task: reads what the table held for the key of the update being processed. */
  oldValueReader: (ctx: ProcessorContext<KR, Change<VR>>) => () => V | null,
  sameKey: (a: KR, b: KR) => boolean,
): () => Processor<K, V | null, KR, Change<VR>> {
  return () => {
    let ctx: ProcessorContext<KR, Change<VR>>
    let oldValue: () => V | null
    return {
      init(c) {
        ctx = c
        oldValue = oldValueReader(c)
      },
      process(record) {
        const old = oldValue()
        const oldPair = old === null ? null : selector(record.key, old)
        const newPair = record.value === null ? null : selector(record.key, record.value)
        const hasOld = oldPair !== null && oldPair.key !== null && oldPair.key !== undefined && oldPair.value !== null && oldPair.value !== undefined
        const hasNew = newPair !== null && newPair.key !== null && newPair.key !== undefined && newPair.value !== null && newPair.value !== undefined
        const { timestamp, headers } = record
        if (hasOld && hasNew && sameKey(oldPair.key, newPair.key)) {
          ctx.forward({ key: newPair.key, value: { newValue: newPair.value, oldValue: oldPair.value }, timestamp, headers })
          return
        }
        if (hasOld) ctx.forward({ key: oldPair.key, value: { newValue: null, oldValue: oldPair.value }, timestamp, headers })
        if (hasNew) ctx.forward({ key: newPair.key, value: { newValue: newPair.value, oldValue: null }, timestamp, headers })
      },
    }
  }
}

/** A grouped table's aggregate in its store, with the largest timestamp that went into it. */
export interface TableAggregate<VA> {
  readonly agg: VA
  readonly ts: number
}

/**
 * A grouped table's aggregation (Kafka Streams' KTableAggregate and KTableReduce): a change first takes
 * its old value out of the group's aggregate (`subtractor`, when there is an aggregate), then adds its new
 * value (`adder`, starting from `initializer()`, or, for a reduce without one, from the value itself).
 * The result is stored and forwarded at the later of the record's and the aggregate's timestamps; a
 * result of null deletes the group and is forwarded as a tombstone.
 */
export function tableAggregateProcessor<K, V, VA>(
  initializer: (() => VA) | undefined,
  adder: (key: K, value: V, aggregate: VA) => VA,
  subtractor: (key: K, value: V, aggregate: VA) => VA,
  keyId: (key: K) => string,
  storeName: string,
): () => Processor<K, Change<V>, K, VA | null> {
  return () => {
    let ctx: ProcessorContext<K, VA | null>
    let store: KeyValueStore<string, TableAggregate<VA>>
    return {
      init(c) {
        ctx = c
        store = c.getStateStore(storeName)
      },
      process(record) {
        if (record.key === null || record.key === undefined || record.value === null) return
        const { newValue, oldValue } = record.value
        const id = keyId(record.key)
        const before = store.get(id)
        let agg: VA | undefined = before?.agg
        if (oldValue !== null && before !== undefined) agg = subtractor(record.key, oldValue, before.agg)
        if (newValue !== null) {
          if (agg !== undefined) agg = adder(record.key, newValue, agg)
          else agg = initializer === undefined ? (newValue as unknown as VA) : adder(record.key, newValue, initializer())
        }
        const ts = before === undefined ? record.timestamp : Math.max(record.timestamp, before.ts)
        if (agg === undefined || agg === null) {
          if (before === undefined) return
          store.delete(id)
          ctx.forward({ key: record.key, value: null, timestamp: ts, headers: record.headers })
          return
        }
        store.put(id, { agg, ts })
        ctx.forward({ key: record.key, value: agg, timestamp: ts, headers: record.headers })
      },
    }
  }
}
