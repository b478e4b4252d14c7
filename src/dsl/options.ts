import { PunctualError } from '../errors.js'
import type { Serde } from '../processor/serdes.js'
import type { StreamPartitioner } from '../processor/topology.js'
import type { TimestampExtractor } from '../processor/timestamp-extractor.js'
import type { StoreBuilder, VersionedStoreBuilder } from '../state/stores.js'
import type { KeyValueStore, StoreKey } from '../processor/api.js'
import { shownValue } from '../processor/shown-value.js'

/** How a stream is read from a topic. Defaults: String keys and values. */
export interface Consumed<K, V> {
  /** Reads the keys. @default Serdes.String() */
  readonly keySerde?: Serde<K>
  /** Reads the values. @default Serdes.String() */
  readonly valueSerde?: Serde<V>
  /**
   * Where each record's event time comes from (Kafka Streams' `Consumed.withTimestampExtractor`), e.g.
   * a field of the value. Default: the application's `defaultTimestampExtractor`, else the record's
   * own timestamp.
   */
  readonly timestampExtractor?: TimestampExtractor<K, V>
  /** Names the source node (Kafka Streams' `Consumed.as`). @default `KSTREAM-SOURCE-<n>` */
  readonly name?: string
}

/** How a stream is written to a topic. Defaults: the stream's serdes, else JSON. */
export interface Produced<K, V> {
  /** Writes the keys. */
  readonly keySerde?: Serde<K>
  /** Writes the values. */
  readonly valueSerde?: Serde<V>
  /** Chooses each record's partition (Kafka Streams' `Produced.streamPartitioner`). It gets null for a tombstone. @default murmur2 of the serialized key */
  readonly partitioner?: StreamPartitioner<K, V | null>
  /** Names the sink node (Kafka Streams' `Produced.as`). @default `KSTREAM-SINK-<n>` */
  readonly name?: string
}

/** Serdes for grouping (and for the repartition topic of `groupBy`). */
export interface Grouped<K, V> {
  /** Writes the keys to the repartition topic and the aggregations' stores. @default the stream's key serde */
  readonly keySerde?: Serde<K>
  /** Writes the values to the repartition topic. @default the stream's value serde */
  readonly valueSerde?: Serde<V>
  /** Names the grouping (Kafka Streams' `Grouped.as`): its repartition topic is `<name>-repartition`, which stays stable as the topology changes. */
  readonly name?: string
}

/** Names and serdes of an aggregation's result. */
export interface Materialized<K, V> {
  /** Writes the store's keys to its changelog. @default the grouping's key serde */
  readonly keySerde?: Serde<K>
  /** Writes the store's values to its changelog. @default MessagePack */
  readonly valueSerde?: Serde<V>
  /**
   * Names the store (Kafka Streams' `Materialized.as`): interactive queries read it by this name, and
   * on Kafka its changelog is `<applicationId>-<name>-changelog`. @default `<operation>-STATE-STORE-<n>`
   */
  readonly name?: string
  /**
   * A windowed aggregation over `TimeWindows`: how long its store keeps a window, measured from the
   * window's start, behind the aggregation's stream time (Kafka Streams' `Materialized.withRetention`).
   * A window closes (takes no more records, emits its final result) at its end plus grace; it stays
   * readable by interactive queries until `retentionMs` after its start. At least the window size plus
   * grace. @default the window size plus grace (a window leaves the store when it closes)
   */
  readonly retentionMs?: number
  /**
   * Where an aggregation's store lives (Kafka Streams' `Materialized.withStoreType`): `'persistent'`
   * is on disk in a durable run (state may outgrow memory; a restart reads nothing up front) and in
   * memory otherwise; `'inMemory'` is always in memory (saved by commits, loaded whole at a restart).
   * Every aggregation's store takes it (key-value, time-window, sliding-window, session).
   * @default 'persistent'
   */
  readonly storeType?: 'persistent' | 'inMemory'
  /**
   * A store on disk (`storeType: 'persistent'` in a durable run): how many entries (a time-window
   * store: cells) memory keeps after they were read or written, besides those changed since the last
   * commit. Lower it when entries are large and the heap small. @default 10 000
   */
  readonly cacheEntries?: number
}

