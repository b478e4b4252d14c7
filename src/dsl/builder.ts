import { fallbackJsonSerde, Serdes } from '../processor/serdes.js'
import type { Serde } from '../processor/serdes.js'
import type { StateStore } from '../processor/api.js'
import type { StoreBuilder } from '../state/stores.js'
import { Topology } from '../processor/topology.js'
import { KStream } from './kstream.js'
import { KTable } from './ktable.js'
import type { Consumed, TableMaterialized } from './options.js'
import { PunctualError } from '../errors.js'
import { shownValue } from '../processor/shown-value.js'
import { tableSourceProcessor } from './processors.js'
import type { TableMaterialization } from './processors.js'
import { Stores } from '../state/stores.js'
import { keyIdFunction } from '../windows/key-id.js'
import { GlobalKTable, globalTableProcessor } from '../joins/global-table.js'
import type { TableEntry } from '../joins/stream-table-join.js'
import { keyIdQuery } from './queryable.js'
import { topicArgument } from '../processor/topic.js'
import type { Topic } from '../processor/topic.js'

/**
 * Builds a topology with the Kafka Streams DSL. Every operation compiles to processor-API nodes on one
 * `Topology` (no second engine), named as Kafka Streams names them unless a name is given.
 */
export class StreamsBuilder {
  private readonly topology = new Topology()
  private index = 0
  private readonly defaultKeySerde: Serde<unknown> | undefined
  private readonly defaultValueSerde: Serde<unknown> | undefined

  /**
   * @param config - the serdes of every key and value the topology's operations are given none for
   *   (Kafka Streams' `default.key.serde` and `default.value.serde`): sources, sinks, repartition topics
   *   and stores. Without them a source reads String keys and values, and whatever else has no serde
   *   and no known one from upstream is JSON.
   */
  constructor(config: StreamsBuilderConfig = {}) {
    this.defaultKeySerde = checkSerde(config.defaultKeySerde, 'defaultKeySerde')
    this.defaultValueSerde = checkSerde(config.defaultValueSerde, 'defaultValueSerde')
  }

  /**
   * @internal `serde`, else the default key serde, else `fallback`: String for sources, elsewhere JSON,
   * marked as chosen for want of a serde (`describe()` shows it, a runtime warns of a sink using it).
   */
  keySerdeOr<K>(serde: Serde<K> | undefined, fallback: 'String' | 'JSON' = 'JSON'): Serde<K> {
    return serde ?? ((this.defaultKeySerde ?? (fallback === 'String' ? Serdes.String() : fallbackJsonSerde())) as Serde<K>)
  }

  /** @internal `serde`, else the default value serde, else `fallback`, as for {@link StreamsBuilder.keySerdeOr}. */
  valueSerdeOr<V>(serde: Serde<V> | undefined, fallback: 'String' | 'JSON' = 'JSON'): Serde<V> {
    return serde ?? ((this.defaultValueSerde ?? (fallback === 'String' ? Serdes.String() : fallbackJsonSerde())) as Serde<V>)
  }

  /**
   * A stream of the records of `topics` (Kafka Streams' `StreamsBuilder.stream`), read with
   * `consumed`'s serdes (default `Serdes.String()`) and timestamp extractor.
   * @throws PunctualError `INVALID_TOPOLOGY` for no topic, or a topic another source already reads.
   */
  stream<K, V>(topic: Topic<K, V>, consumed?: Consumed<K, V>): KStream<K, V>
  /** A stream of the records of `topics`, by name: `K` and `V` are what `consumed`'s serdes read (default `string`). */
  stream<K = string, V = string>(topics: string | readonly string[], consumed?: Consumed<K, V>): KStream<K, V>
  stream<K, V>(topics: string | readonly string[] | Topic<K, V>, consumed: Consumed<K, V> = {}): KStream<K, V> {
    const given = typeof topics === 'string' || Array.isArray(topics) ? undefined : topicArgument('StreamsBuilder.stream', topics as Topic<K, V>, consumed.keySerde, consumed.valueSerde)
    if (given !== undefined) topics = given.name
    const keySerde = this.keySerdeOr(given?.keySerde ?? consumed.keySerde, 'String')
    const valueSerde = this.valueSerdeOr(given?.valueSerde ?? consumed.valueSerde, 'String')
    const name = consumed.name ?? this.newName('KSTREAM-SOURCE')
    this.topology.addSource(name, topics as string | readonly string[], { keySerde, valueSerde, timestampExtractor: consumed.timestampExtractor })
    return new KStream<K, V>(this, name, keySerde, valueSerde)
  }

