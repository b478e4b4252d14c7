import { PunctualError } from '../errors.js'
import { shownValue } from '../processor/shown-value.js'
import type { KeyValueStore, ReadOnlyKeyValueStore, ReadOnlyVersionedKeyValueStore, StateStore, StoreKey, VersionedKeyValueStore } from '../processor/api.js'
import { PersistentVersionedKeyValueStore } from './versioned-store.js'
import type { Serde } from '../processor/serdes.js'
import { PersistentKeyValueStore } from './persistent-store.js'
import { DURABLE } from './durable.js'
import type { DurableStore } from './durable.js'
import { ChangeLog } from './change-log.js'
import { ShardedMap } from '../util/sharded-map.js'
import { checkStoreWrite } from './store-writes.js'
import { compareStoreKeys } from './key-part.js'
import type { StoreWriteSerdes } from './store-writes.js'

export { DURABLE, durableStore } from './durable.js'
export type { DurableStore } from './durable.js'

/**
 * Builds one store instance per task (Kafka Streams' `StoreBuilder`), as {@link Stores} makes them.
 * Connected to processors with `Topology.addStateStore`, or to the DSL with `StreamsBuilder.addStateStore`.
 */
export interface StoreBuilder<S extends StateStore = StateStore> {
  /**
   * The store's name, unique in the topology: processors ask for the store by it, interactive queries
   * read it by it, and on Kafka its changelog topic is `<applicationId>-<name>-changelog`.
   */
  readonly name: string
  /** @internal The store lives on disk in a durable run (it offers the PERSISTENT capability). */
  readonly persistent?: boolean
  /** How the store's keys are written to its changelog; without, by type (see `StoreSerdes`). */
  readonly keySerde?: Serde<unknown> | undefined
  /** How the store's values are written to its changelog; without, as MessagePack (see `StoreSerdes`). */
  readonly valueSerde?: Serde<unknown> | undefined
  /** @internal How interactive queries read the store; without, it cannot be queried. */
  readonly query?: StoreQuery
  /** A new, empty instance of the store; each task calls it once and then restores the instance from its checkpoint or changelog. */
  build(): S
}

/** Builds a versioned store ({@link Stores.persistentVersionedKeyValueStore}); a table takes it through `Materialized.as`. */
export interface VersionedStoreBuilder<K extends StoreKey, V> extends StoreBuilder<VersionedKeyValueStore<K, V>> {
  /** How long each key's history is kept behind the store's largest timestamp, ms. */
  readonly historyRetentionMs: number
}

/** The kinds of store interactive queries know (`QueryableStoreTypes`). */
export type QueryableStoreKind = 'keyValue' | 'window' | 'session' | 'versioned'

/**
 * How interactive queries read one kind of store: a read-only view of one task's instance, in the
 * application's keys and values (a `ReadOnlyKeyValueStore`, `ReadOnlyWindowStore`,
 * `ReadOnlySessionStore` or `ReadOnlyVersionedKeyValueStore` as `kind` says).
 */
export interface StoreQuery {
  /** The kind of store, which the query's `QueryableStoreType` must name. */
  readonly kind: QueryableStoreKind
  /** A read-only view of one task's instance of the store. */
  view(store: StateStore): object
}

/** The default of a store's (or keyed state's) `cacheEntries`: entries memory keeps beyond those changed since the last commit. */
export const DEFAULT_CACHE_ENTRIES = 10_000

/** A `cacheEntries` option, checked (`where` names the store or state in the error); the default when undefined. */
export function checkedCacheEntries(where: string, cacheEntries: unknown): number {
  if (cacheEntries === undefined) return DEFAULT_CACHE_ENTRIES
  if (typeof cacheEntries !== 'number' || !Number.isSafeInteger(cacheEntries) || cacheEntries < 0) {
    throw new PunctualError('INVALID_CONFIG', `${where}: cacheEntries must be an integer >= 0, got ${shownValue(cacheEntries)}`)
  }
  return cacheEntries
}

