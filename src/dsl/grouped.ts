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
import type { KStream } from './kstream.js'
import type { ProcessorSupplier, StateStore } from '../processor/api.js'
import type { StoreBuilder } from '../state/stores.js'
import { KTable } from './ktable.js'
import type { FinalResultsHook } from './ktable.js'
import type { KeyValueMaterialized, Materialized } from './options.js'
import { storeTypeOf } from './options.js'
import { checkedCacheEntries } from '../state/stores.js'
import { aggregateProcessor, statelessProcessor } from './processors.js'
import type { StoredAggregate } from './processors.js'


/**
 * An aggregation's processor and store names, as Kafka Streams names them: a `Materialized` name names
 * the store (and here the processor too); else the processor is `<prefix>-<n>` and the store
 * `<prefix>-STATE-STORE-<n>`. The store's changelog topic is `<applicationId>-<store>-changelog`.
 */
function aggregationNames(builder: StreamsBuilder, prefix: string, materializedName: string | undefined): { name: string; storeName: string } {
  if (materializedName !== undefined) return { name: materializedName, storeName: materializedName }
  const name = builder.newName(prefix)
  return { name, storeName: `${prefix}-STATE-STORE-${name.slice(prefix.length + 1)}` }
}

/**
 * @internal Where the aggregations of a stream grouped after a key change read it: through a repartition
 * topic named after the grouping, else after each aggregation's store (Kafka Streams' rule).
 */
export interface PendingRepartition<K, V> {
  readonly stream: KStream<K, V>
  /** The grouping's name (`Grouped.name`): its topic, `<name>-repartition`, serves every aggregation. */
  readonly name: string | undefined
}

/** A stream grouped by key, ready to aggregate (Kafka Streams' KGroupedStream). */
export class KGroupedStream<K, V> {
  /** The source of the named repartition topic, once an aggregation made it. */
  private namedSource: string | undefined

  /** @internal */
  constructor(
    private readonly builder: StreamsBuilder,
    private readonly node: string,
    private readonly keySerde: Serde<K> | undefined,
    private readonly valueSerde: Serde<V> | undefined,
    private readonly repartition?: PendingRepartition<K, V>,
  ) {}

  /**
   * @internal The node an aggregation whose store is `storeName` reads: this stream's, or after a key
   * change the source of a repartition topic: `<grouped name>-repartition`, made once for every
   * aggregation of this grouped stream, else `<storeName>-repartition`, one per aggregation.
   */
  sourceFor(storeName: string): string {
    const r = this.repartition
    if (r === undefined) return this.node
    if (r.name === undefined) return r.stream.throughRepartitionTopic(storeName, this.keySerde, this.valueSerde).node
    this.namedSource ??= r.stream.throughRepartitionTopic(r.name, this.keySerde, this.valueSerde).node
    return this.namedSource
  }

  /** @internal Whether this grouped stream's aggregations read it through a repartition topic named after their store. */
  get repartitionsPerStore(): boolean {
    return this.repartition !== undefined && this.repartition.name === undefined
  }

  /**
   * Counts the records per key (Kafka Streams' `KGroupedStream.count`), in a store queryable as a
   * key-value store; records with a null key or value are skipped. Each record updates the table.
   * Its store is named `materialized.name`, else `KSTREAM-AGGREGATE-STATE-STORE-<n>`.
   */
  count(materialized: KeyValueMaterialized<K, number> = {}): KTable<K, number> {
    return this.aggregateAs('KSTREAM-AGGREGATE', () => 0, (_k, _v, n) => n + 1, { valueSerde: Serdes.Long(), ...materialized })
  }

  /**
   * Combines the values of each key with `reducer`, the first value as it is (Kafka Streams'
   * `KGroupedStream.reduce`); records with a null key or value are skipped.
   * Its store is named `materialized.name`, else `KSTREAM-REDUCE-STATE-STORE-<n>`.
   */
  reduce(reducer: (aggregate: V, value: V) => V, materialized: KeyValueMaterialized<K, V> = {}): KTable<K, V> {
    return this.aggregateAs<V | undefined>('KSTREAM-REDUCE', () => undefined, (_k, v, agg) => (agg === undefined ? v : reducer(agg, v)), materialized as KeyValueMaterialized<K, V | undefined>) as KTable<K, V>
  }

