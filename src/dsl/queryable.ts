import type { KeyValueStore, ReadOnlyKeyValueStore, ReadOnlyVersionedKeyValueStore, StateStore, VersionedKeyValueStore } from '../processor/api.js'
import type { Serde } from '../processor/serdes.js'
import type { StoreQuery } from '../state/stores.js'

/**
 * Interactive queries of a DSL key-value store, which keeps entries by key id (the key's serialized
 * bytes as latin1): a key is looked up by its id, ids read back through the key serde, and `value`
 * takes the stored entry apart. Ranges follow the serialized keys' order, as in Kafka Streams.
 */
export function keyIdQuery<K, S, V>(keyId: (key: K) => string, keySerde: Serde<K>, value: (stored: S) => V): StoreQuery {
  const keyOf = (id: string): K => keySerde.deserialize(Buffer.from(id, 'latin1'), '') as K
  return {
    kind: 'keyValue',
    view: (store: StateStore): ReadOnlyKeyValueStore<K, V> => {
      const s = store as KeyValueStore<string, S>
      function* entries(stored: Iterable<[string, S]>): IterableIterator<[K, V]> {
        for (const [id, entry] of stored) yield [keyOf(id), value(entry)]
      }
      return {
        get: (key) => {
          const stored = s.get(keyId(key))
          return stored === undefined ? undefined : value(stored)
        },
        range: (from, to) => entries(s.range(keyId(from), keyId(to))),
        all: () => entries(s.all()),
        approximateNumEntries: () => s.approximateNumEntries(),
      }
    },
  }
}

/** Interactive queries of a versioned table's store (versions by key id). */
export function versionedKeyIdQuery<K, V>(keyId: (key: K) => string): StoreQuery {
  return {
    kind: 'versioned',
    view: (store: StateStore): ReadOnlyVersionedKeyValueStore<K, V> => {
      const s = store as VersionedKeyValueStore<string, V>
      return { get: (key, asOf) => (asOf === undefined ? s.get(keyId(key)) : s.get(keyId(key), asOf)) }
    },
  }
}