/** The serdes of a key-value store's changelog (Kafka Streams' `Stores.keyValueStoreBuilder(supplier, keySerde, valueSerde)`). */
export interface StoreSerdes<K, V> {
  /** Default: the key's type, then its bytes (UTF-8, a double, a bigint's digits). */
  keySerde?: Serde<K>
  /** Default: MessagePack, which keeps plain data (objects, arrays, numbers, strings, bigints, bytes, Set, Date) but turns a Map into an object. */
  valueSerde?: Serde<V>
}

/** A key-value store in memory, iterated in key order. */
export class InMemoryKeyValueStore<K extends StoreKey, V> implements KeyValueStore<K, V> {
  private readonly map = new ShardedMap<K, V>()
  private readonly log = new ChangeLog<K>({
    saved: (k) => this.map.get(k),
    savedEntries: () => this.map,
    load: (k, v) => this.map.set(k, v as V),
  })

  constructor(
    readonly name: string,
    /** The serdes its builder writes the changelog with: a put checks the entry fits them. */
    private readonly serdes: StoreWriteSerdes = {},
  ) {}

  readonly [DURABLE]: DurableStore = this.log

  get(key: K): V | undefined {
    return this.map.get(key)
  }

  put(key: K, value: V): void {
    checkStoreWrite(this.name, this.serdes, key, value)
    this.changing(key)
    this.map.set(key, value)
  }

  putIfAbsent(key: K, value: V): V | undefined {
    const existing = this.map.get(key)
    if (existing === undefined) this.put(key, value)
    return existing
  }

  delete(key: K): V | undefined {
    const existing = this.map.get(key)
    this.changing(key)
    this.map.delete(key)
    return existing
  }

  private changing(key: K): void {
    const c = this.log.changes
    if (c !== undefined && !c.has(key)) c.first(key, this.map.has(key))
  }

  all(): IterableIterator<[K, V]> {
    // Sorting here keeps puts O(1); iteration in key order is the rarer operation.
    return this.entriesOf([...this.map.keys()].sort(compareStoreKeys))
  }

  range(from: K, to: K): IterableIterator<[K, V]> {
    const keys: K[] = []
    for (const k of this.map.keys()) if (compareStoreKeys(k, from) >= 0 && compareStoreKeys(k, to) <= 0) keys.push(k)
    return this.entriesOf(keys.sort(compareStoreKeys))
  }

  approximateNumEntries(): number {
    return this.map.size
  }

  close(): void {
    this.map.clear()
  }

  /** The entries of `keys` still present when the iteration reaches them. */
  private *entriesOf(keys: readonly K[]): IterableIterator<[K, V]> {
    for (const k of keys) {
      const v = this.map.get(k)
      if (v !== undefined) yield [k, v]
    }
  }
}

/** Queries of a key-value store whose keys are the application's own. */
const KEY_VALUE_QUERY: StoreQuery = {
  kind: 'keyValue',
  view: (store) => {
    const s = store as KeyValueStore<StoreKey, unknown>
    return {
      get: (key: StoreKey) => s.get(key),
      range: (from: StoreKey, to: StoreKey) => s.range(from, to),
      all: () => s.all(),
      approximateNumEntries: () => s.approximateNumEntries(),
    } satisfies ReadOnlyKeyValueStore<StoreKey, unknown>
  },
}

/** Queries of a versioned store whose keys are the application's own. */
const VERSIONED_QUERY: StoreQuery = {
  kind: 'versioned',
  view: (store) => {
    const s = store as VersionedKeyValueStore<StoreKey, unknown>
    return { get: (key: StoreKey, asOf?: number) => (asOf === undefined ? s.get(key) : s.get(key, asOf)) } satisfies ReadOnlyVersionedKeyValueStore<StoreKey, unknown>
  },
}