/** Where an aggregation's store lives, checked (`Materialized.storeType`); `where` names the operation in the error. */
export function storeTypeOf(where: string, storeType: unknown): 'persistent' | 'inMemory' {
  if (storeType === undefined) return 'persistent'
  if (storeType !== 'persistent' && storeType !== 'inMemory') throw new PunctualError('INVALID_CONFIG', `${where}: storeType must be 'persistent' or 'inMemory', got ${JSON.stringify(storeType)}`)
  return storeType
}

/** A non-windowed aggregation's result, and where its store lives (`storeType`). */
export type KeyValueMaterialized<K, V> = Omit<Materialized<K, V>, 'retentionMs'>

/** A key and a value: what `map` and `flatMap` return for each output record (Kafka Streams' `KeyValue`). */
export interface KeyValue<K, V> {
  /** The record's key. */
  readonly key: K
  /** The record's value. */
  readonly value: V
}

/**
 * How a table keeps its values (Kafka Streams' `Materialized` of `builder.table` and `globalTable`):
 * `{ name }` or `Materialized.as(name)` names its store; `{ name, historyRetentionMs }` or
 * `Materialized.as(Stores.persistentVersionedKeyValueStore(name, historyRetentionMs))` makes it a
 * versioned table, which keeps each key's versions for `historyRetentionMs` behind the table's largest
 * timestamp (KIP-889): a stream-table join then looks the table up as of each stream record's time
 * (KIP-914), and may wait a grace period for late table updates (KIP-923). The table's store reads and
 * writes with `consumed`'s serdes.
 */
export interface TableMaterialized {
  /**
   * The table's store name (default: `<topic>-STATE-STORE-<n>`, as Kafka Streams names it). Naming it
   * keeps the table's values in the store from the start, so interactive queries can read it
   * (`runtime.store(name, ...)`); otherwise the store exists only once a join reads the table.
   */
  readonly name?: string
  /** Keep each key's versions this long (ms, an integer >= 0) behind the table's largest timestamp: a versioned table. @default not versioned */
  readonly historyRetentionMs?: number
}

/**
 * Names of a foreign-key join (Kafka Streams' `TableJoined`): with `name`, its nodes, store and internal
 * topics are named after it (`<name>-subscription-store`, `<name>-subscription-registration-topic`, ...)
 * instead of numbered.
 */
export interface TableJoined {
  /** Base name of the join's nodes, store and internal topics. @default numbered, as Kafka Streams numbers them */
  readonly name?: string
}

/**
 * The name of the node an operation adds (Kafka Streams' `Named`): the optional last argument of
 * `filter`, `map`, `toStream`, `toTable`, `merge`, `process`, table joins, ... Make it with
 * `Named.as('name')`, or write `{ name: 'name' }`.
 */
export interface Named {
  /** The name of the node the operation adds. */
  readonly name: string
}

/** Kafka Streams' `Named` factory: the name of the node an operation adds. */
export const Named = {
  /**
   * Names the node an operation adds, e.g. `stream.filter(p, Named.as('valid-orders'))`.
   * @throws PunctualError `INVALID_TOPOLOGY` when `name` is not a non-empty string.
   */
  as(name: string): Named {
    if (typeof name !== 'string' || name === '') throw new PunctualError('INVALID_TOPOLOGY', `Named.as: the name must be a non-empty string, got ${shownValue(name)}`)
    return { name }
  },
} as const

/**
 * @internal The node name an operation's `named` argument gives, else undefined (the operation numbers
 * its node). Anything else than a `Named` with a non-empty string name is refused, naming the operation:
 * a bare string (the form of punctual before `Named`) among them.
 */
