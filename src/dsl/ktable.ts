import { invalidConfig } from '../errors.js'
import type { Processor, ProcessorContext } from '../processor/api.js'
import type { Serde } from '../processor/serdes.js'
import { SuppressionStore } from '../suppress/buffer.js'
import { SuppressProcessor, spillsToDisk } from '../suppress/suppress-processor.js'
import type { Suppressed, TimeLimitSuppressed } from '../suppress/config.js'
import { keyIdFunction, sessionKeyId, stampedKeyId, windowedKeyId } from '../windows/key-id.js'
import type { Windowed } from '../windows/windows.js'
import type { StreamsBuilder } from './builder.js'
import { KStream } from './kstream.js'
import { statelessProcessor } from './processors.js'
import { heldBeforeUpdate, tableSourceProcessor, valueBeforeUpdate } from './processors.js'
import { tableSelectProcessor } from './table-grouping.js'
import { KGroupedTable } from './grouped-table.js'
import { namedNode } from './options.js'
import type { Grouped, KeyValue, Named, TableJoined } from './options.js'
import type { TableMaterialization } from './processors.js'
import type { TableEntry } from '../joins/stream-table-join.js'
import { TableTableJoinProcessor } from '../joins/table-table-join.js'
import type { TableGetter, TableJoinMode } from '../joins/table-table-join.js'
import type { ValueJoiner } from '../joins/join-windows.js'
import type { KeyValueStore, ProcessorContext as Context, VersionedKeyValueStore } from '../processor/api.js'
import { PunctualError } from '../errors.js'
import { Stores } from '../state/stores.js'
import type { StoreBuilder } from '../state/stores.js'
import { keyIdQuery, versionedKeyIdQuery } from './queryable.js'
import { SubscriptionStore } from '../joins/subscription-store.js'
import {
  foreignTableJoinProcessor,
  responseJoinProcessor,
  subscriptionJoinProcessor,
  subscriptionReceiveProcessor,
  subscriptionResponseSerde,
  subscriptionSendProcessor,
  subscriptionSerde,
} from '../joins/foreign-key-join.js'
import type { Subscription, SubscriptionResponse } from '../joins/foreign-key-join.js'

/** What a windowed table knows of its windows: the grace period, the key serde, whether they are sessions. */
export interface WindowedTableInfo {
  readonly graceMs: number
  readonly keySerde: Serde<unknown>
  /** Session keys are identified by key, end and start (a session grows: same start, new end). */
  readonly sessions?: boolean
  /** Set by a time-windowed aggregation: how a suppression right below it can take over its emission. */
  readonly finalResults?: FinalResultsHook
}

/**
 * A time-windowed aggregation's switch to forward final results only (`WindowAggregateProcessor`'s
 * finalResultsOnly), read when its processors are made. `suppress(untilWindowCloses(unbounded()))` on
 * that aggregation's own table sets `enabled`, true while the suppression is the aggregation's only
 * reader; the suppression then passes records through. The output is the same either way; the
 * suppression's buffer would hold exactly the windows the aggregation's store holds.
 */
export interface FinalResultsHook {
  /** The aggregation's node: the hook applies to its own table only (not to one derived from it). */
  readonly node: string
  enabled: () => boolean
}

/** Per-entry overhead the default suppression sizer adds to key and value bytes (timestamp, offsets, headers). */
const ENTRY_OVERHEAD = 24

/**
 * A suppression whose aggregation forwards final results itself: passes records through. A buffer
 * restored from a run that used it holds windows the aggregation's store holds too; it is emptied (the
 * next commit deletes the entries) rather than carried along.
 */
function passThroughSuppression<K, V>(storeName: string): Processor<K, V | null, K, V | null> {
  let ctx: ProcessorContext<K, V | null>
  return {
    init(c) {
      ctx = c
      c.getStateStore<SuppressionStore<K, V>>(storeName).buffer.evictWhile(
        () => true,
        () => {},
      )
    },
    process(record) {
      ctx.forward(record)
    },
  }
}