/**
 * Makes store builders (Kafka Streams' `Stores`): add one to a topology with `Topology.addStateStore`.
 * Every kind is logged: a commit writes its changes to the state directory or, on Kafka, to its
 * changelog topic, and a task restores it from there.
 * @throws PunctualError `INVALID_CONFIG` for a serde that is not one, or a negative or fractional
 *   `cacheEntries` or `historyRetentionMs`.
 */
export const Stores = {
  /**
   * A key-value store held in memory. With a state directory, commits save its changes and a restart
   * loads it back whole.
   */
  inMemoryKeyValueStore<K extends StoreKey, V>(name: string, serdes: StoreSerdes<K, V> = {}): StoreBuilder<KeyValueStore<K, V>> {
    const checked = storeSerdes(name, serdes)
    return { name, ...checked, query: KEY_VALUE_QUERY, build: () => new InMemoryKeyValueStore<K, V>(name, checked) }
  },
  /**
   * A key-value store on disk when the application has a state directory (state may outgrow memory; a
   * restart reads nothing up front), in memory otherwise (the test kit, runs without `stateDir`).
   * `cacheEntries` bounds the entries kept in memory after a read. @default cacheEntries 10 000
   */
  persistentKeyValueStore<K extends StoreKey, V>(name: string, options: { cacheEntries?: number } & StoreSerdes<K, V> = {}): StoreBuilder<KeyValueStore<K, V>> {
    const cacheEntries = checkedCacheEntries(`store "${name}"`, options.cacheEntries)
    const checked = storeSerdes(name, options)
    return { name, persistent: true, ...checked, query: KEY_VALUE_QUERY, build: () => new PersistentKeyValueStore<K, V>(name, cacheEntries, checked) }
  },
  /**
   * A versioned key-value store (Kafka Streams' `Stores.persistentVersionedKeyValueStore`, KIP-889):
   * each key's versions by timestamp, `get(key, asOf)`, history kept `historyRetentionMs` behind the
   * store's largest timestamp (which is also how late a write may be). On disk when the application has
   * a state directory (a restart reads nothing up front), in memory otherwise; `cacheEntries` bounds the
   * keys kept in memory after a read. A key's versions are written to its changelog as one MessagePack
   * list; keys may be strings, numbers or bigints. @default cacheEntries 10 000
   */
  persistentVersionedKeyValueStore<K extends StoreKey, V>(name: string, historyRetentionMs: number, options: { cacheEntries?: number } = {}): VersionedStoreBuilder<K, V> {
    if (!Number.isSafeInteger(historyRetentionMs) || historyRetentionMs < 0) {
      throw new PunctualError('INVALID_CONFIG', `store "${name}": historyRetentionMs must be an integer >= 0, got ${shownValue(historyRetentionMs)}`)
    }
    const cacheEntries = checkedCacheEntries(`store "${name}"`, options.cacheEntries)
    return { name, historyRetentionMs, persistent: true, query: VERSIONED_QUERY, build: () => new PersistentVersionedKeyValueStore<K, V>(name, historyRetentionMs, cacheEntries) }
  },
} as const

function storeSerdes<K, V>(name: string, serdes: StoreSerdes<K, V>): { keySerde?: Serde<unknown>; valueSerde?: Serde<unknown> } {
  for (const side of ['keySerde', 'valueSerde'] as const) {
    const serde = serdes[side]
    if (serde !== undefined && (typeof serde !== 'object' || typeof serde.serialize !== 'function' || typeof serde.deserialize !== 'function')) {
      throw new PunctualError('INVALID_CONFIG', `store "${name}": ${side} must be a Serde (serialize and deserialize), got ${typeof serde}`)
    }
  }
  return {
    ...(serdes.keySerde === undefined ? {} : { keySerde: serdes.keySerde as Serde<unknown> }),
    ...(serdes.valueSerde === undefined ? {} : { valueSerde: serdes.valueSerde as Serde<unknown> }),
  }
}