  /**
   * Folds the values of each key into an aggregate that starts as `initializer()` (Kafka Streams'
   * `KGroupedStream.aggregate`); records with a null key or value are skipped. Give
   * `materialized.valueSerde` when the aggregate does not survive MessagePack as it is.
   * Its store is named `materialized.name`, else `KSTREAM-AGGREGATE-STATE-STORE-<n>`.
   */
  aggregate<VA>(initializer: () => VA, aggregator: (key: K, value: V, aggregate: VA) => VA, materialized: KeyValueMaterialized<K, VA> = {}): KTable<K, VA> {
    return this.aggregateAs('KSTREAM-AGGREGATE', initializer, aggregator, materialized)
  }

  private aggregateAs<VA>(prefix: string, initializer: () => VA, aggregator: (key: K, value: V, aggregate: VA) => VA, materialized: KeyValueMaterialized<K, VA>): KTable<K, VA> {
    const { name, storeName } = aggregationNames(this.builder, prefix, materialized.name)
    const keySerde = this.builder.keySerdeOr(this.keySerde)
    const keyId = keyIdFunction(keySerde)
    const storeType = storeTypeOf(`aggregation "${name}"`, materialized.storeType)
    this.builder.graph
      .addProcessor(name, aggregateProcessor(initializer, aggregator, keyId, storeName), this.sourceFor(storeName))
      .addStateStore(
        {
          ...(storeType === 'persistent'
            ? Stores.persistentKeyValueStore<string, StoredAggregate<VA>>(storeName, { cacheEntries: checkedCacheEntries(`aggregation "${name}"`, materialized.cacheEntries) })
            : Stores.inMemoryKeyValueStore<string, StoredAggregate<VA>>(storeName)),
          query: keyIdQuery(keyId, keySerde, (stored: StoredAggregate<VA>) => stored.agg),
        },
        name,
      )
    return new KTable<K, VA>(this.builder, name, materialized.keySerde ?? this.keySerde, materialized.valueSerde, undefined)
  }

  /**
   * Starts a cogrouped aggregation (Kafka Streams' `cogroup`, KIP-150): this stream's records update the
   * aggregate with `aggregator`; add other grouped streams of the same key with
   * `CogroupedKStream.cogroup`, each with its own aggregator, then `aggregate(initializer)`.
   */
  cogroup<VOut>(aggregator: (key: K, value: V, aggregate: VOut) => VOut): CogroupedKStream<K, VOut> {
    if (typeof aggregator !== 'function') throw new PunctualError('INVALID_TOPOLOGY', `cogroup: the aggregator must be a function, got ${typeof aggregator}`)
    return new CogroupedKStream<K, VOut>(this.builder, [this.cogroupPart(aggregator)])
  }

  /** @internal This stream's node and key serde, where an aggregation reads it, with the aggregator it joins a cogroup with. */
  cogroupPart<VOut>(aggregator: (key: K, value: V, aggregate: VOut) => VOut): CogroupPart<K, VOut> {
    return {
      node: this.node,
      keySerde: this.keySerde,
      source: (storeName) => this.sourceFor(storeName),
      repartitionsPerStore: this.repartitionsPerStore,
      aggregator: aggregator as (key: K, value: unknown, aggregate: VOut) => VOut,
    }
  }

  /**
   * Aggregates per key and window (Kafka Streams' `KGroupedStream.windowedBy`): time windows (tumbling
   * or hopping) or sliding windows give a `TimeWindowedKStream`.
   */
  windowedBy(windows: TimeWindows | SlidingWindows): TimeWindowedKStream<K, V>
  /** Aggregates per key and session (Kafka Streams' `windowedBy(SessionWindows)`): a `SessionWindowedKStream`. */
  windowedBy(windows: SessionWindows): SessionWindowedKStream<K, V>
  windowedBy(windows: TimeWindows | SlidingWindows | SessionWindows): TimeWindowedKStream<K, V> | SessionWindowedKStream<K, V> {
    const source = (storeName: string): string => this.sourceFor(storeName)
    return windows.kind === 'session' ? new SessionWindowedKStream(this.builder, source, this.keySerde, windows) : new TimeWindowedKStream(this.builder, source, this.keySerde, windows)
  }
}

/** A grouped stream over time windows (tumbling, hopping) or sliding windows: aggregations give a windowed table. */
export class TimeWindowedKStream<K, V> {
  /** @internal */
  constructor(
    private readonly builder: StreamsBuilder,
    /** The node an aggregation with this store reads (`KGroupedStream.sourceFor`). */
    private readonly source: (storeName: string) => string,
    private readonly keySerde: Serde<K> | undefined,
    private readonly windows: TimeWindows | SlidingWindows,
  ) {}

