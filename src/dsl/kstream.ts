import type { Serde } from '../processor/serdes.js'
import { PunctualError } from '../errors.js'
import type { ProcessorContext, ProcessorSupplier, StoreKey, StreamRecord } from '../processor/api.js'
import type { ExpiredEntry, KeyedProcessorSupplier, Timer } from '../keyed/api.js'
import type { StreamsBuilder } from './builder.js'
import { KGroupedStream } from './grouped.js'
import { namedNode, storeTypeOf } from './options.js'
import { checkedCacheEntries } from '../state/stores.js'
import type { Grouped, KeyValue, Named, Produced } from './options.js'
import { statelessProcessor, tableSourceProcessor } from './processors.js'
import type { TableMaterialization } from './processors.js'
import { KTable } from './ktable.js'
import { JoinWindows } from '../joins/join-windows.js'
import type { Joined, StreamJoined, ValueJoiner } from '../joins/join-windows.js'
import { GlobalKTable, streamGlobalJoinProcessor } from '../joins/global-table.js'
import { StreamTableJoinProcessor } from '../joins/stream-table-join.js'
import type { TableLookup } from '../joins/stream-table-join.js'
import { JoinBufferStore } from '../joins/join-buffer.js'
import { JoinWindowStore } from '../joins/join-stores.js'
import { OuterJoinStore } from '../joins/outer-join-store.js'
import { joinWindowedProcessor, StreamStreamJoinProcessor } from '../joins/stream-stream-join.js'
import type { JoinSide } from '../joins/stream-stream-join.js'
import { keyIdFunction } from '../windows/key-id.js'
import { topicArgument } from '../processor/topic.js'
import type { Topic } from '../processor/topic.js'

/** A record stream (Kafka Streams' KStream). Serdes are tracked where known; unknown ones default to JSON. */
export class KStream<K, V> {
  /** @internal */
  constructor(
    /** @internal */
    readonly builder: StreamsBuilder,
    /** @internal The node this stream's records come from. */
    readonly node: string,
    /** @internal */
    readonly keySerde: Serde<K> | undefined,
    /** @internal */
    readonly valueSerde: Serde<V> | undefined,
    /**
     * @internal Whether a key-changing operation (map, selectKey, flatMap) came before: grouping by key
     * then goes through a repartition topic, so each key's records meet in one task (as in Kafka Streams).
     */
    readonly repartitionRequired = false,
  ) {}

  /**
   * The records for which `predicate` holds (Kafka Streams' `KStream.filter`). Keys are kept, so no
   * repartition follows. Its node is named `named.name`, else `KSTREAM-FILTER-<n>`.
   */
  filter(predicate: (key: K, value: V) => boolean, named?: Named): KStream<K, V> {
    return this.addStatelessNode(namedNode('KStream.filter', named), 'KSTREAM-FILTER', (r, ctx) => predicate(r.key, r.value) && ctx.forward(r), this.keySerde, this.valueSerde)
  }

  /** The records for which `predicate` does not hold (Kafka Streams' `KStream.filterNot`). Its node is named `named.name`, else `KSTREAM-FILTER-<n>`. */
  filterNot(predicate: (key: K, value: V) => boolean, named?: Named): KStream<K, V> {
    return this.addStatelessNode(namedNode('KStream.filterNot', named), 'KSTREAM-FILTER', (r, ctx) => !predicate(r.key, r.value) && ctx.forward(r), this.keySerde, this.valueSerde)
  }

  /**
   * One record per record, with the key and value `mapper` returns and the same timestamp and headers
   * (Kafka Streams' `KStream.map`). The key may change, so grouping or joining after it goes through a
   * repartition topic; prefer `mapValues` when the key stays. Its node is named `named.name`, else `KSTREAM-MAP-<n>`.
   */
  map<K2, V2>(mapper: (key: K, value: V) => KeyValue<K2, V2>, named?: Named): KStream<K2, V2> {
    return this.addStatelessNode<K2, V2>(
      namedNode('KStream.map', named),
      'KSTREAM-MAP',
      (r, ctx) => {
        const kv = mapper(r.key, r.value)
        ctx.forward({ key: kv.key, value: kv.value, timestamp: r.timestamp, headers: r.headers })
      },
      undefined,
      undefined,
      true,
    )
  }

  /**
   * One record per record, with the value `mapper` returns (Kafka Streams' `KStream.mapValues`; the key
   * is read-only). Keeps the key serde and needs no repartition. Its node is named `named.name`, else `KSTREAM-MAPVALUES-<n>`.
   */
  mapValues<V2>(mapper: (value: V, key: K) => V2, named?: Named): KStream<K, V2> {
    return this.addStatelessNode<K, V2>(namedNode('KStream.mapValues', named), 'KSTREAM-MAPVALUES', (r, ctx) => ctx.forward({ key: r.key, value: mapper(r.value, r.key), timestamp: r.timestamp, headers: r.headers }), this.keySerde)
  }