/** A changelog stream: the latest value per key; null is a tombstone (Kafka Streams' KTable). */
export class KTable<K, V> {
  /** @internal */
  constructor(
    private readonly builder: StreamsBuilder,
    /** @internal */
    readonly node: string,
    private readonly keySerde: Serde<K> | undefined,
    private readonly valueSerde: Serde<V> | undefined,
    /** @internal Set for windowed tables. */
    readonly windowed: WindowedTableInfo | undefined,
    /** @internal Set for tables whose node can keep their latest values (from a topic, `toTable`). */
    private readonly materialization?: TableMaterialization<K>,
    private readonly storeName?: string,
    /** A filter made this table (or the table it was mapped from). */
    private readonly filtered = false,
  ) {}

  /** A derived table's materialization, added below its node the first time something reads it by key. */
  private derivedMaterialization: TableMaterialization<K> | undefined
  private materializedNode: string | undefined

  /**
   * @internal The node whose updates a reader of this table by key attaches to: the table's own, or for
   * a derived table the node that keeps its values (so the store holds an update before it is passed on).
   */
  get readNode(): string {
    return this.materializedNode ?? this.node
  }

  /**
   * @internal The store of this table's latest values by key id, added the first time something reads
   * the table by key (a join, groupBy): in the node of a table from a topic or `toTable`, or for a derived
   * table in a node added below it. A windowed table is refused, naming the operation.
   */
  valueStore(
    operation: string,
    tell: 'heldBefore' | 'oldValue' | undefined = undefined,
    /** The reader needs old values (see TableMaterialization.sendsOldValues). */
    sendsOldValues = false,
  ): { storeName: string; keyId: (key: K) => string; historyRetentionMs: number | undefined } {
    let m = this.materialization ?? this.derivedMaterialization
    if (m === undefined) {
      if (this.windowed !== undefined) {
        const what = operation === 'groupBy' ? 'grouped' : 'read by key'
        throw new PunctualError('INVALID_TOPOLOGY', `${operation}: windowed table "${this.node}" cannot be ${what}; turn it into a stream first (toStream())`)
      }
      // A table derived by filter, mapValues, a join or an aggregation keeps its values below its node
      // (Kafka Streams reads them through value getters; a store gives the same values and timestamps).
      const derived: TableMaterialization<K> = { storeName: undefined, keyId: undefined }
      const node = `${this.node}-MATERIALIZED`
      // A filter whose readers need old values (a foreign-key join, groupBy) does not pass on a key
      // filtered out before and after (Kafka Streams' KTableFilter once old values are sent); without
      // such a reader, it does.
      const filtered = this.filtered
      this.builder.graph.addProcessor(node, () => tableSourceProcessor<K, V>(derived, filtered && derived.sendsOldValues === true), this.node)
      this.derivedMaterialization = m = derived
      this.materializedNode = node
    }
    if (tell === 'heldBefore') m.tellsHeldBefore = true
    if (tell === 'oldValue') m.tellsOldValue = true
    if (sendsOldValues) m.sendsOldValues = true
    if (m.storeName === undefined || m.keyId === undefined) {
      const storeName = this.storeName ?? `${this.node}-STATE-STORE`
      const keySerde = this.builder.keySerdeOr(this.keySerde)
      const keyId = keyIdFunction(keySerde)
      m.keyId = keyId
      const builder: StoreBuilder =
        m.historyRetentionMs === undefined
          ? { ...Stores.persistentKeyValueStore<string, TableEntry<V>>(storeName), query: keyIdQuery(keyId, keySerde, (entry: TableEntry<V>) => entry.v) }
          : { ...Stores.persistentVersionedKeyValueStore<string, V>(storeName, m.historyRetentionMs), query: versionedKeyIdQuery<K, V>(keyId) }
      this.builder.graph.addStateStore(builder, this.readNode)
      m.storeName = storeName
    }
    return { storeName: m.storeName, keyId: m.keyId, historyRetentionMs: m.historyRetentionMs }
  }

  /** @internal The table's key serde, if known. */
  get keySerdeOrUndefined(): Serde<K> | undefined {
    return this.keySerde
  }

  /** @internal The table's value serde, if known. */
  get valueSerdeOrUndefined(): Serde<V> | undefined {
    return this.valueSerde
  }

  /** Keys whose value fails the predicate become tombstones (Kafka Streams' `KTable.filter`). Its node is named `named.name`, else `KTABLE-FILTER-<n>`. */
  filter(predicate: (key: K, value: V) => boolean, named?: Named): KTable<K, V> {
    return this.addStatelessNode(namedNode('KTable.filter', named), 'KTABLE-FILTER', (k, v) => (v !== null && predicate(k, v) ? v : null), this.valueSerde, true)
  }