  /**
   * Counts the records per key and window (Kafka Streams' `TimeWindowedKStream.count`); a record for a
   * window closed by more than the grace period is dropped as `late`. The table updates with each
   * record; `suppress(Suppressed.untilWindowCloses(...))` gives one final count per window.
   */
  count(materialized: Materialized<Windowed<K>, number> = {}): KTable<Windowed<K>, number> {
    return this.aggregate(() => 0, (_k, _v, n) => n + 1, { valueSerde: Serdes.Long(), ...materialized })
  }

  /** Combines the values of each key and window with `reducer` (Kafka Streams' `TimeWindowedKStream.reduce`); late records are dropped as for `count`. */
  reduce(reducer: (aggregate: V, value: V) => V, materialized: Materialized<Windowed<K>, V> = {}): KTable<Windowed<K>, V> {
    return this.aggregate<V | undefined>(() => undefined, (_k, v, agg) => (agg === undefined ? v : reducer(agg, v)), materialized as Materialized<Windowed<K>, V | undefined>) as KTable<Windowed<K>, V>
  }

  /**
   * Folds the values of each key and window into an aggregate that starts as `initializer()` (Kafka
   * Streams' `TimeWindowedKStream.aggregate`), in a store queryable as a window store; late records
   * are dropped as for `count`. Its store is named `materialized.name`, else `KSTREAM-AGGREGATE-STATE-STORE-<n>`.
   */
  aggregate<VA>(initializer: () => VA, aggregator: (key: K, value: V, aggregate: VA) => VA, materialized: Materialized<Windowed<K>, VA> = {}): KTable<Windowed<K>, VA> {
    const { name, storeName } = aggregationNames(this.builder, 'KSTREAM-AGGREGATE', materialized.name)
    const keySerde = this.builder.keySerdeOr(this.keySerde)
    const keyId = keyIdFunction(keySerde)
    const windows = this.windows
    const finalResults: FinalResultsHook = { node: name, enabled: () => false }
    const retained = retainedAfterClose(name, windows, materialized.retentionMs)
    const persistent = storeTypeOf(`aggregation "${name}"`, materialized.storeType) === 'persistent'
    const cacheEntries = checkedCacheEntries(`aggregation "${name}"`, materialized.cacheEntries)
    if (windows.kind === 'time') {
      // The windows live in a task store, so commits make them durable.
      this.builder.graph
        .addProcessor(name, () => new WindowAggregateProcessor<K, V, VA>(windows, { initializer, aggregator }, keyId, storeName, finalResults.enabled()), this.source(storeName))
        .addStateStore({ name: storeName, persistent, query: timeWindowQuery<K, VA>(keyId), build: () => new TimeWindowStore<K, VA>(storeName, windows.sizeMs, retained, cacheEntries) }, name)
    } else {
      this.builder.graph
        .addProcessor(name, () => new SlidingAggregateProcessor<K, V, VA>(windows, { initializer, aggregator }, keyId, storeName), this.source(storeName))
        .addStateStore({ name: storeName, persistent, query: slidingWindowQuery<K, VA>(keyId), build: () => slidingStore<K, VA>(storeName, windows.timeDifferenceMs, cacheEntries) }, name)
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
    /** The node an aggregation with this store reads (`KGroupedStream.sourceFor`). */
    private readonly source: (storeName: string) => string,
    private readonly keySerde: Serde<K> | undefined,
    private readonly windows: SessionWindows,
  ) {}

  /**
   * Counts the records per key and session (Kafka Streams' `SessionWindowedKStream.count`): a record
   * within the gap of a session extends it, one between two sessions merges them. A merged session
   * replaces the old ones in the table (their keys get tombstones).
   */
  count(materialized: Materialized<Windowed<K>, number> = {}): KTable<Windowed<K>, number> {
    return this.aggregate(() => 0, (_k, _v, n) => n + 1, (_k, a, b) => a + b, { valueSerde: Serdes.Long(), ...materialized })
  }

  /** Combines the values of each key and session with `reducer`, which also merges two sessions' results (Kafka Streams' `SessionWindowedKStream.reduce`). */
  reduce(reducer: (aggregate: V, value: V) => V, materialized: Materialized<Windowed<K>, V> = {}): KTable<Windowed<K>, V> {
    const combine = (a: V | undefined, b: V | undefined): V | undefined => (a === undefined ? b : b === undefined ? a : reducer(a, b))
    return this.aggregate<V | undefined>(() => undefined, (_k, v, agg) => combine(agg, v), (_k, a, b) => combine(a, b), materialized as Materialized<Windowed<K>, V | undefined>) as KTable<Windowed<K>, V>
  }

  /**
   * Folds the values of each key and session into an aggregate that starts as `initializer()`;
   * `merger` combines two sessions' aggregates when a record joins them (Kafka Streams'
   * `SessionWindowedKStream.aggregate`). The store is queryable as a session store.
   * Its store is named `materialized.name`, else `KSTREAM-AGGREGATE-STATE-STORE-<n>`.
   */
  aggregate<VA>(
    initializer: () => VA,
    aggregator: (key: K, value: V, aggregate: VA) => VA,
    merger: (key: K, left: VA, right: VA) => VA,
    materialized: Materialized<Windowed<K>, VA> = {},
  ): KTable<Windowed<K>, VA> {
    const { name, storeName } = aggregationNames(this.builder, 'KSTREAM-AGGREGATE', materialized.name)
    const keySerde = this.builder.keySerdeOr(this.keySerde)
    const keyId = keyIdFunction(keySerde)
    const windows = this.windows
    retainedAfterClose(name, windows, materialized.retentionMs)
    const persistent = storeTypeOf(`aggregation "${name}"`, materialized.storeType) === 'persistent'
    const cacheEntries = checkedCacheEntries(`aggregation "${name}"`, materialized.cacheEntries)
    this.builder.graph
      .addProcessor(name, () => new SessionAggregateProcessor<K, V, VA>(windows, { initializer, aggregator, merger }, keyId, storeName), this.source(storeName))
      .addStateStore({ name: storeName, persistent, query: sessionQuery<K, VA>(keyId), build: () => sessionStore<K, VA>(storeName, cacheEntries) }, name)
    // A session closes `gap` after its end, then has its grace (as in Kafka Streams), so final results
    // wait for both.
    return new KTable<Windowed<K>, VA>(this.builder, name, undefined, materialized.valueSerde, { graceMs: windows.graceMs + windows.gapMs, keySerde: keySerde as Serde<unknown>, sessions: true })
  }
}

/** One grouped stream of a cogroup: where its records come from, and how they update the aggregate. */
interface CogroupPart<K, VOut> {
  /** The grouped stream's node (before any repartition topic): a stream joins a cogroup once. */
  readonly node: string
  readonly keySerde: Serde<K> | undefined
  /** The node the cogroup's aggregation reads, given its store (`KGroupedStream.sourceFor`). */
  readonly source: (storeName: string) => string
  /** Whether it reads through a repartition topic named after the store (grouped after a key change, not named). */
  readonly repartitionsPerStore: boolean
  readonly aggregator: (key: K, value: unknown, aggregate: VOut) => VOut
}

/**
 * Adds a cogroup's nodes, as Kafka Streams lays them out: one aggregation processor per stream
 * (`<name>-cogroup-agg-<i>`, below that stream's node, or below the source of its repartition topic
 * after a key change), the store they share, and the merge node (`<name>-cogroup-merge`) that passes on
 * what any of them forwards. Returns the merge node's name.
 */
function addCogroupNodes<K, VOut, KOut, VNode>(
  b: StreamsBuilder,
  name: string,
  parts: ReadonlyArray<CogroupPart<K, VOut>>,
  processorFor: (part: CogroupPart<K, VOut>, i: number) => ProcessorSupplier<K, unknown, KOut, VNode>,
  store: StoreBuilder<StateStore>,
): string {
  // Kafka Streams names an unnamed grouping's repartition topic after the store: two such streams would
  // both write `<store>-repartition`.
  if (parts.filter((p) => p.repartitionsPerStore).length > 1) {
    throw new PunctualError(
      'INVALID_TOPOLOGY',
      `cogroup "${name}": several of its grouped streams need a repartition topic (their keys changed), which would all be named after the store (${store.name}-repartition); name their groupings (groupBy(selector, { name }) or groupByKey({ name }))`,
    )
  }
  const aggregators = parts.map((part, i) => {
    const node = `${name}-cogroup-agg-${i}`
    b.graph.addProcessor(node, processorFor(part, i), part.source(store.name))
    return node
  })
  b.graph.addStateStore(store, ...aggregators)
  const merge = `${name}-cogroup-merge`
  b.graph.addProcessor(merge, statelessProcessor<KOut, VNode, KOut, VNode>((r, ctx) => ctx.forward(r)), ...aggregators)
  return merge
}

/**
 * Grouped streams of one key aggregated together (Kafka Streams' `CogroupedKStream`, KIP-150): each
 * stream's records update one shared aggregate per key with that stream's aggregator, in the order the
 * task reads them. The streams must be co-partitioned (grouped streams that changed keys went through
 * their repartition topics); the aggregate lives in one store, named `materialized.name`, else
 * `COGROUPKSTREAM-AGGREGATE-STATE-STORE-<n>`.
 */
export class CogroupedKStream<K, VOut> {
  /** @internal */
  constructor(
    private readonly builder: StreamsBuilder,
    private readonly parts: ReadonlyArray<CogroupPart<K, VOut>>,
  ) {}