  /**
   * The records with the key `mapper` returns (Kafka Streams' `KStream.selectKey`); grouping or joining
   * after it goes through a repartition topic. Its node is named `named.name`, else `KSTREAM-KEY-SELECT-<n>`.
   */
  selectKey<K2>(mapper: (key: K, value: V) => K2, named?: Named): KStream<K2, V> {
    return this.addStatelessNode<K2, V>(namedNode('KStream.selectKey', named), 'KSTREAM-KEY-SELECT', (r, ctx) => ctx.forward({ key: mapper(r.key, r.value), value: r.value, timestamp: r.timestamp, headers: r.headers }), undefined, this.valueSerde, true)
  }

  /**
   * Zero or more records per record, each with the key and value `mapper` yields and the input's
   * timestamp and headers (Kafka Streams' `KStream.flatMap`). The key may change, as with `map`.
   * Its node is named `named.name`, else `KSTREAM-FLATMAP-<n>`.
   */
  flatMap<K2, V2>(mapper: (key: K, value: V) => Iterable<KeyValue<K2, V2>>, named?: Named): KStream<K2, V2> {
    return this.addStatelessNode<K2, V2>(
      namedNode('KStream.flatMap', named),
      'KSTREAM-FLATMAP',
      (r, ctx) => {
        for (const kv of mapper(r.key, r.value)) ctx.forward({ key: kv.key, value: kv.value, timestamp: r.timestamp, headers: r.headers })
      },
      undefined,
      undefined,
      true,
    )
  }

  /**
   * Zero or more records per record, one per value `mapper` yields, with the input's key, timestamp and
   * headers (Kafka Streams' `KStream.flatMapValues`). Its node is named `named.name`, else `KSTREAM-FLATMAPVALUES-<n>`.
   */
  flatMapValues<V2>(mapper: (value: V, key: K) => Iterable<V2>, named?: Named): KStream<K, V2> {
    return this.addStatelessNode<K, V2>(
      namedNode('KStream.flatMapValues', named),
      'KSTREAM-FLATMAPVALUES',
      (r, ctx) => {
        for (const v of mapper(r.value, r.key)) ctx.forward({ key: r.key, value: v, timestamp: r.timestamp, headers: r.headers })
      },
      this.keySerde,
    )
  }

  /**
   * Calls `action` for each record and passes the record on unchanged (Kafka Streams' `KStream.peek`),
   * for logging or metrics; what it throws is a processing error. Its node is named `named.name`, else `KSTREAM-PEEK-<n>`.
   */
  peek(action: (key: K, value: V) => void, named?: Named): KStream<K, V> {
    return this.addStatelessNode(
      namedNode('KStream.peek', named),
      'KSTREAM-PEEK',
      (r, ctx) => {
        action(r.key, r.value)
        ctx.forward(r)
      },
      this.keySerde,
      this.valueSerde,
    )
  }

  /**
   * Runs a processor of your own on this stream (Kafka Streams' `process`): what it forwards is the new
   * stream. It may use the stores named (add each to the builder first with `addStateStore`), schedule
   * punctuations, and change keys, so grouping after it repartitions, as in Kafka Streams.
   */
  process<KOut, VOut>(supplier: ProcessorSupplier<K, V, KOut, VOut>, ...stores: string[]): KStream<KOut, VOut>
  /** As the form above, with the processor's node named by `named`. */
  process<KOut, VOut>(supplier: ProcessorSupplier<K, V, KOut, VOut>, named: Named, ...stores: string[]): KStream<KOut, VOut>
  process<KOut, VOut>(supplier: ProcessorSupplier<K, V, KOut, VOut>, ...rest: Array<Named | string>): KStream<KOut, VOut> {
    const { name, stores } = this.processArguments('process', rest)
    this.builder.graph.addProcessor(name, supplier, this.node)
    this.connect(name, stores)
    return new KStream<KOut, VOut>(this.builder, name, undefined, undefined, true)
  }

  /**
   * Runs a processor of your own that keeps each record's key (Kafka Streams' `processValues`): no
   * repartition follows it. Forwarding a record with another key than the one being processed throws,
   * naming the processor.
   */
  processValues<VOut>(supplier: ProcessorSupplier<K, V, K, VOut>, ...stores: string[]): KStream<K, VOut>
  /** As the form above, with the processor's node named by `named`. */
  processValues<VOut>(supplier: ProcessorSupplier<K, V, K, VOut>, named: Named, ...stores: string[]): KStream<K, VOut>
  processValues<VOut>(supplier: ProcessorSupplier<K, V, K, VOut>, ...rest: Array<Named | string>): KStream<K, VOut> {
    const { name, stores } = this.processArguments('processValues', rest)
    this.builder.graph.addProcessor(name, fixedKey('processValues', name, supplier), this.node)
    this.connect(name, stores)
    return new KStream<K, VOut>(this.builder, name, this.keySerde, undefined, this.repartitionRequired)
  }

