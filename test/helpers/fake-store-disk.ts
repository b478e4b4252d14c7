import type { StateStore, StoreKey } from '../../src/processor/api.js'
import { compareStoreKeys } from '../../src/state/key-part.js'
import type { StoreDisk } from '../../src/state/persistent-store.js'
import { durableStore } from '../../src/state/stores.js'

/**
 * A store's committed entries as the state directory would hold them: in key order, reads counted. A
 * commit is taken (`take`, saved forms copied as an encoding would) and later made durable (`durable`),
 * oldest first.
 */
export class FakeStoreDisk implements StoreDisk {
  readonly entriesByKey = new Map<StoreKey, unknown>()
  reads = 0
  private readonly pending: Array<Array<[StoreKey, unknown]>> = []

  /** A copy, as a real disk decodes a fresh object: a store that changes what it read leaves the disk as it was. */
  get(key: StoreKey): unknown {
    this.reads++
    return structuredClone(this.entriesByKey.get(key))
  }

  *entries(from?: StoreKey): Iterable<[StoreKey, unknown]> {
    const keys = [...this.entriesByKey.keys()].sort(compareStoreKeys)
    for (const k of keys) if (from === undefined || compareStoreKeys(k, from) >= 0) yield [k, structuredClone(this.entriesByKey.get(k))]
  }

  count(): number {
    return this.entriesByKey.size
  }

  /** Commits taken and not durable yet. */
  get inFlight(): number {
    return this.pending.length
  }

  /** The first half of a commit: takes the store's changes. */
  take(store: StateStore): void {
    const changes = durableStore(store)?.takeChanges() ?? []
    this.pending.push(changes.map(([k, v]): [StoreKey, unknown] => [k, structuredClone(v)]))
  }

  /** The second half: the oldest commit taken is written, and the store told. */
  durable(store: StateStore): void {
    const changes = this.pending.shift()
    if (changes === undefined) return
    for (const [k, v] of changes) {
      if (v === undefined) this.entriesByKey.delete(k)
      else this.entriesByKey.set(k, v)
    }
    durableStore(store)?.committed?.()
  }

  /** A whole commit. */
  commit(store: StateStore): void {
    this.take(store)
    while (this.pending.length > 0) this.durable(store)
  }
}