  /** Adds another grouped stream, whose records update the aggregate with `aggregator`. */
  cogroup<V2>(grouped: KGroupedStream<K, V2>, aggregator: (key: K, value: V2, aggregate: VOut) => VOut): CogroupedKStream<K, VOut> {
    if (!(grouped instanceof KGroupedStream)) throw new PunctualError('INVALID_TOPOLOGY', 'cogroup: the other stream must be a KGroupedStream (stream.groupByKey() or groupBy(...))')
    if (typeof aggregator !== 'function') throw new PunctualError('INVALID_TOPOLOGY', `cogroup: the aggregator must be a function, got ${typeof aggregator}`)
    if (this.parts.some((p) => p.node === grouped.cogroupPart(aggregator).node)) throw new PunctualError('INVALID_TOPOLOGY', 'cogroup: a grouped stream can be added once')
    return new CogroupedKStream<K, VOut>(this.builder, [...this.parts, grouped.cogroupPart(aggregator)])
  }

  /**
   * Aggregates the cogrouped streams per key and window (Kafka Streams' `CogroupedKStream.windowedBy`):
   * time windows (tumbling or hopping) or session windows, with grace.
   */
  windowedBy(windows: TimeWindows | SlidingWindows): TimeWindowedCogroupedKStream<K, VOut>
  /** As the form above, over session windows: aggregate with a merger of two sessions' aggregates. */
  windowedBy(windows: SessionWindows): SessionWindowedCogroupedKStream<K, VOut>
  windowedBy(windows: TimeWindows | SlidingWindows | SessionWindows): TimeWindowedCogroupedKStream<K, VOut> | SessionWindowedCogroupedKStream<K, VOut> {
    const kind = (windows as { kind?: string } | undefined)?.kind
    if (kind === 'time' || kind === 'sliding') return new TimeWindowedCogroupedKStream<K, VOut>(this.builder, this.parts, windows as TimeWindows | SlidingWindows)
    if (kind === 'session') return new SessionWindowedCogroupedKStream<K, VOut>(this.builder, this.parts, windows as SessionWindows)
    throw new PunctualError('INVALID_TOPOLOGY', `cogroup windowedBy: TimeWindows, SlidingWindows or SessionWindows are supported, got ${kind ?? String(windows)}`)
  }