  /**
   * Runs a keyed processor on this stream: while it processes a record, a timer or an expiry it has a
   * current key, with timers and keyed state (value, map, list, TTL) for that key (`Topology.addKeyedProcessor`).
   * Its records' keys must be strings, numbers, bigints or booleans. What it forwards is the new stream.
   */
  processKeyed<KOut, VOut>(supplier: KeyedProcessorSupplier<K & StoreKey, V, KOut, VOut>, ...stores: string[]): KStream<KOut, VOut>
  /** As the form above, with the processor's node named by `named`. */
  processKeyed<KOut, VOut>(supplier: KeyedProcessorSupplier<K & StoreKey, V, KOut, VOut>, named: Named, ...stores: string[]): KStream<KOut, VOut>
  processKeyed<KOut, VOut>(supplier: KeyedProcessorSupplier<K & StoreKey, V, KOut, VOut>, ...rest: Array<Named | string>): KStream<KOut, VOut> {
    const { name, stores } = this.processArguments('processKeyed', rest)
    this.builder.graph.addKeyedProcessor(name, supplier, this.node)
    this.connect(name, stores)
    return new KStream<KOut, VOut>(this.builder, name, undefined, undefined, true)
  }

  /** A keyed processor that keeps each record's key, as `processValues` does. */
  processValuesKeyed<VOut>(supplier: KeyedProcessorSupplier<K & StoreKey, V, K, VOut>, ...stores: string[]): KStream<K, VOut>
  /** As the form above, with the processor's node named by `named`. */
  processValuesKeyed<VOut>(supplier: KeyedProcessorSupplier<K & StoreKey, V, K, VOut>, named: Named, ...stores: string[]): KStream<K, VOut>
  processValuesKeyed<VOut>(supplier: KeyedProcessorSupplier<K & StoreKey, V, K, VOut>, ...rest: Array<Named | string>): KStream<K, VOut> {
    const { name, stores } = this.processArguments('processValuesKeyed', rest)
    this.builder.graph.addKeyedProcessor(name, fixedKey('processValuesKeyed', name, supplier as unknown as () => FixedKeyCallbacks<K, V, VOut>) as unknown as KeyedProcessorSupplier<StoreKey, V, K, VOut>, this.node)
    this.connect(name, stores)
    return new KStream<K, VOut>(this.builder, name, this.keySerde, undefined, this.repartitionRequired)
  }

  private processArguments(operation: string, rest: ReadonlyArray<Named | string>): { name: string; stores: string[] } {
    const [first, ...others] = rest
    const named = typeof first === 'object' && first !== null ? first : undefined
    const stores = (named === undefined ? rest : others) as unknown[]
    for (const s of stores) {
      if (typeof s !== 'string') throw new PunctualError('INVALID_TOPOLOGY', `${operation}: store names must be strings, got ${JSON.stringify(s)}`)
    }
    return { name: namedNode(`KStream.${operation}`, named) ?? this.builder.newName('KSTREAM-PROCESSOR'), stores: stores as string[] }
  }

  private connect(processor: string, stores: readonly string[]): void {
    for (const store of stores) {
      if (!this.builder.hasStateStore(store)) {
        throw new PunctualError('INVALID_TOPOLOGY', `processor "${processor}": state store "${store}" is not added to the builder (add it first with builder.addStateStore(...))`)
      }
      this.builder.graph.connectProcessorAndStateStores(store, processor)
    }
  }

  /**
   * This stream as a table (Kafka Streams' `toTable`): each record is the key's latest value, a null
   * value deletes it. Records with a null key are dropped, as in Kafka Streams.
   */
  toTable(named?: Named): KTable<K, V> {
    const name = namedNode('KStream.toTable', named) ?? this.builder.newName('KSTREAM-TOTABLE')
    const storeName = this.builder.newName('KSTREAM-TOTABLE-STATE-STORE')
    // After a key-changing operation the records go through a repartition topic first, as in Kafka Streams.
    const from = this.repartitionRequired ? this.throughRepartitionTopic(name, undefined, undefined) : this
    const materialization: TableMaterialization<K> = { storeName: undefined, keyId: undefined }
    this.builder.graph.addProcessor(name, () => tableSourceProcessor<K, V>(materialization), from.node)
    return new KTable<K, V>(this.builder, name, from.keySerde, from.valueSerde, undefined, materialization, storeName)
  }

