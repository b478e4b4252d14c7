import { PunctualError } from '../errors.js'
import type { ReadOnlyKeyValueStore, ReadOnlyVersionedKeyValueStore, StateStore } from '../processor/api.js'
import type { Topology } from '../processor/topology.js'
import type { QueryableStoreKind, StoreBuilder } from '../state/stores.js'
import type { ReadOnlySessionStore, ReadOnlyWindowStore } from '../windows/windows.js'

/**
 * The key of a query type's type-only member. Declared, never defined: no value has it, users cannot
 * name it, and it costs nothing at run time.
 */
declare const queryableStoreView: unique symbol

/**
 * Which kind of store a query expects, and the view it returns (Kafka Streams' `QueryableStoreType`),
 * as {@link QueryableStoreTypes} makes them.
 */
export interface QueryableStoreType<T> {
  /** @internal The kind of store the query expects; checked against the store's. */
  readonly kind: QueryableStoreKind
  /** Never set. It carries the view's type for the compiler, so that `store(name, type)` returns a `T`. */
  readonly [queryableStoreView]?: T
}

/** The kinds of store interactive queries read (Kafka Streams' `QueryableStoreTypes`). */
export const QueryableStoreTypes = {
  /** Key-value stores: `Stores.*KeyValueStore`, aggregations (`count`, `reduce`, `aggregate`), tables with a store. */
  keyValueStore: <K, V>(): QueryableStoreType<ReadOnlyKeyValueStore<K, V>> => ({ kind: 'keyValue' }),
  /** Window stores: time-windowed and sliding-window aggregations. */
  windowStore: <K, V>(): QueryableStoreType<ReadOnlyWindowStore<K, V>> => ({ kind: 'window' }),
  /** Session stores: session-window aggregations. */
  sessionStore: <K, V>(): QueryableStoreType<ReadOnlySessionStore<K, V>> => ({ kind: 'session' }),
  /** Versioned stores: `Stores.persistentVersionedKeyValueStore`, versioned tables. */
  versionedKeyValueStore: <K, V>(): QueryableStoreType<ReadOnlyVersionedKeyValueStore<K, V>> => ({ kind: 'versioned' }),
} as const

const TYPE_CALL: Readonly<Record<QueryableStoreKind, string>> = {
  keyValue: 'QueryableStoreTypes.keyValueStore()',
  window: 'QueryableStoreTypes.windowStore()',
  session: 'QueryableStoreTypes.sessionStore()',
  versioned: 'QueryableStoreTypes.versionedKeyValueStore()',
}

/**
 * A read-only view of store `name` over the tasks an application instance runs (`local(name)` gives
 * their instances of it at the moment of each call, so tasks that come and go are followed), as Kafka
 * Streams' composite stores do: a key is looked up in each task until one has it; ranges and scans
 * give each task's entries in turn. Refuses a store the topology does not have, one that cannot be
 * queried, and a type that is not the store's, naming the store.
 *
 * `notReady(name)` names the tasks of this instance that hold the store but do not run yet (restoring,
 * or waiting to): their keys are missing from `local`, so a lookup that finds nothing, and every range
 * or scan, fails with STORE_NOT_READY instead of answering "absent" for a key that exists (Kafka
 * Streams' `InvalidStateStoreException`). A key found in a running task is answered: a key lives in one
 * task only.
 */
export function queryableStore<T>(
  topology: Topology,
  name: string,
  type: QueryableStoreType<T>,
  local: (name: string) => readonly StateStore[],
  notReady: (name: string) => readonly string[] = () => [],
): T {
  const builder = storeBuilder(topology, name)
  const query = builder.query
  if (query === undefined) {
    throw new PunctualError('INVALID_ARGUMENT', `store "${name}" cannot be queried: interactive queries read the stores of Stores.*, aggregations and tables with a store, not a processor's internal or custom stores`)
  }
  if (type?.kind !== query.kind) {
    const asked = typeof type?.kind === 'string' && type.kind in TYPE_CALL ? TYPE_CALL[type.kind] : JSON.stringify(type)
    throw new PunctualError('INVALID_ARGUMENT', `store "${name}" is a ${query.kind} store; query it with ${TYPE_CALL[query.kind]}, not ${asked}`)
  }
  const views = new WeakMap<StateStore, object>()
  const current = <V>(): V[] =>
    local(name).map((store) => {
      let view = views.get(store)
      if (view === undefined) views.set(store, (view = query.view(store)))
      return view as V
    })
  const ready = (): void => {
    const tasks = notReady(name)
    if (tasks.length > 0) {
      throw new PunctualError(
        'STORE_NOT_READY',
        `store "${name}" is not ready on this instance: task${tasks.length === 1 ? '' : 's'} ${tasks.join(', ')} holding it ${tasks.length === 1 ? 'is' : 'are'} restoring; retry the query shortly`,
        { retriable: true },
      )
    }
  }
  return composite(query.kind, current, ready) as T
}