  /**
   * The aggregate per key, from `initializer()`: each record of a stream goes through that stream's
   * aggregator, and the result is stored and forwarded at the later of the record's and the
   * aggregate's timestamps (null keys and values are skipped). Processors are named
   * `<name>-cogroup-agg-<i>` and `<name>-cogroup-merge`.
   */
  aggregate(initializer: () => VOut, materialized: KeyValueMaterialized<K, VOut> = {}): KTable<K, VOut> {
    if (typeof initializer !== 'function') throw new PunctualError('INVALID_TOPOLOGY', `cogroup aggregate: the initializer must be a function, got ${typeof initializer}`)
    const b = this.builder
    const { name, storeName } = aggregationNames(b, 'COGROUPKSTREAM-AGGREGATE', materialized.name)
    const storeType = materialized.storeType ?? 'persistent'
    if (storeType !== 'persistent' && storeType !== 'inMemory') {
      throw new PunctualError('INVALID_CONFIG', `cogroup aggregate "${name}": storeType must be 'persistent' or 'inMemory', got ${JSON.stringify(storeType)}`)
    }
    // One key id function for every stream, so equal keys share one aggregate whatever serde each carries.
    const keySerde = this.builder.keySerdeOr(materialized.keySerde ?? this.parts.find((p) => p.keySerde !== undefined)?.keySerde)
    const keyId = keyIdFunction(keySerde)
    const store = storeType === 'persistent' ? Stores.persistentKeyValueStore<string, StoredAggregate<VOut>>(storeName) : Stores.inMemoryKeyValueStore<string, StoredAggregate<VOut>>(storeName)
    const merge = addCogroupNodes(b, name, this.parts, (part) => aggregateProcessor(initializer, part.aggregator, keyId, storeName), {
      ...store,
      query: keyIdQuery(keyId, keySerde, (stored: StoredAggregate<VOut>) => stored.agg),
    })
    return new KTable<K, VOut>(b, merge, materialized.keySerde ?? keySerde, materialized.valueSerde, undefined)
  }
}

/**
 * Cogrouped streams over time or sliding windows (Kafka Streams' `TimeWindowedCogroupedKStream`): one
 * window store shared by a window aggregation per stream, each stream's records updating the key's
 * windows with that stream's aggregator. As in Kafka Streams, each stream judges lateness by its own
 * stream time, and a window leaves the store once it is older than the store's retention behind the
 * latest window start (time windows: size plus grace; sliding windows: twice the difference plus grace).
 */
export class TimeWindowedCogroupedKStream<K, VOut> {
  /** @internal */
  constructor(
    private readonly builder: StreamsBuilder,
    private readonly parts: ReadonlyArray<CogroupPart<K, VOut>>,
    private readonly windows: TimeWindows | SlidingWindows,
  ) {}