export function namedNode(operation: string, named: Named | undefined): string | undefined {
  if (named === undefined) return undefined
  if (typeof named === 'string') {
    throw new PunctualError('INVALID_TOPOLOGY', `${operation}: a name is given as Named.as(${JSON.stringify(named)}) (or { name: ${JSON.stringify(named)} }), not as the string ${JSON.stringify(named)}`)
  }
  if (typeof named !== 'object' || named === null) throw new PunctualError('INVALID_TOPOLOGY', `${operation}: the name must be a Named (Named.as('name')), got ${shownValue(named)}`)
  const name: unknown = named.name
  if (typeof name !== 'string' || name === '') throw new PunctualError('INVALID_TOPOLOGY', `${operation}: a name must be a non-empty string, got ${shownValue(name)}`)
  return name
}

// Kafka Streams' static factories, as values beside the option types they make: `Materialized.as('x')`
// is `{ name: 'x' }` with chainable `with...` methods, each returning a new object. A plain object of
// the option type says the same; both are accepted everywhere.

/** `Consumed` with Kafka Streams' chainable setters. */
export interface ConsumedBuilder<K, V> extends Consumed<K, V> {
  /** A copy that reads keys with `keySerde`. */
  withKeySerde<K2>(keySerde: Serde<K2>): ConsumedBuilder<K2, V>
  /** A copy that reads values with `valueSerde`. */
  withValueSerde<V2>(valueSerde: Serde<V2>): ConsumedBuilder<K, V2>
  /** A copy that takes each record's event time from `timestampExtractor`. */
  withTimestampExtractor(timestampExtractor: TimestampExtractor<K, V>): ConsumedBuilder<K, V>
  /** A copy that names the source node `name`. */
  withName(name: string): ConsumedBuilder<K, V>
}

/** `Produced` with Kafka Streams' chainable setters. */
export interface ProducedBuilder<K, V> extends Produced<K, V> {
  /** A copy that writes keys with `keySerde`. */
  withKeySerde<K2>(keySerde: Serde<K2>): ProducedBuilder<K2, V>
  /** A copy that writes values with `valueSerde`. */
  withValueSerde<V2>(valueSerde: Serde<V2>): ProducedBuilder<K, V2>
  /** A copy that chooses partitions with `partitioner`. */
  withStreamPartitioner(partitioner: StreamPartitioner<K, V | null>): ProducedBuilder<K, V>
  /** A copy that names the sink node `name`. */
  withName(name: string): ProducedBuilder<K, V>
}

/** `Grouped` with Kafka Streams' chainable setters. */
export interface GroupedBuilder<K, V> extends Grouped<K, V> {
  /** A copy with keys written by `keySerde`. */
  withKeySerde<K2>(keySerde: Serde<K2>): GroupedBuilder<K2, V>
  /** A copy with values written by `valueSerde`. */
  withValueSerde<V2>(valueSerde: Serde<V2>): GroupedBuilder<K, V2>
  /** A copy that names the grouping `name` (its repartition topic `<name>-repartition`). */
  withName(name: string): GroupedBuilder<K, V>
}

/** `Materialized` with Kafka Streams' chainable setters. */
export interface MaterializedBuilder<K, V> extends Materialized<K, V> {
  /** A copy whose store writes keys with `keySerde`. */
  withKeySerde<K2>(keySerde: Serde<K2>): MaterializedBuilder<K2, V>
  /** A copy whose store writes values with `valueSerde`. */
  withValueSerde<V2>(valueSerde: Serde<V2>): MaterializedBuilder<K, V2>
  /** Kafka Streams' `withRetention(Duration)`, in milliseconds: see `Materialized.retentionMs`. */
  withRetention(retentionMs: number): MaterializedBuilder<K, V>
}

/** Builds an immutable option object whose `with...` methods return a copy with one field set. */
function optionBuilder<O extends object, B extends O>(fields: O, setters: Readonly<Record<string, keyof O>>): B {
  const methods: Record<string, (value: unknown) => B> = {}
  for (const [method, field] of Object.entries(setters)) {
    methods[method] = (value) => optionBuilder<O, B>({ ...fields, [field]: value }, setters)
  }
  // The methods are not enumerable: a spread of the options, or JSON, holds only the fields.
  const out = { ...fields }
  for (const [method, fn] of Object.entries(methods)) Object.defineProperty(out, method, { value: fn, enumerable: false })
  return out as B
}

