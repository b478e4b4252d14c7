import { PunctualError } from '../errors.js'
import { Serdes } from '../processor/serdes.js'
import { Stores } from '../state/stores.js'
import type { Serde } from '../processor/serdes.js'
import { keyIdFunction } from '../windows/key-id.js'
import { SessionAggregateProcessor, sessionStore } from '../windows/session-aggregate.js'
import { WindowAggregateProcessor } from '../windows/window-aggregate.js'
import { SlidingAggregateProcessor, slidingStore } from '../windows/sliding-aggregate.js'
import { TimeWindowStore } from '../windows/time-window-store.js'
import { sessionQuery, slidingWindowQuery, timeWindowQuery } from '../windows/queryable.js'
import { keyIdQuery } from './queryable.js'
import type { SessionWindows, SlidingWindows, TimeWindows, Windowed } from '../windows/windows.js'
import type { StreamsBuilder } from './builder.js'
import { KTable } from './ktable.js'
import type { FinalResultsHook } from './ktable.js'
import type { KeyValueMaterialized, Materialized } from './options.js'
import { aggregateProcessor } from './processors.js'

const keySerdeOr = <K>(serde: Serde<K> | undefined): Serde<K> => serde ?? (Serdes.JSON<K>() as Serde<K>)

/** A stream grouped by key, ready to aggregate (Kafka Streams' KGroupedStream). */
export class KGroupedStream<K, V> {
  /** @internal */
  constructor(
    private readonly builder: StreamsBuilder,
    private readonly node: string,
    private readonly keySerde: Serde<K> | undefined,
    private readonly valueSerde: Serde<V> | undefined,
  ) {}

  count(materialized: KeyValueMaterialized<K, number> = {}): KTable<K, number> {
    return this.aggregate(() => 0, (_k, _v, n) => n + 1, { valueSerde: Serdes.Long(), ...materialized })
  }

  reduce(reducer: (aggregate: V, value: V) => V, materialized: KeyValueMaterialized<K, V> = {}): KTable<K, V> {
    return this.aggregate<V | undefined>(() => undefined, (_k, v, agg) => (agg === undefined ? v : reducer(agg, v)), materialized as KeyValueMaterialized<K, V | undefined>) as KTable<K, V>
  }

  aggregate<VA>(initializer: () => VA, aggregator: (key: K, value: V, aggregate: VA) => VA, materialized: KeyValueMaterialized<K, VA> = {}): KTable<K, VA> {
    const name = materialized.name ?? this.builder.newName('KSTREAM-AGGREGATE')
    const keySerde = keySerdeOr(this.keySerde)
    const keyId = keyIdFunction(keySerde)
    const storeName = `${name}-store`
    const storeType = materialized.storeType ?? 'persistent'
    if (storeType !== 'persistent' && storeType !== 'inMemory') {
      throw new PunctualError('INVALID_CONFIG', `aggregation "${name}": storeType must be 'persistent' or 'inMemory', got ${JSON.stringify(storeType)}`)
    }
    this.builder.graph
      .addProcessor(name, aggregateProcessor(initializer, aggregator, keyId, storeName), this.node)
      .addStateStore(
        {
          ...(storeType === 'persistent'
            ? Stores.persistentKeyValueStore<string, { readonly agg: VA }>(storeName)
            : Stores.inMemoryKeyValueStore<string, { readonly agg: VA }>(storeName)),
          query: keyIdQuery(keyId, keySerde, (stored: { readonly agg: VA }) => stored.agg),
        },
        name,
      )
    return new KTable<K, VA>(this.builder, name, materialized.keySerde ?? this.keySerde, materialized.valueSerde, undefined)
  }

  windowedBy(windows: TimeWindows | SlidingWindows): TimeWindowedKStream<K, V>
  windowedBy(windows: SessionWindows): SessionWindowedKStream<K, V>
  windowedBy(windows: TimeWindows | SlidingWindows | SessionWindows): TimeWindowedKStream<K, V> | SessionWindowedKStream<K, V> {
    return windows.kind === 'session'
      ? new SessionWindowedKStream(this.builder, this.node, this.keySerde, windows)
      : new TimeWindowedKStream(this.builder, this.node, this.keySerde, windows)
  }
}

/** A grouped stream over time windows (tumbling, hopping) or sliding windows: aggregations give a windowed table. */
export class TimeWindowedKStream<K, V> {
  /** @internal */
  constructor(
    private readonly builder: StreamsBuilder,
    private readonly node: string,
    private readonly keySerde: Serde<K> | undefined,
    private readonly windows: TimeWindows | SlidingWindows,
  ) {}