  /**
   * The aggregate per key and window, from `initializer()`, forwarded at each update with the window's
   * largest input timestamp (sliding windows as a sliding aggregation of one stream makes them).
   * Processors are named `<name>-cogroup-agg-<i>` and `<name>-cogroup-merge`; the windows live in
   * the store `materialized.name`, else `COGROUPKSTREAM-AGGREGATE-STATE-STORE-<n>` (queryable as a window store).
   */
  aggregate(initializer: () => VOut, materialized: Materialized<Windowed<K>, VOut> = {}): KTable<Windowed<K>, VOut> {
    if (typeof initializer !== 'function') throw new PunctualError('INVALID_TOPOLOGY', `cogroup aggregate: the initializer must be a function, got ${typeof initializer}`)
    const b = this.builder
    const { name, storeName } = aggregationNames(b, 'COGROUPKSTREAM-AGGREGATE', materialized.name)
    const keySerde = this.builder.keySerdeOr(this.parts.find((p) => p.keySerde !== undefined)?.keySerde)
    const keyId = keyIdFunction(keySerde)
    const windows = this.windows
    const retained = retainedAfterClose(name, windows, materialized.retentionMs)
    const persistent = storeTypeOf(`cogroup aggregation "${name}"`, materialized.storeType) === 'persistent'
    const cacheEntries = checkedCacheEntries(`cogroup aggregation "${name}"`, materialized.cacheEntries)
    const processorFor = (part: CogroupPart<K, VOut>, i: number): ProcessorSupplier<K, unknown, Windowed<K>, VOut> => {
      const aggregation = { initializer, aggregator: part.aggregator }
      return windows.kind === 'time' ? () => new WindowAggregateProcessor<K, unknown, VOut>(windows, aggregation, keyId, storeName, false, i) : () => new SlidingAggregateProcessor<K, unknown, VOut>(windows, aggregation, keyId, storeName, i)
    }
    const merge =
      windows.kind === 'time'
        ? addCogroupNodes(b, name, this.parts, processorFor, { name: storeName, persistent, query: timeWindowQuery<K, VOut>(keyId), build: () => new TimeWindowStore<K, VOut>(storeName, windows.sizeMs, retained, cacheEntries) })
        : addCogroupNodes(b, name, this.parts, processorFor, { name: storeName, persistent, query: slidingWindowQuery<K, VOut>(keyId), build: () => slidingStore<K, VOut>(storeName, windows.timeDifferenceMs, cacheEntries) })
    return new KTable<Windowed<K>, VOut>(b, merge, undefined, materialized.valueSerde, { graceMs: windows.graceMs, keySerde: keySerde as Serde<unknown> })
  }
}

/**
 * Cogrouped streams over session windows (Kafka Streams' `SessionWindowedCogroupedKStream`): one session
 * store shared by a session aggregation per stream, each stream's records extending or merging the key's
 * sessions with that stream's aggregator. As in Kafka Streams, each stream judges lateness by its own
 * stream time, and sessions leave the store by the largest stream time of all.
 */
export class SessionWindowedCogroupedKStream<K, VOut> {
  /** @internal */
  constructor(
    private readonly builder: StreamsBuilder,
    private readonly parts: ReadonlyArray<CogroupPart<K, VOut>>,
    private readonly windows: SessionWindows,
  ) {}