  /** Keys whose value passes the predicate become tombstones (Kafka Streams' `KTable.filterNot`). Its node is named `named.name`, else `KTABLE-FILTER-<n>`. */
  filterNot(predicate: (key: K, value: V) => boolean, named?: Named): KTable<K, V> {
    return this.addStatelessNode(namedNode('KTable.filterNot', named), 'KTABLE-FILTER', (k, v) => (v !== null && !predicate(k, v) ? v : null), this.valueSerde, true)
  }

  /**
   * A table of the values `mapper` returns, key by key (Kafka Streams' `KTable.mapValues`); a tombstone
   * stays one, without calling `mapper`. Its node is named `named.name`, else `KTABLE-MAPVALUES-<n>`.
   */
  mapValues<V2>(mapper: (value: V, key: K) => V2, named?: Named): KTable<K, V2> {
    return this.addStatelessNode<V2>(namedNode('KTable.mapValues', named), 'KTABLE-MAPVALUES', (k, v) => (v === null ? null : mapper(v, k)), undefined, this.filtered)
  }

  /**
   * Joins this table with another by a foreign key (KIP-213, Kafka Streams' foreign-key join): each
   * value of this table names a key of the other (`foreignKeyExtractor`, null: none), and the result,
   * keyed by this table's key, is `joiner(value, otherValue)` for the other table's current value of
   * that key. An update of either side updates the results it touches (an update of the other table
   * every key of this one that names it); a key whose value is deleted, names no key, or names one the
   * other table lacks gets a tombstone once it had a result. The updates go through two internal topics
   * (subscriptions to the other table's partitions, answers back), so the tables need not be
   * co-partitioned. Neither may be windowed.
   */
  join<KO, VO, VR>(other: KTable<KO, VO>, foreignKeyExtractor: (value: V, key: K) => KO | null | undefined, joiner: ValueJoiner<V, VO, VR, K>, tableJoined?: TableJoined): KTable<K, VR>
  /**
   * Joins this table with another by key (Kafka Streams' table-table join): an update of either table
   * emits the joined value of the key's current values, at the later of their timestamps; an update or
   * a deletion while the other table does not hold the key emits nothing, and deleting a key the other
   * holds emits a tombstone. Both tables must be co-partitioned and not windowed. SEMANTICS 8.
   */
  join<VO, VR>(other: KTable<K, VO>, joiner: ValueJoiner<V, VO, VR, K>, named?: Named): KTable<K, VR>
  join(other: object, a: unknown, b?: unknown, c?: TableJoined): KTable<K, unknown> {
    if (isForeignKeyJoin(b)) return this.foreignKeyJoin(other as KTable<unknown, unknown>, a as (value: V, key: K) => unknown, b as ValueJoiner<V | null, unknown, unknown, K>, 'join', c)
    return this.tableJoin(other as KTable<K, unknown>, a as ValueJoiner<V | null, unknown, unknown, K>, 'join', ['inner', 'inner'], b as Named | undefined)
  }

  /** As the foreign-key `join`, and a value that names no key, or one the other table lacks, joins null. */
  leftJoin<KO, VO, VR>(other: KTable<KO, VO>, foreignKeyExtractor: (value: V, key: K) => KO | null | undefined, joiner: ValueJoiner<V, VO | null, VR, K>, tableJoined?: TableJoined): KTable<K, VR>
  /** As `join`, and a key this table holds joins null while the other does not hold it. */
  leftJoin<VO, VR>(other: KTable<K, VO>, joiner: ValueJoiner<V, VO | null, VR, K>, named?: Named): KTable<K, VR>
  leftJoin(other: object, a: unknown, b?: unknown, c?: TableJoined): KTable<K, unknown> {
    if (isForeignKeyJoin(b)) return this.foreignKeyJoin(other as KTable<unknown, unknown>, a as (value: V, key: K) => unknown, b as ValueJoiner<V | null, unknown, unknown, K>, 'leftJoin', c)
    return this.tableJoin(other as KTable<K, unknown>, a as ValueJoiner<V | null, unknown, unknown, K>, 'leftJoin', ['left', 'right'], b as Named | undefined)
  }

  /** As `join`, and a key either table holds joins null for the other while that one does not hold it. */
  outerJoin<VO, VR>(other: KTable<K, VO>, joiner: ValueJoiner<V | null, VO | null, VR, K>, named?: Named): KTable<K, VR> {
    return this.tableJoin(other, joiner, 'outerJoin', ['outer', 'outer'], named)
  }

