import type { KeyValueStore, Processor, ProcessorContext, StreamRecord, VersionedKeyValueStore } from '../processor/api.js'
import type { TableEntry } from '../joins/stream-table-join.js'

/**
 * The processors the DSL compiles to. Each is a small closure over the user's function: the per-record
 * path is one call and, where the record changes, one new record object.
 */
type Ctx<K, V> = ProcessorContext<K, V>

export function statelessProcessor<KIn, VIn, KOut, VOut>(
  step: (record: StreamRecord<KIn, VIn>, ctx: Ctx<KOut, VOut>) => void,
): () => Processor<KIn, VIn, KOut, VOut> {
  return () => {
    let ctx: Ctx<KOut, VOut>
    return {
      init(c) {
        ctx = c
      },
      process(record) {
        step(record, ctx)
      },
    }
  }
}

/**
 * Where a table's latest values are kept once something reads them by key (a stream-table join): set
 * while the topology is built, read when the table's processor is made for a task.
 */
export interface TableMaterialization<K> {
  storeName: string | undefined
  keyId: ((key: K) => string) | undefined
  /** Set for a versioned table: its store keeps each key's versions this long (ms). */
  readonly historyRetentionMs?: number
  /** A table-table join reads this table: each update says whether the key was held before it (`heldBeforeUpdate`). */
  tellsHeldBefore?: boolean
  /** A `groupBy` reads this table: each update says what the key held before it (`valueBeforeUpdate`). */
  tellsOldValue?: boolean
  /**
   * A reader needs old values (Kafka Streams' `enableSendingOldValues`: an outer side of a table-table
   * join, a foreign-key join, groupBy): a filtered table then passes on no deletion of a key it did not hold.
   */
  sendsOldValues?: boolean
}

/**
 * What a materialized table held for the key of the update being forwarded (null: nothing), by the
 * table's store: a grouped table takes the old value out of its old group. Set, as `heldBeforeUpdate`,
 * by the table's processor around its forward.
 */
export const valueBeforeUpdate = new WeakMap<object, unknown>()

/**
 * Whether a materialized table held the key of the update being forwarded, by the table's store (Kafka
 * Streams forwards a table update as a change, old value and new; a table-table join needs to know
 * whether there was an old one). Set by the table's processor around its forward, so it is only read
 * by processors called from that forward, in the same task.
 */
export const heldBeforeUpdate = new WeakMap<object, boolean>()

/**
 * A table from a topic (or `toStream().toTable()`): forwards each update (null deletes), as a
 * changelog-backed KTable would, and keeps the latest value per key in its store once the table is
 * materialized. Records with a null key are dropped, as in Kafka Streams.
 */
export function tableSourceProcessor<K, V>(
  materialization?: TableMaterialization<K>,
  /**
   * Drop a deletion of a key the table does not hold (a filtered table's, Kafka Streams' KTableFilter
   * with old values: a value filtered out before and after is no change).
   */
  dropUnheldDeletes = false,
): Processor<K, V | null, K, V | null> {
  let ctx: Ctx<K, V | null>
  let store: KeyValueStore<string, TableEntry<V>> | undefined
  let versions: VersionedKeyValueStore<string, V> | undefined
  let keyId: (key: K) => string
  let tellsHeldBefore = false
  let tellsOldValue = false
  return {
    init(c) {
      ctx = c
      tellsHeldBefore = materialization?.tellsHeldBefore === true
      tellsOldValue = materialization?.tellsOldValue === true
      if (materialization?.storeName !== undefined) {
        keyId = materialization.keyId as (key: K) => string
        if (materialization.historyRetentionMs !== undefined) versions = c.getStateStore<VersionedKeyValueStore<string, V>>(materialization.storeName)
        else store = c.getStateStore<KeyValueStore<string, TableEntry<V>>>(materialization.storeName)
      }
    },
    process(record) {
      if (record.key === null || record.key === undefined) return
      if (versions !== undefined) {
        // A versioned table (KIP-914): an update older than the key's latest goes into the history and
        // is not passed on; one older than the history retention is dropped.
        const id = keyId(record.key)
        const previous = tellsHeldBefore || tellsOldValue ? (versions.get(id)?.value ?? null) : null
        const validTo = versions.put(id, record.value ?? null, record.timestamp)
        if (validTo !== -1) return
        if (tellsHeldBefore) heldBeforeUpdate.set(versions, previous !== null)
        if (tellsOldValue) valueBeforeUpdate.set(versions, previous)
      } else if (store !== undefined) {
        const id = keyId(record.key)
        // A read per update, only for a table a table-table join or a groupBy reads.
        if (tellsHeldBefore || tellsOldValue || dropUnheldDeletes) {
          const previous = store.get(id)
          if (dropUnheldDeletes && previous === undefined && (record.value === null || record.value === undefined)) return
          if (tellsHeldBefore) heldBeforeUpdate.set(store, previous !== undefined)
          if (tellsOldValue) valueBeforeUpdate.set(store, previous === undefined ? null : previous.v)
        }
        if (record.value === null || record.value === undefined) store.delete(id)
        else store.put(id, { v: record.value, ts: record.timestamp })
      }
      ctx.forward(record)
    },
  }
}

/** A non-windowed aggregate in its store, with the largest timestamp that went into it. */
export interface StoredAggregate<VA> {
  readonly agg: VA
  /** Absent in entries written before timestamps were kept: the next record's timestamp stands in. */
  readonly ts?: number
}

/**
 * Non-windowed aggregation (Kafka Streams' KStreamAggregate): one aggregate per key, kept in the
 * key-value store `storeName` (so commits make it durable) and forwarded on every update at the later
 * of the record's timestamp and the aggregate's. Null keys and values are skipped, as in Kafka Streams.
 */
export function aggregateProcessor<K, V, VA>(
  initializer: () => VA,
  aggregator: (key: K, value: V, aggregate: VA) => VA,
  keyId: (key: K) => string,
  storeName: string,
): () => Processor<K, V, K, VA> {
  return () => {
    let ctx: Ctx<K, VA>
    let aggregates: KeyValueStore<string, StoredAggregate<VA>>
    return {
      init(c) {
        ctx = c
        aggregates = c.getStateStore(storeName)
      },
      process(record) {
        if (record.key === null || record.value === null) return
        const id = keyId(record.key)
        const before = aggregates.get(id)
        const agg = aggregator(record.key, record.value, before === undefined ? initializer() : before.agg)
        const ts = before?.ts === undefined ? record.timestamp : Math.max(record.timestamp, before.ts)
        aggregates.put(id, { agg, ts })
        ctx.forward({ key: record.key, value: agg, timestamp: ts, headers: record.headers })
      },
    }
  }
}