/** The instances of store `name` in `tasks` (those whose sub-topology has it). */
/** How `KafkaRuntime.store` reads. */
export interface StoreQueryOptions {
  /**
   * Also read the stores of the standby tasks this instance keeps (a streams group's; their persistent
   * stores only), which may be behind their task's owner (Kafka Streams' `enableStaleStores`).
   * @default false
   */
  readonly enableStaleStores?: boolean
}

export function localStores(tasks: Iterable<{ getStore(name: string): StateStore | undefined }>, name: string): StateStore[] {
  const out: StateStore[] = []
  for (const task of tasks) {
    const store = task.getStore(name)
    if (store !== undefined) out.push(store)
  }
  return out
}

function storeBuilder(topology: Topology, name: string): StoreBuilder {
  const all: string[] = []
  for (const g of topology.globalStores()) {
    if (g.builder.name === name) return g.builder
    all.push(g.builder.name)
  }
  for (const sub of topology.subtopologies()) {
    for (const builder of sub.stores) {
      if (builder.name === name) return builder
      all.push(builder.name)
    }
  }
  throw new PunctualError('INVALID_ARGUMENT', `no store named "${name}" in this topology (its stores: ${all.length === 0 ? 'none' : all.join(', ')})`)
}

/**
 * The first answer that is not `none`, over the views in turn; when none has one, `ready()` decides
 * whether "none" is the answer (it throws while a task that may hold the key is not running).
 */
function first<V, R>(views: readonly V[], ask: (view: V) => R, none: R, ready: () => void): R {
  for (const view of views) {
    const answer = ask(view)
    if (answer !== none) return answer
  }
  ready()
  return none
}

/** Every view's answers in turn, for a key: a non-empty answer comes from the one task that holds the key. */
function ofKey<V, E>(views: readonly V[], ask: (view: V) => Iterable<E>, ready: () => void): IterableIterator<E> {
  const out = views.flatMap((view) => [...ask(view)])
  if (out.length === 0) ready()
  return out.values()
}

/** Every view's answers in turn, for a range or scan: complete only when every task holding the store runs. */
function ofAll<V, R>(views: () => readonly V[], ask: (views: readonly V[]) => R, ready: () => void): R {
  const current = views()
  ready()
  return ask(current)
}

function composite(kind: QueryableStoreKind, current: <V>() => V[], ready: () => void): object {
  switch (kind) {
    case 'keyValue': {
      const views = current<ReadOnlyKeyValueStore<unknown, unknown>>
      return {
        get: (key) => first(views(), (v) => v.get(key), undefined, ready),
        // A snapshot, taken now: the stores go on changing while the caller iterates, perhaps across an await.
        range: (from, to) => ofAll(views, (vs) => vs.flatMap((v) => [...v.range(from, to)]).values(), ready),
        all: () => ofAll(views, (vs) => vs.flatMap((v) => [...v.all()]).values(), ready),
        approximateNumEntries: () => ofAll(views, (vs) => vs.reduce((n, v) => n + v.approximateNumEntries(), 0), ready),
      } satisfies ReadOnlyKeyValueStore<unknown, unknown>
    }
    case 'window': {
      const views = current<ReadOnlyWindowStore<unknown, unknown>>
      function fetch(key: unknown, windowStart: number): unknown
      function fetch(key: unknown, timeFrom: number, timeTo: number): IterableIterator<[number, unknown]>
      function fetch(key: unknown, from: number, to?: number): unknown {
        return to === undefined ? first(views(), (v) => v.fetch(key, from), undefined, ready) : ofKey(views(), (v) => v.fetch(key, from, to), ready)
      }
      return {
        fetch,
        fetchAll: (from, to) => ofAll(views, (vs) => vs.flatMap((v) => [...v.fetchAll(from, to)]).values(), ready),
        all: () => ofAll(views, (vs) => vs.flatMap((v) => [...v.all()]).values(), ready),
      } satisfies ReadOnlyWindowStore<unknown, unknown>
    }
    case 'session': {
      const views = current<ReadOnlySessionStore<unknown, unknown>>
      return {
        fetch: (key) => ofKey(views(), (v) => v.fetch(key), ready),
        findSessions: (key, earliestEnd, latestStart) => ofKey(views(), (v) => v.findSessions(key, earliestEnd, latestStart), ready),
      } satisfies ReadOnlySessionStore<unknown, unknown>
    }
    case 'versioned': {
      const views = current<ReadOnlyVersionedKeyValueStore<unknown, unknown>>
      return { get: (key, asOf) => first(views(), (v) => v.get(key, asOf), undefined, ready) } satisfies ReadOnlyVersionedKeyValueStore<unknown, unknown>
    }
  }
}