  /**
   * Joins this stream with another by key within a time window (Kafka Streams' windowed inner join): a
   * record joins each record of the other stream with the same key whose timestamp is within the
   * window, the result stamped with the later timestamp. Both streams must be partitioned alike (a
   * stream whose key changed is repartitioned first). Timing: SEMANTICS 8, docs/joins.md.
   */
  join<VO, VR>(other: KStream<K, VO>, joiner: ValueJoiner<V, VO, VR, K>, windows: JoinWindows, streamJoined?: StreamJoined<K, V, VO>): KStream<K, VR>
  /**
   * Joins each record of this stream with the table's latest value of its key when the record arrives
   * (Kafka Streams' stream-table join); a record whose key the table does not hold is dropped. The
   * result has the stream record's timestamp; table updates emit nothing. The table must be partitioned
   * like the stream and not be windowed.
   */
  join<VT, VR>(table: KTable<K, VT>, joiner: ValueJoiner<V, VT, VR, K>, joined?: Joined<K, V>): KStream<K, VR>
  /**
   * Joins each record with a global table's current value for the key `keySelector` picks from it
   * (Kafka Streams' stream-GlobalKTable join): no co-partitioning, no repartition, the table read as it
   * stands when the record is processed. A record whose picked key the table lacks is dropped.
   */
  join<GK, GV, VR>(table: GlobalKTable<GK, GV>, keySelector: (key: K, value: V) => GK, joiner: ValueJoiner<V, GV, VR, K>, named?: Named): KStream<K, VR>
  join<VO, VR>(
    other: KStream<K, VO> | KTable<K, VO> | GlobalKTable<unknown, VO>,
    joiner: ValueJoiner<V, VO, VR, K> | ((key: K, value: V) => unknown),
    windows?: JoinWindows | Joined<K, V> | ValueJoiner<V, VO, VR, K>,
    streamJoined?: StreamJoined<K, V, VO> | Named,
  ): KStream<K, VR> {
    if (other instanceof GlobalKTable) return this.globalJoin(other, joiner as (key: K, value: V) => unknown, windows as ValueJoiner<V, VO | null, VR, K>, streamJoined as Named | undefined, false)
    if (other instanceof KTable) return this.tableJoin(other, joiner as ValueJoiner<V, VO | null, VR, K>, (windows ?? {}) as Joined<K, V>, false)
    return this.windowedJoin(other, joiner as ValueJoiner<V | null, VO | null, VR, K>, windows as JoinWindows, (streamJoined ?? {}) as StreamJoined<K, V, VO>, false, false)
  }

  /**
   * A windowed left join: as `join`, and a record of this stream that finds no partner is emitted with
   * null once the window and grace period are over (at once if it arrives that late).
   */
  leftJoin<VO, VR>(other: KStream<K, VO>, joiner: ValueJoiner<V, VO | null, VR, K>, windows: JoinWindows, streamJoined?: StreamJoined<K, V, VO>): KStream<K, VR>
  /** A stream-table left join: as the stream-table `join`, and a record whose key the table does not hold joins null. */
  leftJoin<VT, VR>(table: KTable<K, VT>, joiner: ValueJoiner<V, VT | null, VR, K>, joined?: Joined<K, V>): KStream<K, VR>
  /** A stream-global table left join: as the global `join`, and a record whose picked key the table lacks (or is null) joins null. */
  leftJoin<GK, GV, VR>(table: GlobalKTable<GK, GV>, keySelector: (key: K, value: V) => GK | null, joiner: ValueJoiner<V, GV | null, VR, K>, named?: Named): KStream<K, VR>
  leftJoin<VO, VR>(
    other: KStream<K, VO> | KTable<K, VO> | GlobalKTable<unknown, VO>,
    joiner: ValueJoiner<V, VO | null, VR, K> | ((key: K, value: V) => unknown),
    windows?: JoinWindows | Joined<K, V> | ValueJoiner<V, VO | null, VR, K>,
    streamJoined?: StreamJoined<K, V, VO> | Named,
  ): KStream<K, VR> {
    if (other instanceof GlobalKTable) return this.globalJoin(other, joiner as (key: K, value: V) => unknown, windows as ValueJoiner<V, VO | null, VR, K>, streamJoined as Named | undefined, true)
    if (other instanceof KTable) return this.tableJoin(other, joiner as ValueJoiner<V, VO | null, VR, K>, (windows ?? {}) as Joined<K, V>, true)
    return this.windowedJoin(other, joiner as ValueJoiner<V | null, VO | null, VR, K>, windows as JoinWindows, (streamJoined ?? {}) as StreamJoined<K, V, VO>, true, false)
  }

  /** A windowed outer join: as `leftJoin`, for records of either stream. */
  outerJoin<VO, VR>(other: KStream<K, VO>, joiner: ValueJoiner<V | null, VO | null, VR, K>, windows: JoinWindows, streamJoined: StreamJoined<K, V, VO> = {}): KStream<K, VR> {
    return this.windowedJoin(other, joiner, windows, streamJoined, true, true)
  }

  /** Adds a stream-global table join's processor, reading the global store (Kafka Streams' KSTREAM-JOIN / KSTREAM-LEFTJOIN). */
  private globalJoin<GK, GV, VR>(table: GlobalKTable<GK, GV>, keySelector: (key: K, value: V) => unknown, joiner: ValueJoiner<V, GV | null, VR, K>, named: Named | undefined, left: boolean): KStream<K, VR> {
    const operation = left ? 'leftJoin' : 'join'
    if (typeof keySelector !== 'function') throw new PunctualError('INVALID_TOPOLOGY', `${operation}: the key selector of a global table join must be a function, got ${typeof keySelector}`)
    if (typeof joiner !== 'function') throw new PunctualError('INVALID_TOPOLOGY', `${operation}: the joiner must be a function, got ${typeof joiner}`)
    // The table holds every key: no repartition, whatever this stream's keys are.
    const name = namedNode(`KStream.${operation}`, named) ?? this.builder.newName(left ? 'KSTREAM-LEFTJOIN' : 'KSTREAM-JOIN')
    this.builder.graph.addProcessor(name, streamGlobalJoinProcessor<K, V, GK, GV, VR>(table, keySelector as (key: K, value: V) => GK, joiner, left), this.node)
    this.builder.graph.connectProcessorAndStateStores(table.storeName, name)
    return new KStream<K, VR>(this.builder, name, this.keySerde, undefined, this.repartitionRequired)
  }

