import type { KeyValueStore, Processor, ProcessorContext } from '../processor/api.js'
import type { TableEntry } from './stream-table-join.js'
import type { ValueJoiner } from './join-windows.js'

/**
 * A table every task reads whole (Kafka Streams' `GlobalKTable`): each application instance keeps all
 * of its topic's partitions in one store, `storeName`, read before the tasks start and then as records
 * arrive. Made by `StreamsBuilder.globalTable`; a stream joins it by a key it picks from each record,
 * with no co-partitioning and no repartition.
 */
export class GlobalKTable<K, V> {
  /** @internal */
  constructor(
    /** The store holding the table's latest values by key id. */
    readonly storeName: string,
    /** @internal The table's key id function (its key serde's bytes). */
    readonly keyId: (key: K) => string,
    /** @internal Carries the value type. */
    readonly valueType?: V,
  ) {}
}

/**
 * A global table's processor: applies each record of its topic to its store (a null value deletes the
 * key; a null key is skipped), keeping the value and its timestamp.
 */
export function globalTableProcessor<K, V>(storeName: string, keyId: (key: K) => string): () => Processor<K, V | null, never, never> {
  return () => {
    let store: KeyValueStore<string, TableEntry<V>>
    return {
      init(ctx: ProcessorContext<never, never>) {
        store = ctx.getStateStore(storeName)
      },
      process(record) {
        if (record.key === null || record.key === undefined) return
        const id = keyId(record.key)
        if (record.value === null || record.value === undefined) store.delete(id)
        else store.put(id, { v: record.value, ts: record.timestamp })
      },
    }
  }
}

/**
 * A stream-global table join (Kafka Streams' KStreamGlobalKTableJoin): each stream record picks the
 * table key with `keySelector` and joins the table's current value for it; the result keeps the stream
 * record's key and timestamp. A record with a null value is dropped; one whose picked key is null, or
 * absent from the table, is dropped by `join` and joined with null by `leftJoin`.
 */
export function streamGlobalJoinProcessor<K, V, GK, GV, VR>(
  table: GlobalKTable<GK, GV>,
  keySelector: (key: K, value: V) => GK | null | undefined,
  joiner: ValueJoiner<V, GV | null, VR, K>,
  left: boolean,
): () => Processor<K, V, K, VR> {
  return () => {
    let ctx: ProcessorContext<K, VR>
    let store: KeyValueStore<string, TableEntry<GV>>
    return {
      init(c) {
        ctx = c
        store = c.getStateStore(table.storeName)
      },
      process(record) {
        if (record.value === null || record.value === undefined) return
        const picked = keySelector(record.key, record.value)
        const entry = picked === null || picked === undefined ? undefined : store.get(table.keyId(picked))
        if (entry === undefined && !left) return
        ctx.forward({ key: record.key, value: joiner(record.value, entry === undefined ? null : entry.v, record.key), timestamp: record.timestamp, headers: record.headers })
      },
    }
  }
}