const CONSUMED = { withKeySerde: 'keySerde', withValueSerde: 'valueSerde', withTimestampExtractor: 'timestampExtractor', withName: 'name' } as const
const PRODUCED = { withKeySerde: 'keySerde', withValueSerde: 'valueSerde', withStreamPartitioner: 'partitioner', withName: 'name' } as const
const GROUPED = { withKeySerde: 'keySerde', withValueSerde: 'valueSerde', withName: 'name' } as const
const MATERIALIZED = { withKeySerde: 'keySerde', withValueSerde: 'valueSerde', withRetention: 'retentionMs' } as const

const serdes = <K, V>(keySerde: Serde<K> | undefined, valueSerde: Serde<V> | undefined): { keySerde?: Serde<K>; valueSerde?: Serde<V> } => ({
  ...(keySerde === undefined ? {} : { keySerde }),
  ...(valueSerde === undefined ? {} : { valueSerde }),
})

/** Kafka Streams' `Consumed` factories: how `builder.stream` and `builder.table` read a topic. */
export const Consumed = {
  /** Reads keys and values with these serdes (either may be undefined: String). */
  with<K, V>(keySerde: Serde<K> | undefined, valueSerde: Serde<V> | undefined): ConsumedBuilder<K, V> {
    return optionBuilder<Consumed<K, V>, ConsumedBuilder<K, V>>(serdes(keySerde, valueSerde), CONSUMED)
  },
  /** Names the source node. */
  as<K = never, V = never>(name: string): ConsumedBuilder<K, V> {
    return optionBuilder<Consumed<K, V>, ConsumedBuilder<K, V>>({ name }, CONSUMED)
  },
  /** Takes each record's event time from `timestampExtractor`. */
  withTimestampExtractor<K = never, V = never>(timestampExtractor: TimestampExtractor<K, V>): ConsumedBuilder<K, V> {
    return optionBuilder<Consumed<K, V>, ConsumedBuilder<K, V>>({ timestampExtractor }, CONSUMED)
  },
} as const

/** Kafka Streams' `Produced` factories: how `to` writes a topic. */
export const Produced = {
  /** Writes keys and values with these serdes (either may be undefined: the stream's, else JSON). */
  with<K, V>(keySerde: Serde<K> | undefined, valueSerde: Serde<V> | undefined): ProducedBuilder<K, V> {
    return optionBuilder<Produced<K, V>, ProducedBuilder<K, V>>(serdes(keySerde, valueSerde), PRODUCED)
  },
  /** Names the sink node. */
  as<K = never, V = never>(name: string): ProducedBuilder<K, V> {
    return optionBuilder<Produced<K, V>, ProducedBuilder<K, V>>({ name }, PRODUCED)
  },
  /** Chooses each record's partition with `partitioner`. */
  streamPartitioner<K, V>(partitioner: StreamPartitioner<K, V | null>): ProducedBuilder<K, V> {
    return optionBuilder<Produced<K, V>, ProducedBuilder<K, V>>({ partitioner }, PRODUCED)
  },
} as const

/** Kafka Streams' `Grouped` factories: the serdes and name of a grouping (and its repartition topic). */
export const Grouped = {
  /** Groups with these serdes (either may be undefined: the stream's). */
  with<K, V>(keySerde: Serde<K> | undefined, valueSerde: Serde<V> | undefined): GroupedBuilder<K, V> {
    return optionBuilder<Grouped<K, V>, GroupedBuilder<K, V>>(serdes(keySerde, valueSerde), GROUPED)
  },
  /** Names the grouping: its repartition topic is `<name>-repartition`. */
  as<K = never, V = never>(name: string): GroupedBuilder<K, V> {
    return optionBuilder<Grouped<K, V>, GroupedBuilder<K, V>>({ name }, GROUPED)
  },
} as const

/**
 * `T`, or `never` when `T` is only the widest type it could be (`Wide`): a store builder made without
 * type arguments (`Stores.inMemoryKeyValueStore('counts')`) has `StoreKey` keys and `unknown` values,
 * and its `Materialized` then fits any aggregation's types rather than none.
 */
