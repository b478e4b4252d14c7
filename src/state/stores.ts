import type { KeyValueStore, StateStore, StoreKey } from '../processor/api.js'

/** Builds one store instance per task. Connected to processors with `Topology.addStateStore`. */
export interface StoreBuilder<S extends StateStore = StateStore> {
  readonly name: string
  build(): S
}

/** A key-value store in memory, iterated in key order. */
export class InMemoryKeyValueStore<K extends StoreKey, V> implements KeyValueStore<K, V> {
  private readonly map = new Map<K, V>()

  constructor(readonly name: string) {}

  get(key: K): V | undefined {
    return this.map.get(key)
  }

  put(key: K, value: V): void {
    this.map.set(key, value)
  }

  putIfAbsent(key: K, value: V): V | undefined {
    const existing = this.map.get(key)
    if (existing === undefined) this.map.set(key, value)
    return existing
  }

  delete(key: K): V | undefined {
    const existing = this.map.get(key)
    this.map.delete(key)
    return existing
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