  /**
   * The foreign-key join's nodes, named and numbered as Kafka Streams names them (joins/foreign-key-join.ts
   * has the steps): below this table the subscriptions go out; next to the other table they are stored
   * and answered; the answers come back here and are joined.
   */
  private foreignKeyJoin<KO, VO, VR>(
    other: KTable<KO, VO>,
    extractor: (value: V, key: K) => KO | null | undefined,
    joiner: ValueJoiner<V | null, VO | null, VR, K>,
    operation: 'join' | 'leftJoin',
    tableJoined: TableJoined = {},
  ): KTable<K, VR> {
    if (!(other instanceof KTable)) throw new PunctualError('INVALID_TOPOLOGY', `${operation}: the other table must be a KTable`)
    if (typeof extractor !== 'function') throw new PunctualError('INVALID_TOPOLOGY', `${operation}: the foreign key extractor must be a function, got ${typeof extractor}`)
    if (typeof joiner !== 'function') {
      // A string here may be a table-table join's name given as a string, not as a Named.
      const named = typeof joiner === 'string' ? ` ${JSON.stringify(joiner)} (a table-table join is named with Named.as(${JSON.stringify(joiner)}), not a string)` : ''
      throw new PunctualError('INVALID_TOPOLOGY', `${operation}: the joiner must be a function, got ${typeof joiner}${named}`)
    }
    const label = tableJoined.name
    if (label !== undefined && (typeof label !== 'string' || label === '')) throw new PunctualError('INVALID_TOPOLOGY', `${operation}: tableJoined.name must be a non-empty string, got ${JSON.stringify(label)}`)
    const mine = this.valueStore(operation, 'oldValue', true)
    const theirs = other.valueStore(operation, undefined, true)
    const b = this.builder
    const name = (suffix: string, prefix: string): string => (label === undefined ? b.newName(prefix) : `${label}${suffix}`)
    const registrationTopic = `${name('-subscription-registration', 'KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION')}-topic`
    const send = name('-subscription-registration-processor', 'KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION')
    const registrationSink = name('-subscription-registration-sink', 'KTABLE-SINK')
    const registrationSource = name('-subscription-registration-source', 'KTABLE-SOURCE')
    const subscriptions = name('-subscription-store', 'KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE')
    const receive = name('-subscription-receive', 'KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR')
    const answer = name('-subscription-join-foreign', 'KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR')
    const foreignUpdate = name('-foreign-join-subscription', 'KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR')
    const responseTopic = `${name('-subscription-response', 'KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE')}-topic`
    const responseSink = name('-subscription-response-sink', 'KTABLE-SINK')
    const responseSource = name('-subscription-response-source', 'KTABLE-SOURCE')
    const resolve = name('-subscription-response-resolver', 'KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR')
    const result = name('-result', 'KTABLE-FK-JOIN-OUTPUT')
    // Kafka Streams spends one more index on the result's store name, materialized or not.
    b.newName('KTABLE-FK-JOIN-OUTPUT')

    const keySerde = b.keySerdeOr(this.keySerde)
    const foreignKeySerde = b.keySerdeOr(other.keySerdeOrUndefined)
    const valueSerde = b.valueSerdeOr(this.valueSerde)
    const foreignValueSerde = b.valueSerdeOr(other.valueSerdeOrUndefined)
    const hashTopic = `${registrationTopic}-vh`
    const valueBytes = (v: V): Uint8Array | null => valueSerde.serialize(v, hashTopic)
    const leftJoin = operation === 'leftJoin'
    const registrationSerdes = { keySerde: foreignKeySerde as Serde<unknown>, valueSerde: subscriptionSerde(keySerde) as Serde<unknown> }
    const responseSerdes = { keySerde: keySerde as Serde<unknown>, valueSerde: subscriptionResponseSerde(foreignValueSerde) as Serde<unknown> }
    const g = b.graph

    g.addProcessor(
      send,
      subscriptionSendProcessor<K, V, KO>({
        foreignKey: extractor,
        foreignKeyId: theirs.keyId,
        valueBytes,
        oldValue: (ctx) => {
          const store = ctx.getStateStore(mine.storeName)
          return () => (valueBeforeUpdate.get(store) ?? null) as V | null
        },
        leftJoin,
      }),
      this.readNode,
    )
    g.connectProcessorAndStateStores(mine.storeName, send)
    g.markInternalTopic(registrationTopic)
    // By foreign key, as the other table is partitioned; a left join's null foreign key stays in its partition.
    g.addSink(registrationSink, registrationTopic, { ...registrationSerdes, partitioner: (_t, key, s, n) => (key === null ? (s as Subscription<K>).primaryPartition % n : undefined) }, send)
    g.addSource(registrationSource, registrationTopic, registrationSerdes)
    g.addProcessor(receive, subscriptionReceiveProcessor<K, KO>(subscriptions, theirs.keyId, mine.keyId), registrationSource)
    g.addStateStore({ name: subscriptions, persistent: true, build: () => new SubscriptionStore<K>(subscriptions) }, receive)
    g.addProcessor(answer, subscriptionJoinProcessor<K, KO, VO>(theirs.keyId, (ctx) => tableGetter<VO>(ctx, theirs)), receive)
    g.connectProcessorAndStateStores(theirs.storeName, answer)
    g.addProcessor(foreignUpdate, foreignTableJoinProcessor<K, KO, VO>(subscriptions, theirs.keyId), other.readNode)
    g.connectProcessorAndStateStores(subscriptions, foreignUpdate)
    g.markInternalTopic(responseTopic)
    // Back to the partition of the key that subscribed.
    g.addSink(responseSink, responseTopic, { ...responseSerdes, partitioner: (_t, _k, r, n) => Math.min((r as SubscriptionResponse<VO>).primaryPartition, n - 1) }, answer, foreignUpdate)
    g.addSource(responseSource, responseTopic, responseSerdes)
    g.addProcessor(
      resolve,
      responseJoinProcessor<K, V, VO, VR>({ primaryKeyId: mine.keyId, valueBytes, leftTable: (ctx) => tableGetter<V>(ctx, mine), joiner, leftJoin }),
      responseSource,
    )
    g.connectProcessorAndStateStores(mine.storeName, resolve)
    g.addProcessor(result, statelessProcessor<K, VR | null, K, VR | null>((r, ctx) => ctx.forward(r)), resolve)
    return new KTable<K, VR>(b, result, this.keySerde, undefined, undefined)
  }