  /** Adds a stream-table join's processor, reading the table's store (Kafka Streams' KSTREAM-JOIN / KSTREAM-LEFTJOIN). */
  private tableJoin<VT, VR>(table: KTable<K, VT>, joiner: ValueJoiner<V, VT | null, VR, K>, joined: Joined<K, V>, left: boolean): KStream<K, VR> {
    const operation = left ? 'leftJoin' : 'join'
    if (typeof joiner !== 'function') throw new PunctualError('INVALID_TOPOLOGY', `${operation}: the joiner must be a function, got ${typeof joiner}`)
    const keySerde = joined.keySerde ?? this.keySerde ?? table.keySerdeOrUndefined
    // Kafka Streams names this repartition topic after the join (not `-left`, as a stream-stream join's), else after this stream's node.
    const stream = this.repartitionRequired ? this.throughRepartitionTopic(joined.name ?? this.node, keySerde, joined.valueSerde) : this
    const { storeName, keyId, historyRetentionMs } = table.valueStore(operation)
    const grace = joined.gracePeriodMs
    if (grace !== undefined) {
      if (!Number.isSafeInteger(grace) || grace < 0) throw new PunctualError('INVALID_CONFIG', `${operation}: gracePeriodMs must be an integer >= 0, got ${JSON.stringify(grace)}`)
      if (historyRetentionMs === undefined) throw new PunctualError('INVALID_TOPOLOGY', `${operation}: a grace period needs a versioned table (builder.table(topic, consumed, Materialized.as(Stores.persistentVersionedKeyValueStore(name, historyRetentionMs))))`)
      if (historyRetentionMs < grace) {
        throw new PunctualError('INVALID_TOPOLOGY', `${operation}: the grace period (${grace} ms) must not exceed the table's history retention (${historyRetentionMs} ms): late table updates would be gone before the records waiting for them`)
      }
    }
    const name = joined.name ?? this.builder.newName(left ? 'KSTREAM-LEFTJOIN' : 'KSTREAM-JOIN')
    const bufferStore = grace === undefined ? undefined : `${name}-buffer`
    const lookup: TableLookup = { storeName, versioned: historyRetentionMs !== undefined, ...(grace === undefined || bufferStore === undefined ? {} : { grace: { ms: grace, bufferStore } }) }
    this.builder.graph.addProcessor(name, () => new StreamTableJoinProcessor<K, V, VT, VR>(lookup, keyId, joiner, left), stream.node)
    this.builder.graph.connectProcessorAndStateStores(storeName, name)
    if (bufferStore !== undefined) this.builder.graph.addStateStore({ name: bufferStore, persistent: true, build: () => new JoinBufferStore<K, V>(bufferStore) }, name)
    return new KStream<K, VR>(this.builder, name, stream.keySerde, undefined)
  }

