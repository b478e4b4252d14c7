import type { Serde } from '../processor/serdes.js'
import type { StreamPartitioner } from '../processor/topology.js'
import type { TimestampExtractor } from '../processor/timestamp-extractor.js'

/** How a stream is read from a topic. Defaults: String keys and values. */
export interface Consumed<K, V> {
  readonly keySerde?: Serde<K>
  readonly valueSerde?: Serde<V>
  /**
   * Where each record's event time comes from (Kafka Streams' `Consumed.withTimestampExtractor`), e.g.
   * a field of the value. Default: the application's `defaultTimestampExtractor`, else the record's
   * own timestamp.
   */
  readonly timestampExtractor?: TimestampExtractor<K, V>
  readonly name?: string
}

/** How a stream is written to a topic. Defaults: the stream's serdes, else JSON. */
export interface Produced<K, V> {
  readonly keySerde?: Serde<K>
  readonly valueSerde?: Serde<V>
  readonly partitioner?: StreamPartitioner<K, V>
  readonly name?: string
}

/** Serdes for grouping (and for the repartition topic of `groupBy`). */
export interface Grouped<K, V> {
  readonly keySerde?: Serde<K>
  readonly valueSerde?: Serde<V>
  readonly name?: string
}

/** Names and serdes of an aggregation's result. */
export interface Materialized<K, V> {
  readonly keySerde?: Serde<K>
  readonly valueSerde?: Serde<V>
  readonly name?: string
  /**
   * A windowed aggregation over `TimeWindows`: how long its store keeps a window, measured from the
   * window's start, behind the aggregation's stream time (Kafka Streams' `Materialized.withRetention`).
   * A window closes (takes no more records, emits its final result) at its end plus grace; it stays
   * readable by interactive queries until `retentionMs` after its start. At least the window size plus
   * grace. @default the window size plus grace (a window leaves the store when it closes)
   */
  readonly retentionMs?: number
}

/**
 * A non-windowed aggregation's result, and where its store lives (Kafka Streams' store type):
 * `'persistent'` (default) is on disk in a durable run and in memory otherwise; `'inMemory'` is always in
 * memory (saved by commits, loaded whole at a restart). Window and session stores are in memory.
 */
export interface KeyValueMaterialized<K, V> extends Omit<Materialized<K, V>, 'retentionMs'> {
  readonly storeType?: 'persistent' | 'inMemory'
}

export interface KeyValue<K, V> {
  readonly key: K
  readonly value: V
}

/**
 * How a table keeps its values (Kafka Streams' `Materialized` of a table). `versioned` keeps each key's
 * versions for `historyRetentionMs` behind the table's largest timestamp (a versioned store, KIP-889):
 * a stream-table join then looks the table up as of each stream record's time (KIP-914), and may wait
 * a grace period for late table updates (KIP-923).
 */
export interface TableOptions {
  readonly versioned?: { readonly historyRetentionMs: number }
  /**
   * The table's store name (default: `<topic>-STATE-STORE-<n>`, or `KSTREAM-TOTABLE-STATE-STORE-<n>`, as Kafka Streams names it). Naming it keeps the table's values in the
   * store from the start, so interactive queries can read it (`runtime.store(name, ...)`); otherwise the
   * store exists only once a join reads the table.
   */
  readonly storeName?: string
}

/**
 * Names of a foreign-key join (Kafka Streams' `TableJoined`): with `name`, its nodes, store and internal
 * topics are named after it (`<name>-subscription-store`, `<name>-subscription-registration-topic`, ...)
 * instead of numbered.
 */
export interface TableJoined {
  readonly name?: string
}
