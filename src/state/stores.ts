import type { KeyValueStore, StateStore, StoreKey } from '../processor/api.js'
import { ChangeSet } from './change-set.js'

/** What a store offers to be made durable: change tracking and restore. */
export interface DurableStore {
  /** From now on, record changed keys. */
  trackChanges(): void
  /** Changed keys with their values now (undefined: deleted) since the last call. */
  takeChanges(): Array<[StoreKey, unknown]>
  /** All entries, for a full snapshot. */
  entries(): Array<[StoreKey, unknown]>
  restore(entries: ReadonlyArray<[StoreKey, unknown]>): void
}

/** The capability a store exposes when it can be durable (no downcasting: look it up by this symbol). */
export const DURABLE: unique symbol = Symbol('punctual.durableStore')

export function durableStore(store: StateStore): DurableStore | undefined {
  return (store as { [DURABLE]?: DurableStore })[DURABLE]
}

/** Builds one store instance per task. Connected to processors with `Topology.addStateStore`. */
export interface StoreBuilder<S extends StateStore = StateStore> {
  readonly name: string
  build(): S
}

/** A key-value store in memory, iterated in key order. */
export class InMemoryKeyValueStore<K extends StoreKey, V> implements KeyValueStore<K, V> {
  private readonly map = new Map<K, V>()
  private changed: ChangeSet<K> | undefined

  constructor(readonly name: string) {}

  readonly [DURABLE]: DurableStore = {
    trackChanges: () => {
      this.changed ??= new ChangeSet()
    },
    takeChanges: () => {
      const keys = this.changed
      if (keys === undefined || keys.size === 0) return []
      return keys.take((k) => this.map.get(k))
    },
    entries: () => [...this.map],
    restore: (entries) => {
      for (const [k, v] of entries) this.map.set(k as K, v as V)
    },
  }

  get(key: K): V | undefined {
    return this.map.get(key)
  }

  put(key: K, value: V): void {
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
    const c = this.changed
    if (c !== undefined && !c.has(key)) c.first(key, this.map.has(key))
  }

  *all(): IterableIterator<[K, V]> {
    // Sorting here keeps puts O(1); iteration in key order is the rarer operation.
    const keys = [...this.map.keys()].sort(compareKeys)
    for (const k of keys) yield [k, this.map.get(k) as V]
  }

  approximateNumEntries(): number {
    return this.map.size
  }

  close(): void {
    this.map.clear()
  }
}

function compareKeys(a: StoreKey, b: StoreKey): number {
  return a < b ? -1 : a > b ? 1 : 0
}

export const Stores = {
  inMemoryKeyValueStore<K extends StoreKey, V>(name: string): StoreBuilder<KeyValueStore<K, V>> {
    return { name, build: () => new InMemoryKeyValueStore<K, V>(name) }
  },
} as const