  /** Adds a stream-stream join's nodes and stores, named as Kafka Streams names them. */
  private windowedJoin<VO, VR>(
    other: KStream<K, VO>,
    joiner: ValueJoiner<V | null, VO | null, VR, K>,
    windows: JoinWindows,
    streamJoined: StreamJoined<K, V, VO>,
    leftOuter: boolean,
    rightOuter: boolean,
  ): KStream<K, VR> {
    const operation = rightOuter ? 'outerJoin' : leftOuter ? 'leftJoin' : 'join'
    if (!(other instanceof KStream)) throw new PunctualError('INVALID_TOPOLOGY', `${operation}: the other stream must be a KStream`)
    if (typeof joiner !== 'function') throw new PunctualError('INVALID_TOPOLOGY', `${operation}: the joiner must be a function, got ${typeof joiner}`)
    if (!(windows instanceof JoinWindows)) throw new PunctualError('INVALID_TOPOLOGY', `${operation}: the windows must be JoinWindows (JoinWindows.ofTimeDifferenceAndGrace(...))`)
    const b = this.builder
    const name = streamJoined.name
    const keySerde = streamJoined.keySerde ?? this.keySerde ?? other.keySerde
    const left = this.repartitionRequired ? this.throughRepartitionTopic(name === undefined ? this.node : `${name}-left`, keySerde, streamJoined.valueSerde) : this
    const right = other.repartitionRequired ? other.throughRepartitionTopic(name === undefined ? other.node : `${name}-right`, keySerde, streamJoined.otherValueSerde) : other
    const thisWindowed = name === undefined ? b.newName('KSTREAM-WINDOWED') : `${name}-this-windowed`
    const otherWindowed = name === undefined ? b.newName('KSTREAM-WINDOWED') : `${name}-other-windowed`
    const thisGenerated = b.newName(rightOuter ? 'KSTREAM-OUTERTHIS' : 'KSTREAM-JOINTHIS')
    const otherGenerated = b.newName(leftOuter ? 'KSTREAM-OUTEROTHER' : 'KSTREAM-JOINOTHER')
    const thisSuffix = rightOuter ? '-outer-this-join' : '-this-join'
    const otherSuffix = leftOuter ? '-outer-other-join' : '-other-join'
    const thisJoin = name === undefined ? thisGenerated : name + thisSuffix
    const otherJoin = name === undefined ? otherGenerated : name + otherSuffix
    const merge = name === undefined ? b.newName('KSTREAM-MERGE') : `${name}-merge`
    const base = streamJoined.storeName
    const thisStore = `${base === undefined ? thisGenerated : base + thisSuffix}-store`
    const otherStore = `${base === undefined ? otherGenerated : base + otherSuffix}-store`
    const sharedSuffix = rightOuter ? '-outer-shared-join' : '-left-shared-join'
    const outerStore = leftOuter ? `${base === undefined ? `KSTREAM-OUTERSHARED-${thisGenerated.slice(thisGenerated.lastIndexOf('-') + 1)}` : base + sharedSuffix}-store` : undefined
    // One key id function for both sides, so equal keys meet whatever serde each side carries.
    const keyId = keyIdFunction(b.keySerdeOr(left.keySerde ?? (right.keySerde as Serde<K> | undefined)))
    const retention = windows.retentionMs()
    const joinName = name ?? streamJoined.storeName
    const where = joinName === undefined ? operation : `${operation} "${joinName}"`
    const persistent = storeTypeOf(where, streamJoined.storeType) === 'persistent'
    const cacheEntries = checkedCacheEntries(where, streamJoined.cacheEntries)
    const thisSide: JoinSide<K, V, VO, VR> = { left: true, outer: leftOuter, windows, otherStore, outerStore, joiner, keyId }
    const otherSide: JoinSide<K, VO, V, VR> = { left: false, outer: rightOuter, windows, otherStore: thisStore, outerStore, joiner: (r, l, k) => joiner(l, r, k), keyId }
    const g = b.graph
    g.addProcessor(thisWindowed, joinWindowedProcessor<K, V>(thisStore, keyId), left.node)
    g.addProcessor(otherWindowed, joinWindowedProcessor<K, VO>(otherStore, keyId), right.node)
    g.addProcessor(thisJoin, () => new StreamStreamJoinProcessor(thisSide), thisWindowed)
    g.addProcessor(otherJoin, () => new StreamStreamJoinProcessor(otherSide), otherWindowed)
    g.addProcessor(merge, statelessProcessor<K, VR, K, VR>((r, ctx) => ctx.forward(r)), thisJoin, otherJoin)
    g.addStateStore({ name: thisStore, persistent, build: () => new JoinWindowStore<K, V>(thisStore, retention, cacheEntries) }, thisWindowed, otherJoin)
    g.addStateStore({ name: otherStore, persistent, build: () => new JoinWindowStore<K, VO>(otherStore, retention, cacheEntries) }, otherWindowed, thisJoin)
    if (outerStore !== undefined) g.addStateStore({ name: outerStore, persistent, build: () => new OuterJoinStore<K>(outerStore, cacheEntries) }, thisJoin, otherJoin)
    return new KStream<K, VR>(b, merge, left.keySerde, undefined)
  }

  /** Both streams' records, as they arrive (Kafka Streams' `KStream.merge`). Its node is named `named.name`, else `KSTREAM-MERGE-<n>`. */
  merge(other: KStream<K, V>, named?: Named): KStream<K, V> {
    const node = namedNode('KStream.merge', named) ?? this.builder.newName('KSTREAM-MERGE')
    this.builder.graph.addProcessor(node, statelessProcessor<K, V, K, V>((r, ctx) => ctx.forward(r)), this.node, other.node)
    return new KStream(this.builder, node, this.keySerde, this.valueSerde, this.repartitionRequired || other.repartitionRequired)
  }

  /**
   * Splits by predicates (Kafka Streams' `KStream.split`): each record goes to the first branch whose
   * predicate holds, else to the default branch (if any). Returns the branches by name, each prefixed
   * with `named.name` (Kafka Streams' `split(Named.as(prefix))`), else unprefixed.
   */
  split(named?: Named): BranchedKStream<K, V> {
    return new BranchedKStream(this, namedNode('KStream.split', named) ?? '')
  }

  /**
   * Groups by the current key. After a key-changing operation (map, selectKey, flatMap) each aggregation
   * reads the records through a repartition topic, named as Kafka Streams names it: after the grouping
   * (`<grouped.name>-repartition`, one topic for every aggregation of this grouped stream), else after
   * the aggregation's store (`<store>-repartition`, one per aggregation).
   */
  groupByKey(grouped: Grouped<K, V> = {}): KGroupedStream<K, V> {
    if (!this.repartitionRequired) return new KGroupedStream(this.builder, this.node, grouped.keySerde ?? this.keySerde, grouped.valueSerde ?? this.valueSerde)
    return this.groupedThroughRepartition(this, grouped)
  }

