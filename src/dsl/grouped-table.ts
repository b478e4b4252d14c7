import { PunctualError } from '../errors.js'
import { Serdes } from '../processor/serdes.js'
import type { Serde } from '../processor/serdes.js'
import { Stores } from '../state/stores.js'
import { keyIdFunction } from '../windows/key-id.js'
import type { StreamsBuilder } from './builder.js'
import { KTable } from './ktable.js'
import type { KeyValueMaterialized } from './options.js'
import { storeTypeOf } from './options.js'
import { checkedCacheEntries } from '../state/stores.js'
import { keyIdQuery } from './queryable.js'
import { changeSerde, tableAggregateProcessor } from './table-grouping.js'
import type { TableAggregate } from './table-grouping.js'

/**
 * A table grouped by a new key (`KTable.groupBy`), Kafka Streams' `KGroupedTable`: its aggregations add
 * each new value to its group and take each old value out of its group, so the result follows the table
 * as keys change value and group. Each result is a table, in the store `materialized.name`, else
 * `KTABLE-AGGREGATE-STATE-STORE-<n>` (`KTABLE-REDUCE-...` for `reduce`). The changes reach it through a
 * repartition topic named as Kafka Streams names it: `<grouped name>-repartition` (one for every
 * aggregation), else `<store>-repartition` (one per aggregation).
 */
export class KGroupedTable<K, V> {
  /** The source of the named repartition topic, once an aggregation made it. */
  private namedSource: string | undefined

  /** @internal */
  constructor(
    private readonly builder: StreamsBuilder,
    /** The selector's node, whose re-keyed changes each aggregation reads through its repartition topic. */
    private readonly node: string,
    private readonly keySerde: Serde<K>,
    private readonly valueSerde: Serde<V>,
    /** The grouping's name (`Grouped.name`), which names the repartition topic. */
    private readonly groupedName?: string,
  ) {}

  /** Rows per group: +1 for a value added, -1 for one taken out (a group at 0 stays, with 0). */
  count(materialized: KeyValueMaterialized<K, number> = {}): KTable<K, number> {
    return this.aggregated('count', 'KTABLE-AGGREGATE', () => 0, (_k, _v, n) => n + 1, (_k, _v, n) => n - 1, { valueSerde: Serdes.Long(), ...materialized })
  }

  /**
   * Combines the values of a group: `adder(aggregate, value)` for a value added (the first value of a
   * group is its aggregate), `subtractor(aggregate, value)` for one taken out.
   */
  reduce(adder: (aggregate: V, value: V) => V, subtractor: (aggregate: V, value: V) => V, materialized: KeyValueMaterialized<K, V> = {}): KTable<K, V> {
    this.checkFunctions('reduce', { adder, subtractor })
    return this.aggregated('reduce', 'KTABLE-REDUCE', undefined, (_k, v, agg) => adder(agg, v), (_k, v, agg) => subtractor(agg, v), { valueSerde: this.valueSerde, ...materialized })
  }

  /** Aggregates a group from `initializer()`: `adder` for a value added, `subtractor` for one taken out. */
  aggregate<VA>(
    initializer: () => VA,
    adder: (key: K, value: V, aggregate: VA) => VA,
    subtractor: (key: K, value: V, aggregate: VA) => VA,
    materialized: KeyValueMaterialized<K, VA> = {},
  ): KTable<K, VA> {
    this.checkFunctions('aggregate', { initializer, adder, subtractor })
    return this.aggregated('aggregate', 'KTABLE-AGGREGATE', initializer, adder, subtractor, materialized)
  }

  private checkFunctions(operation: string, fns: Record<string, unknown>): void {
    for (const [name, fn] of Object.entries(fns)) {
      if (typeof fn !== 'function') throw new PunctualError('INVALID_TOPOLOGY', `${operation}: the ${name} must be a function, got ${typeof fn}`)
    }
  }

  private aggregated<VA>(
    operation: string,
    prefix: string,
    initializer: (() => VA) | undefined,
    adder: (key: K, value: V, aggregate: VA) => VA,
    subtractor: (key: K, value: V, aggregate: VA) => VA,
    materialized: KeyValueMaterialized<K, VA>,
  ): KTable<K, VA> {
    const name = materialized.name ?? this.builder.newName(prefix)
    const storeName = materialized.name ?? `${prefix}-STATE-STORE-${name.slice(prefix.length + 1)}`
    const storeType = storeTypeOf(`${operation} "${name}"`, materialized.storeType)
    const keyId = keyIdFunction(this.keySerde)
    const store =
      storeType === 'persistent' ? Stores.persistentKeyValueStore<string, TableAggregate<VA>>(storeName, { cacheEntries: checkedCacheEntries(`${operation} "${name}"`, materialized.cacheEntries) }) : Stores.inMemoryKeyValueStore<string, TableAggregate<VA>>(storeName)
    const b = this.builder
    const source = this.groupedName === undefined ? this.throughRepartitionTopic(storeName) : (this.namedSource ??= this.throughRepartitionTopic(this.groupedName))
    b.graph
      .addProcessor(name, tableAggregateProcessor<K, V, VA>(initializer, adder, subtractor, keyId, storeName), source)
      .addStateStore({ ...store, query: keyIdQuery(keyId, this.keySerde, (stored: TableAggregate<VA>) => stored.agg) }, name)
    return new KTable<K, VA>(this.builder, name, materialized.keySerde ?? this.keySerde, materialized.valueSerde, undefined)
  }

  /** The changes, re-keyed, written to `<name>-repartition` and read back, so each group's changes meet in one task; returns the source. */
  private throughRepartitionTopic(name: string): string {
    const b = this.builder
    const topic = `${name}-repartition`
    const serdes = { keySerde: this.keySerde as Serde<unknown>, valueSerde: changeSerde(this.valueSerde) as Serde<unknown> }
    b.graph.markInternalTopic(topic)
    b.graph.addSink(b.newName('KTABLE-SINK'), topic, serdes, this.node)
    const source = b.newName('KTABLE-SOURCE')
    b.graph.addSource(source, topic, serdes)
    return source
  }
}