  /**
   * A table: the latest value per key of a topic (null values delete), read with `consumed`'s serdes
   * (default `Serdes.String()`). `materialized` names its store, and with a history retention makes it
   * a versioned table (`Materialized.as(Stores.persistentVersionedKeyValueStore(name, historyRetentionMs))`,
   * KIP-889): it keeps each key's versions, and a stream-table join looks it up as of each stream
   * record's time.
   * @throws PunctualError `INVALID_CONFIG` for a history retention that is not an integer >= 0, or
   *   options a table does not take.
   */
  table<K, V>(topic: Topic<K, V>, consumed?: Consumed<K, V>, materialized?: TableMaterialized): KTable<K, V>
  /** A table of topic `topic`, by name: `K` and `V` are what `consumed`'s serdes read (default `string`). */
  table<K = string, V = string>(topic: string, consumed?: Consumed<K, V>, materialized?: TableMaterialized): KTable<K, V>
  table<K, V>(handle: string | Topic<K, V>, consumed: Consumed<K, V> = {}, materialized: TableMaterialized = {}): KTable<K, V> {
    const given = topicArgument('StreamsBuilder.table', handle, consumed.keySerde, consumed.valueSerde)
    const topic = given.name
    const history = tableMaterialized(`table "${topic}"`, materialized, true)
    const keySerde = this.keySerdeOr(given.keySerde, 'String')
    const valueSerde = this.valueSerdeOr(given.valueSerde, 'String')
    // Kafka Streams names the store first: <topic>-STATE-STORE-<n>, spending an index even if never used.
    const storeName = materialized.name ?? this.newName(`${topic}-STATE-STORE`)
    const source = this.newName('KSTREAM-SOURCE')
    this.topology.addSource(source, topic, { keySerde, valueSerde, timestampExtractor: consumed.timestampExtractor })
    const name = consumed.name ?? this.newName('KTABLE-SOURCE')
    const materialization: TableMaterialization<K> = { storeName: undefined, keyId: undefined, ...(history === undefined ? {} : { historyRetentionMs: history }) }
    this.topology.addProcessor(name, () => tableSourceProcessor<K, V>(materialization), source)
    const table = new KTable<K, V>(this, name, keySerde, valueSerde, undefined, materialization, storeName)
    // A versioned table keeps its versions whether or not something joins it (its store is its point),
    // and a table whose store is named keeps its values for interactive queries (Kafka Streams'
    // Materialized.as).
    if (history !== undefined || materialized.name !== undefined) table.valueStore('table')
    return table
  }

  /**
   * A global table (Kafka Streams' `globalTable`): every application instance keeps all partitions of
   * `topic` in one store (`materialized.name`, default `<topic>-STATE-STORE-<n>`, as Kafka Streams names it), read from the topic's start
   * before the tasks process and then as records arrive, ahead of the tasks. Streams join it by a key
   * they pick from each record (`KStream.join(globalTable, keySelector, joiner)`), with no
   * co-partitioning. Its store answers interactive queries. A global table is not versioned (as in Kafka Streams).
   */
  globalTable<K, V>(topic: Topic<K, V>, consumed?: Consumed<K, V>, materialized?: TableMaterialized): GlobalKTable<K, V>
  /** A global table of topic `topic`, by name: `K` and `V` are what `consumed`'s serdes read (default `string`). */
  globalTable<K = string, V = string>(topic: string, consumed?: Consumed<K, V>, materialized?: TableMaterialized): GlobalKTable<K, V>
  globalTable<K, V>(handle: string | Topic<K, V>, consumed: Consumed<K, V> = {}, materialized: TableMaterialized = {}): GlobalKTable<K, V> {
    const given = topicArgument('StreamsBuilder.globalTable', handle, consumed.keySerde, consumed.valueSerde)
    const topic = given.name
    if (consumed.timestampExtractor !== undefined) {
      // A global table's records keep no time (no stream time, no windows): an extractor would do nothing.
      throw new PunctualError('INVALID_CONFIG', `globalTable "${topic}": a timestamp extractor has no effect on a global table, whose records carry no stream time; leave timestampExtractor out`)
    }
    tableMaterialized(`globalTable "${topic}"`, materialized, false)
    const keySerde = this.keySerdeOr(given.keySerde, 'String')
    const valueSerde = this.valueSerdeOr(given.valueSerde, 'String')
    const storeName = materialized.name ?? this.newName(`${topic}-STATE-STORE`)
    const source = this.newName('KSTREAM-SOURCE')
    const name = consumed.name ?? this.newName('KTABLE-SOURCE')
    const keyId = keyIdFunction(keySerde)
    const store = { ...Stores.inMemoryKeyValueStore<string, TableEntry<V>>(storeName), query: keyIdQuery(keyId, keySerde, (entry: TableEntry<V>) => entry.v) }
    this.topology.addGlobalStore<K, V | null>(store, source, topic, { keySerde, valueSerde: valueSerde as Serde<V | null> }, name, globalTableProcessor<K, V>(storeName, keyId))
    return new GlobalKTable<K, V>(storeName, keyId)
  }