  private tableJoin<VO, VR>(other: KTable<K, VO>, joiner: ValueJoiner<V | null, VO | null, VR, K>, operation: string, modes: [TableJoinMode, TableJoinMode], named: Named | undefined): KTable<K, VR> {
    if (!(other instanceof KTable)) throw new PunctualError('INVALID_TOPOLOGY', `${operation}: the other table must be a KTable`)
    if (typeof joiner !== 'function') throw new PunctualError('INVALID_TOPOLOGY', `${operation}: the joiner must be a function, got ${typeof joiner}`)
    const label = namedNode(`KTable.${operation}`, named)
    // Kafka Streams has the outer sides send old values (left: this table; outer: both).
    const mine = this.valueStore(operation, 'heldBefore', modes[0] !== 'inner')
    const theirs = other.valueStore(operation, 'heldBefore', modes[1] === 'outer')
    const b = this.builder
    const prefix = modes[0] === 'inner' ? 'KTABLE-JOINTHIS' : modes[0] === 'left' ? 'KTABLE-JOINTHIS' : 'KTABLE-OUTERTHIS'
    const thisName = label === undefined ? b.newName(prefix) : `${label}-join-this`
    const otherName = label === undefined ? b.newName(prefix.replace('THIS', 'OTHER')) : `${label}-join-other`
    const merge = label ?? b.newName('KTABLE-MERGE')
    // The keys of both tables go through this table's key id function, so equal keys meet.
    const keyId = mine.keyId
    b.graph.addProcessor(thisName, () => new TableTableJoinProcessor<K, V, VO, VR>(modes[0], (ctx) => tableGetter<VO>(ctx, theirs), (ctx) => heldBefore(ctx, mine.storeName), keyId, joiner), this.readNode)
    b.graph.addProcessor(otherName, () => new TableTableJoinProcessor<K, VO, V, VR>(modes[1], (ctx) => tableGetter<V>(ctx, mine), (ctx) => heldBefore(ctx, theirs.storeName), keyId, (o, t, k) => joiner(t, o, k)), other.readNode)
    b.graph.connectProcessorAndStateStores(theirs.storeName, thisName, otherName)
    b.graph.connectProcessorAndStateStores(mine.storeName, otherName, thisName)
    b.graph.addProcessor(merge, statelessProcessor<K, VR | null, K, VR | null>((r, ctx) => ctx.forward(r)), thisName, otherName)
    return new KTable<K, VR>(b, merge, this.keySerde, undefined, undefined)
  }