export type Unstated<T, Wide> = Wide extends T ? never : T

/** Names the store (and so its changelog topic and what interactive queries ask for). */
function materializedAs<K = never, V = never>(storeName: string): MaterializedBuilder<K, V>
/** A versioned table's store: see `Materialized.as`. */
function materializedAs(store: VersionedStoreBuilder<StoreKey, unknown>): TableMaterialized
/** An aggregation's key-value store, by its builder: see `Materialized.as`. */
function materializedAs<K extends StoreKey, V>(store: StoreBuilder<KeyValueStore<K, V>>): KeyValueMaterialized<Unstated<K, StoreKey>, Unstated<V, unknown>>
function materializedAs<K, V>(store: string | VersionedStoreBuilder<StoreKey, unknown> | StoreBuilder): MaterializedBuilder<K, V> | TableMaterialized | KeyValueMaterialized<K, V> {
  if (typeof store === 'string') return optionBuilder<Materialized<K, V>, MaterializedBuilder<K, V>>({ name: store }, MATERIALIZED)
  const given = store as Partial<VersionedStoreBuilder<StoreKey, unknown>> | null
  if (typeof given?.name === 'string' && typeof given.historyRetentionMs === 'number') return Object.freeze({ name: given.name, historyRetentionMs: given.historyRetentionMs })
  // A key-value store of Stores: its name, where it lives and its serdes; the aggregation builds the store.
  if (typeof given?.name === 'string' && given.query?.kind === 'keyValue') {
    return Object.freeze({
      name: given.name,
      storeType: given.persistent === true ? ('persistent' as const) : ('inMemory' as const),
      ...(given.keySerde === undefined ? {} : { keySerde: given.keySerde as Serde<K> }),
      ...(given.valueSerde === undefined ? {} : { valueSerde: given.valueSerde as Serde<V> }),
    })
  }
  throw new PunctualError(
    'INVALID_CONFIG',
    `Materialized.as takes a store name, a key-value store (Stores.persistentKeyValueStore(name), Stores.inMemoryKeyValueStore(name)) or a versioned one (Stores.persistentVersionedKeyValueStore(name, historyRetentionMs)), got ${shownValue(store)}`,
  )
}

/** Kafka Streams' `Materialized` factories: the name and serdes of an aggregation's store. */
export const Materialized: {
  /** Names the store (and so its changelog topic and what interactive queries ask for). */
  as<K = never, V = never>(storeName: string): MaterializedBuilder<K, V>
  /**
   * A versioned table's store (`builder.table(topic, consumed, Materialized.as(Stores.persistentVersionedKeyValueStore(name, historyRetentionMs)))`):
   * its name and history retention.
   */
  as(store: VersionedStoreBuilder<StoreKey, unknown>): TableMaterialized
  /**
   * An aggregation's store as Kafka Streams chooses one (`count(Materialized.as(Stores.inMemoryKeyValueStore('counts')))`):
   * the builder's name, where the store lives (`storeType`: `inMemoryKeyValueStore` or
   * `persistentKeyValueStore`) and its serdes. The aggregation builds the store itself, so other
   * options of the builder have no effect (`Materialized.cacheEntries` sets its cache).
   */
  as<K extends StoreKey, V>(store: StoreBuilder<KeyValueStore<K, V>>): KeyValueMaterialized<Unstated<K, StoreKey>, Unstated<V, unknown>>
  /** Writes the store's keys and values with these serdes (either may be undefined: the default). */
  with<K, V>(keySerde: Serde<K> | undefined, valueSerde: Serde<V> | undefined): MaterializedBuilder<K, V>
} = {
  as: materializedAs,
  with<K, V>(keySerde: Serde<K> | undefined, valueSerde: Serde<V> | undefined): MaterializedBuilder<K, V> {
    return optionBuilder<Materialized<K, V>, MaterializedBuilder<K, V>>(serdes(keySerde, valueSerde), MATERIALIZED)
  },
}