  /**
   * Adds a state store for processors of your own (`KStream.process`, `processValues`, `processKeyed`),
   * which name it to use it (Kafka Streams' `StreamsBuilder.addStateStore`).
   */
  addStateStore<S extends StateStore>(builder: StoreBuilder<S>): this {
    this.topology.addStateStore(builder)
    return this
  }

  /** @internal */
  hasStateStore(name: string): boolean {
    return this.topology.hasStateStore(name)
  }

  /**
   * The topology built so far (Kafka Streams' `StreamsBuilder.build`): the builder's own, not a copy,
   * so build once all operations are added.
   */
  build(): Topology {
    return this.topology
  }

  /** @internal */
  get graph(): Topology {
    return this.topology
  }

  /** @internal Kafka Streams' naming: PREFIX-0000000007. */
  newName(prefix: string): string {
    return `${prefix}-${String(this.index++).padStart(10, '0')}`
  }
}

/** Settings of a `StreamsBuilder` (Kafka Streams' `TopologyConfig`): its default serdes. */
export interface StreamsBuilderConfig {
  /** Kafka Streams' `default.key.serde`: the serde of keys no operation is given one for. */
  readonly defaultKeySerde?: Serde<unknown>
  /** Kafka Streams' `default.value.serde`: the serde of values no operation is given one for. */
  readonly defaultValueSerde?: Serde<unknown>
}

function checkSerde(serde: unknown, name: string): Serde<unknown> | undefined {
  if (serde === undefined) return undefined
  const s = serde as Partial<Serde<unknown>> | null
  if (typeof s !== 'object' || s === null || typeof s.serialize !== 'function' || typeof s.deserialize !== 'function') {
    throw new PunctualError('INVALID_CONFIG', `StreamsBuilder: ${name} must be a serde (an object with serialize and deserialize), got ${s === null ? 'null' : typeof s}`)
  }
  return s as Serde<unknown>
}

/**
 * Checks a table's `materialized` where a user may have passed what another operation takes (from
 * JavaScript, or a `Materialized` builder with serdes): returns its history retention, if versioned.
 */
function tableMaterialized(operation: string, materialized: TableMaterialized, versionable: boolean): number | undefined {
  if (typeof materialized !== 'object' || materialized === null) {
    throw new PunctualError('INVALID_CONFIG', `${operation}: materialized must be { name?, historyRetentionMs? } or Materialized.as(...), got ${shownValue(materialized)}`)
  }
  const m = materialized as TableMaterialized & Record<string, unknown>
  if ('storeName' in m || 'versioned' in m) {
    throw new PunctualError('INVALID_CONFIG', `${operation}: a table's store is named with { name } and versioned with { historyRetentionMs } (or Materialized.as(Stores.persistentVersionedKeyValueStore(name, historyRetentionMs))), not storeName or versioned`)
  }
  for (const option of ['keySerde', 'valueSerde', 'retentionMs', 'storeType', 'cacheEntries'] as const) {
    if (m[option] !== undefined) throw new PunctualError('INVALID_CONFIG', `${operation}: materialized ${option} has no effect on a table (its store uses consumed's serdes); leave it out`)
  }
  if (m.name !== undefined && (typeof m.name !== 'string' || m.name === '')) {
    throw new PunctualError('INVALID_CONFIG', `${operation}: the store name must be a non-empty string, got ${shownValue(m.name)}`)
  }
  const history = m.historyRetentionMs
  if (history === undefined) return undefined
  if (!versionable) throw new PunctualError('INVALID_CONFIG', `${operation}: a global table cannot be versioned (as in Kafka Streams); leave historyRetentionMs out`)
  if (!Number.isSafeInteger(history) || history < 0) throw new PunctualError('INVALID_CONFIG', `${operation}: historyRetentionMs must be an integer >= 0, got ${shownValue(history)}`)
  return history
}