  /**
   * Groups the table by a new key (Kafka Streams' `KTable.groupBy`): each update of a key maps its old
   * value and its new value to `{ key, value }` pairs, and the aggregations of the grouped table take the
   * old pair out of its group and add the new one (a key moving to another group leaves the old one).
   * The aggregations read the changes through a repartition topic named as Kafka Streams names it:
   * `<grouped.name>-repartition` (one for every aggregation), else `<store>-repartition` (one per
   * aggregation). The table keeps its values in a store, to know the old
   * ones; a windowed table cannot be grouped.
   */
  groupBy<KR, VR>(selector: (key: K, value: V) => KeyValue<KR, VR>, grouped: Grouped<KR, VR> = {}): KGroupedTable<KR, VR> {
    if (typeof selector !== 'function') throw new PunctualError('INVALID_TOPOLOGY', `groupBy: the selector must be a function, got ${typeof selector}`)
    const table = this.valueStore('groupBy', 'oldValue', true)
    const b = this.builder
    const name = grouped.name ?? b.newName('KTABLE-SELECT')
    const keySerde = b.keySerdeOr(grouped.keySerde)
    const valueSerde = b.valueSerdeOr(grouped.valueSerde)
    const groupId = keyIdFunction(keySerde)
    const storeName = table.storeName
    b.graph.addProcessor(
      name,
      tableSelectProcessor<K, V, KR, VR>(
        selector,
        (ctx) => {
          const store = ctx.getStateStore(storeName)
          return () => (valueBeforeUpdate.get(store) ?? null) as V | null
        },
        (x, y) => x === y || groupId(x) === groupId(y),
      ),
      this.readNode,
    )
    b.graph.connectProcessorAndStateStores(storeName, name)
    return new KGroupedTable<KR, VR>(b, name, keySerde, valueSerde, grouped.name)
  }

  /** The table's updates as a stream, tombstones as null values (Kafka Streams' `KTable.toStream`). Its node is named `named.name`, else `KTABLE-TOSTREAM-<n>`. */
  toStream(named?: Named): KStream<K, V | null> {
    const node = namedNode('KTable.toStream', named) ?? this.builder.newName('KTABLE-TOSTREAM')
    this.builder.graph.addProcessor(node, statelessProcessor<K, V | null, K, V | null>((r, ctx) => ctx.forward(r)), this.node)
    return new KStream<K, V | null>(this.builder, node, this.keySerde, this.valueSerde as Serde<V | null> | undefined)
  }

  /**
   * Holds updates back (KIP-328): `Suppressed.untilTimeLimit(...)` on any table, or
   * `Suppressed.untilWindowCloses(...)` (final results) on a windowed table.
   */
  suppress(suppressed: K extends Windowed<unknown> ? Suppressed<K, V> : TimeLimitSuppressed<K, V>): KTable<K, V> {
    const s = suppressed as Suppressed<K, V>
    const name = s.name ?? this.builder.newName('KTABLE-SUPPRESS')
    const windowed = this.windowed
    if (s.until === 'windowCloses' && windowed === undefined) {
      throw invalidConfig(`suppression "${name}"`, 'untilWindowCloses needs a windowed table (after windowedBy(...).count/reduce/aggregate)')
    }
    let keyId: (key: K) => string
    if (windowed !== undefined) {
      const inner = keyIdFunction(windowed.keySerde)
      keyId =
        windowed.sessions === true
          ? (k) => {
              const w = k as unknown as Windowed<unknown>
              return sessionKeyId(inner(w.key), w.window.start, w.window.end)
            }
          : (k) => {
              const w = k as unknown as Windowed<unknown>
              return stampedKeyId(w) ?? windowedKeyId(inner(w.key), w.window.start)
            }
    } else {
      keyId = keyIdFunction(this.builder.keySerdeOr(this.keySerde))
    }
    const valueSerde = this.builder.valueSerdeOr(this.valueSerde)
    const valueSize = (v: V | null): number => valueSerde.sizeOf?.(v) ?? valueSerde.serialize(v, '')?.byteLength ?? 0
    // The default size: key bytes (the id is one character per byte) + value bytes + a fixed overhead.
    const sizer = s.sizer ?? ((_k: K, v: V | null, id: string) => id.length + valueSize(v) + ENTRY_OVERHEAD)
    const graceMs = windowed?.graceMs ?? 0
    // The in-memory buffer lives in a task store, so commits make it durable; Kafka Streams names it
    // `<name>-store` after a named suppression, else `KTABLE-SUPPRESS-STATE-STORE-<n>`.
    const storeName = s.name === undefined ? `KTABLE-SUPPRESS-STATE-STORE-${name.slice('KTABLE-SUPPRESS-'.length)}` : `${name}-store`
    const direct = this.finalResultsBelow(s, name)
    this.builder.graph
      .addProcessor(name, () => (direct() ? passThroughSuppression<K, V>(storeName) : new SuppressProcessor<K, V>({ name, suppressed: s, keyId, sizer, graceMs, storeName })), this.node)
      // A spilling buffer's store is persistent: a restart streams it from disk instead of loading it whole.
      .addStateStore({ name: storeName, persistent: spillsToDisk(s.bufferConfig), build: () => new SuppressionStore<K, V>(storeName) }, name)
    return new KTable<K, V>(this.builder, name, this.keySerde, this.valueSerde, windowed)
  }