  /**
   * Groups by a new key (the key-selecting node is named `grouped.name`, else `KSTREAM-KEY-SELECT-<n>`).
   * Each aggregation reads the records through a repartition topic, so every record of a new key reaches
   * the same task, named as for `groupByKey` after a key change: `<grouped.name>-repartition`, else
   * `<store>-repartition`.
   */
  groupBy<K2>(selector: (key: K, value: V) => K2, grouped: Grouped<K2, V> = {}): KGroupedStream<K2, V> {
    const selected = this.selectKey(selector, { name: grouped.name ?? this.builder.newName('KSTREAM-KEY-SELECT') })
    return selected.groupedThroughRepartition(selected, grouped)
  }

  /** A grouped stream whose aggregations read `stream` through a repartition topic (with the grouping's serdes, else the stream's). */
  private groupedThroughRepartition(stream: KStream<K, V>, grouped: Grouped<K, V>): KGroupedStream<K, V> {
    const keySerde = this.builder.keySerdeOr(grouped.keySerde ?? stream.keySerde)
    const valueSerde = this.builder.valueSerdeOr(grouped.valueSerde ?? stream.valueSerde)
    return new KGroupedStream(this.builder, stream.node, keySerde, valueSerde, { stream, name: grouped.name })
  }

  /** @internal This stream written to `<name>-repartition` (partitioned by key) and read back: each key in one task. */
  throughRepartitionTopic(name: string, keySerde: Serde<K> | undefined, valueSerde: Serde<V> | undefined): KStream<K, V> {
    const ks = this.builder.keySerdeOr(keySerde ?? this.keySerde)
    const vs = this.builder.valueSerdeOr(valueSerde ?? this.valueSerde)
    const topic = `${name}-repartition`
    this.builder.graph.markInternalTopic(topic)
    this.builder.graph.addSink(this.builder.newName('KSTREAM-SINK'), topic, { keySerde: ks, valueSerde: vs }, this.node)
    const source = this.builder.newName('KSTREAM-SOURCE')
    this.builder.graph.addSource(source, topic, { keySerde: ks, valueSerde: vs })
    return new KStream<K, V>(this.builder, source, ks, vs)
  }

  /**
   * Writes the stream to `topic` (Kafka Streams' `KStream.to`) through a sink node: a `Topic`,
   * whose types must be the stream's and whose serdes it writes with, or a name. Serdes: `produced`'s,
   * else the stream's where known, else JSON; partitions: `produced.partitioner`, else murmur2 of the
   * serialized key. The topic must exist on Kafka (the embedded runtime creates it).
   * Its sink node is named `produced.name`, else `KSTREAM-SINK-<n>`.
   */
  to<KT, VT>(topic: Topic<KT, VT> & TopicTakes<K, V, KT, VT>, produced?: Produced<K, V>): void
  /** Writes the records to topic `topic`, by name, with `produced`'s serdes, else the stream's, else JSON. */
  to(topic: string, produced?: Produced<K, V>): void
  to(topic: string | Topic<K, V>, produced: Produced<K, V> = {}): void {
    const given = topicArgument('KStream.to', topic, produced.keySerde, produced.valueSerde)
    this.builder.graph.addSink(
      produced.name ?? this.builder.newName('KSTREAM-SINK'),
      given.name,
      {
        keySerde: this.builder.keySerdeOr(given.keySerde ?? this.keySerde),
        valueSerde: this.builder.valueSerdeOr(given.valueSerde ?? this.valueSerde),
        ...(produced.partitioner === undefined ? {} : { partitioner: produced.partitioner }),
      },
      this.node,
    )
  }

  /** @internal Adds a stateless processor after this stream's node, named `name` or PREFIX-n. */
  addStatelessNode<K2, V2>(
    name: string | undefined,
    prefix: string,
    step: (record: StreamRecord<K, V>, ctx: ProcessorContext<K2, V2>) => unknown,
    keySerde?: Serde<K2>,
    valueSerde?: Serde<V2>,
    changesKey = false,
  ): KStream<K2, V2> {
    const node = name ?? this.builder.newName(prefix)
    this.builder.graph.addProcessor(node, statelessProcessor<K, V, K2, V2>((r, ctx) => void step(r, ctx)), this.node)
    return new KStream<K2, V2>(this.builder, node, keySerde, valueSerde, this.repartitionRequired || changesKey)
  }
}

/**
 * The branches of `KStream.split` (Kafka Streams' `BranchedKStream`): each record goes to the first
 * branch whose predicate holds, else to the default branch if there is one.
 */
export class BranchedKStream<K, V> {
  private readonly predicates: Array<{ name: string; predicate: (key: K, value: V) => boolean }> = []

  /** @internal Made by `KStream.split`. */
  constructor(
    private readonly stream: KStream<K, V>,
    private readonly prefix: string,
  ) {}