  /**
   * The aggregate per key and session, from `initializer()`; `merger` combines the aggregates of
   * sessions a record bridges. Each update is forwarded with the session's end as its timestamp, and
   * sessions merged away are retracted with a tombstone, as in a session aggregation of one stream.
   * Processors are named `<name>-cogroup-agg-<i>` and `<name>-cogroup-merge`; the sessions live in
   * the store `materialized.name`, else `COGROUPKSTREAM-AGGREGATE-STATE-STORE-<n>` (queryable as a session store).
   */
  aggregate(initializer: () => VOut, merger: (key: K, left: VOut, right: VOut) => VOut, materialized: Materialized<Windowed<K>, VOut> = {}): KTable<Windowed<K>, VOut> {
    if (typeof initializer !== 'function') throw new PunctualError('INVALID_TOPOLOGY', `cogroup aggregate: the initializer must be a function, got ${typeof initializer}`)
    if (typeof merger !== 'function') throw new PunctualError('INVALID_TOPOLOGY', `cogroup aggregate: the session merger must be a function, got ${typeof merger}`)
    const b = this.builder
    const { name, storeName } = aggregationNames(b, 'COGROUPKSTREAM-AGGREGATE', materialized.name)
    const keySerde = this.builder.keySerdeOr(this.parts.find((p) => p.keySerde !== undefined)?.keySerde)
    const keyId = keyIdFunction(keySerde)
    const windows = this.windows
    const persistent = storeTypeOf(`cogroup aggregation "${name}"`, materialized.storeType) === 'persistent'
    const cacheEntries = checkedCacheEntries(`cogroup aggregation "${name}"`, materialized.cacheEntries)
    const merge = addCogroupNodes(
      b,
      name,
      this.parts,
      (part, i) => () => new SessionAggregateProcessor<K, unknown, VOut>(windows, { initializer, aggregator: part.aggregator, merger }, keyId, storeName, i),
      { name: storeName, persistent, query: sessionQuery<K, VOut>(keyId), build: () => sessionStore<K, VOut>(storeName, cacheEntries) },
    )
    // A session closes `gap` after its end, then has its grace (as in Kafka Streams), so final results
    // wait for both.
    return new KTable<Windowed<K>, VOut>(b, merge, undefined, materialized.valueSerde, { graceMs: windows.graceMs + windows.gapMs, keySerde: keySerde as Serde<unknown>, sessions: true })
  }
}

/**
 * How long a windowed aggregation `operation` keeps a window after it closes, from its
 * `Materialized.retentionMs` (Kafka Streams' `withRetention`): the retention less size and grace. Kafka
 * Streams refuses a retention shorter than size plus grace, and so does this. Sliding and session
 * windows keep a window until it closes: a longer retention is refused there, naming the operation.
 */
function retainedAfterClose(operation: string, windows: TimeWindows | SlidingWindows | SessionWindows, retentionMs: number | undefined): number {
  if (retentionMs === undefined) return 0
  if (!Number.isSafeInteger(retentionMs) || retentionMs < 0) {
    throw new PunctualError('INVALID_TOPOLOGY', `windowed aggregation "${operation}": retentionMs must be an integer >= 0, got ${retentionMs}`)
  }
  if (windows.kind !== 'time') {
    throw new PunctualError('UNSUPPORTED', `windowed aggregation "${operation}": retentionMs applies to TimeWindows; ${windows.kind === 'session' ? 'session' : 'sliding'} windows leave the store when they close`)
  }
  const minimum = windows.sizeMs + windows.graceMs
  if (retentionMs < minimum) {
    throw new PunctualError('INVALID_TOPOLOGY', `windowed aggregation "${operation}": retentionMs ${retentionMs} is shorter than the window size plus grace (${windows.sizeMs} + ${windows.graceMs}); windows must stay until they close`)
  }
  return retentionMs - minimum
}