  /**
   * For `untilWindowCloses` with no bound and no wall-clock limit, right on a time-windowed
   * aggregation's table: lets the aggregation forward final results itself (see FinalResultsHook), and
   * returns whether it does, asked when processors are made (the topology is complete by then: another
   * reader of the aggregation added later turns it off).
   */
  private finalResultsBelow(s: Suppressed<K, V>, suppression: string): () => boolean {
    const hook = this.windowed?.finalResults
    const unbounded = s.bufferConfig.maxRecords === Infinity && s.bufferConfig.maxBytes === Infinity
    if (s.until !== 'windowCloses' || s.wallClockLimitMs !== undefined || !unbounded || hook === undefined || hook.node !== this.node) return () => false
    const graph = this.builder.graph
    const aggregation = this.node
    const only = (): boolean => {
      const readers = graph.childNames(aggregation)
      return readers.length === 1 && readers[0] === suppression
    }
    hook.enabled = only
    return only
  }

  private addStatelessNode<V2>(name: string | undefined, prefix: string, map: (key: K, value: V | null) => V2 | null, valueSerde: Serde<V2> | undefined, filtered: boolean): KTable<K, V2> {
    const node = name ?? this.builder.newName(prefix)
    this.builder.graph.addProcessor(
      node,
      statelessProcessor<K, V | null, K, V2 | null>((r, ctx) => ctx.forward({ key: r.key, value: map(r.key, r.value), timestamp: r.timestamp, headers: r.headers })),
      this.node,
    )
    return new KTable<K, V2>(this.builder, node, this.keySerde, valueSerde, this.windowed, undefined, undefined, filtered)
  }
}

/** A third argument that is not a `Named` (an object) makes a foreign-key join, whose checks name what is wrong with it. */
function isForeignKeyJoin(third: unknown): boolean {
  return third !== undefined && (typeof third !== 'object' || third === null)
}

/** Whether the table of this store held the key of the update being forwarded (see heldBeforeUpdate). */
function heldBefore(ctx: Context<unknown, unknown>, storeName: string): () => boolean {
  const store = ctx.getStateStore(storeName)
  return () => heldBeforeUpdate.get(store) === true
}

/** Reads a table's current value of a key id from its store in this task (plain or versioned). */
function tableGetter<V>(ctx: Context<unknown, unknown>, store: { storeName: string; historyRetentionMs: number | undefined }): TableGetter<V> {
  if (store.historyRetentionMs !== undefined) {
    const versions = ctx.getStateStore<VersionedKeyValueStore<string, V>>(store.storeName)
    return (id) => {
      const r = versions.get(id)
      return r === undefined ? null : { value: r.value, ts: r.timestamp }
    }
  }
  const plain = ctx.getStateStore<KeyValueStore<string, TableEntry<V>>>(store.storeName)
  return (id) => {
    const e = plain.get(id)
    return e === undefined ? null : { value: e.v, ts: e.ts }
  }
}