  /**
   * Adds a branch: the records for which `predicate` holds and no earlier branch's did (Kafka Streams'
   * `BranchedKStream.branch`). Its stream is named `<prefix><named.name>`, by default `<prefix><n>`
   * counting branches from 1.
   */
  branch(predicate: (key: K, value: V) => boolean, named?: Named): this {
    const name = namedNode('BranchedKStream.branch', named)
    this.predicates.push({ name: this.prefix + (name ?? String(this.predicates.length + 1)), predicate })
    return this
  }

  /**
   * Ends the split; records matching no predicate go to the default branch, named
   * `<prefix><named.name>`, by default `<prefix>0`.
   */
  defaultBranch(named?: Named): Record<string, KStream<K, V>> {
    return this.build(this.prefix + (namedNode('BranchedKStream.defaultBranch', named) ?? '0'))
  }

  /** Ends the split; records matching no predicate are dropped. Returns the branches by name. */
  noDefaultBranch(): Record<string, KStream<K, V>> {
    return this.build(undefined)
  }

  private build(defaultName: string | undefined): Record<string, KStream<K, V>> {
    const b = this.stream.builder
    const splitter = b.newName('KSTREAM-BRANCH')
    const branches = [...this.predicates]
    b.graph.addProcessor(
      splitter,
      statelessProcessor<K, V, K, V>((r, ctx) => {
        for (const br of branches) {
          if (br.predicate(r.key, r.value)) {
            ctx.forward(r, br.name)
            return
          }
        }
        if (defaultName !== undefined) ctx.forward(r, defaultName)
      }),
      this.stream.node,
    )
    const out: Record<string, KStream<K, V>> = {}
    for (const name of [...branches.map((br) => br.name), ...(defaultName === undefined ? [] : [defaultName])]) {
      b.graph.addProcessor(name, statelessProcessor<K, V, K, V>((r, ctx) => ctx.forward(r)), splitter)
      out[name] = new KStream(b, name, this.stream.keySerde, this.stream.valueSerde, this.stream.repartitionRequired)
    }
    return out
  }
}

/**
 * A processor of `processValues` or `processValuesKeyed`: what it forwards while handling a record, a
 * timer or an expiry must keep that key (the same value, ===), as Kafka Streams' fixed-key records
 * guarantee by type. Checked per forward; the check costs a comparison. Every callback of the user's
 * processor is passed on: one left out would run nothing and say nothing.
 */
function fixedKey<K, V, VOut>(operation: string, name: string, supplier: () => FixedKeyCallbacks<K, V, VOut>): () => FixedKeyCallbacks<K, V, VOut> {
  return () => {
    const inner = supplier()
    let handling = false
    let key: K
    const wrapped: FixedKeyCallbacks<K, V, VOut> = {
      init(context) {
        const checked = Object.create(context) as ProcessorContext<K, VOut>
        checked.forward = (record, childName) => {
          if (handling && record.key !== key) {
            throw new PunctualError('PROCESSING', `${operation} processor "${name}" forwarded key ${JSON.stringify(record.key)} while processing key ${JSON.stringify(key)}: it must keep the key (use ${operation === 'processValues' ? 'process' : 'processKeyed'}() to change it)`)
          }
          context.forward(record, childName)
        }
        inner.init?.(checked)
      },
      process(record) {
        key = record.key
        handling = true
        try {
          inner.process(record)
        } finally {
          handling = false
        }
      },
      close() {
        inner.close?.()
      },
    }
    // Defined only when the user's processor has them: a keyed node skips a callback that is absent.
    const onTimer = inner.onTimer
    if (onTimer !== undefined) {
      wrapped.onTimer = (timer) => {
        key = timer.key
        handling = true
        try {
          onTimer.call(inner, timer)
        } finally {
          handling = false
        }
      }
    }
    const onExpire = inner.onExpire
    if (onExpire !== undefined) {
      wrapped.onExpire = (entry) => {
        key = entry.key
        handling = true
        try {
          onExpire.call(inner, entry)
        } finally {
          handling = false
        }
      }
    }
    return wrapped
  }
}

/** The callbacks of a plain or keyed processor, as `fixedKey` passes them on. */
interface FixedKeyCallbacks<K, V, VOut> {
  init?(context: ProcessorContext<K, VOut>): void
  process(record: StreamRecord<K, V>): void
  onTimer?(timer: Timer<K>): void
  onExpire?(entry: ExpiredEntry<K>): void
  close?(): void
}

/**
 * What `KStream.to(topic)` asks of a typed topic: its key and value types take the stream's (a stream of
 * `'big' | 'small'` is written to a topic of strings; null, a tombstone, to any topic). Otherwise a type whose one property names the
 * mismatch, which the compiler then shows.
 */
export type TopicTakes<K, V, KT, VT> = [K] extends [KT | null]
  ? [V] extends [VT | null]
    ? unknown
    : { readonly "the topic's value type does not take the stream's values": VT }
  : { readonly "the topic's key type does not take the stream's keys": KT }