  count(materialized: Materialized<Windowed<K>, number> = {}): KTable<Windowed<K>, number> {
    return this.aggregate(() => 0, (_k, _v, n) => n + 1, { valueSerde: Serdes.Long(), ...materialized })
  }

  reduce(reducer: (aggregate: V, value: V) => V, materialized: Materialized<Windowed<K>, V> = {}): KTable<Windowed<K>, V> {
    return this.aggregate<V | undefined>(() => undefined, (_k, v, agg) => (agg === undefined ? v : reducer(agg, v)), materialized as Materialized<Windowed<K>, V | undefined>) as KTable<Windowed<K>, V>
  }

  aggregate<VA>(initializer: () => VA, aggregator: (key: K, value: V, aggregate: VA) => VA, materialized: Materialized<Windowed<K>, VA> = {}): KTable<Windowed<K>, VA> {
    const name = materialized.name ?? this.builder.newName('KSTREAM-AGGREGATE')
    const keySerde = keySerdeOr(this.keySerde)
    const keyId = keyIdFunction(keySerde)
    const windows = this.windows
    const finalResults: FinalResultsHook = { node: name, enabled: () => false }
    if (windows.kind === 'time') {
      // The windows live in a task store, so commits make them durable.
      const storeName = `${name}-store`
      this.builder.graph
        .addProcessor(name, () => new WindowAggregateProcessor<K, V, VA>(windows, { initializer, aggregator }, keyId, storeName, finalResults.enabled()), this.node)
        .addStateStore({ name: storeName, query: timeWindowQuery<K, VA>(keyId), build: () => new TimeWindowStore<K, VA>(storeName, windows.sizeMs) }, name)
    } else {
      const storeName = `${name}-store`
      this.builder.graph
        .addProcessor(name, () => new SlidingAggregateProcessor<K, V, VA>(windows, { initializer, aggregator }, keyId, storeName), this.node)
        .addStateStore({ name: storeName, query: slidingWindowQuery<K, VA>(keyId), build: () => slidingStore<K, VA>(storeName, windows.timeDifferenceMs) }, name)
    }
    return new KTable<Windowed<K>, VA>(this.builder, name, undefined, materialized.valueSerde, {
      graceMs: windows.graceMs,
      keySerde: keySerde as Serde<unknown>,
      // Sliding windows have no buffer-less final results.
      ...(windows.kind === 'time' ? { finalResults } : {}),
    })
  }
}

/** A grouped stream over session windows. */
export class SessionWindowedKStream<K, V> {
  /** @internal */
  constructor(
    private readonly builder: StreamsBuilder,
    private readonly node: string,
    private readonly keySerde: Serde<K> | undefined,
    private readonly windows: SessionWindows,
  ) {}

  count(materialized: Materialized<Windowed<K>, number> = {}): KTable<Windowed<K>, number> {
    return this.aggregate(() => 0, (_k, _v, n) => n + 1, (_k, a, b) => a + b, { valueSerde: Serdes.Long(), ...materialized })
  }

  reduce(reducer: (aggregate: V, value: V) => V, materialized: Materialized<Windowed<K>, V> = {}): KTable<Windowed<K>, V> {
    const combine = (a: V | undefined, b: V | undefined): V | undefined => (a === undefined ? b : b === undefined ? a : reducer(a, b))
    return this.aggregate<V | undefined>(() => undefined, (_k, v, agg) => combine(agg, v), (_k, a, b) => combine(a, b), materialized as Materialized<Windowed<K>, V | undefined>) as KTable<Windowed<K>, V>
  }

  aggregate<VA>(
    initializer: () => VA,
    aggregator: (key: K, value: V, aggregate: VA) => VA,
    merger: (key: K, left: VA, right: VA) => VA,
    materialized: Materialized<Windowed<K>, VA> = {},
  ): KTable<Windowed<K>, VA> {
    const name = materialized.name ?? this.builder.newName('KSTREAM-AGGREGATE')
    const keySerde = keySerdeOr(this.keySerde)
    const keyId = keyIdFunction(keySerde)
    const windows = this.windows
    const storeName = `${name}-store`
    this.builder.graph
      .addProcessor(name, () => new SessionAggregateProcessor<K, V, VA>(windows, { initializer, aggregator, merger }, keyId, storeName), this.node)
      .addStateStore({ name: storeName, query: sessionQuery<K, VA>(keyId), build: () => sessionStore<K, VA>(storeName) }, name)
    // A session closes `gap` after its end, then has its grace (as in Kafka Streams), so final results
    // wait for both.
    return new KTable<Windowed<K>, VA>(this.builder, name, undefined, materialized.valueSerde, { graceMs: windows.graceMs + windows.gapMs, keySerde: keySerde as Serde<unknown>, sessions: true })
  }
}
