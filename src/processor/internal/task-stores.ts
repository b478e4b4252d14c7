import { BUFFER_METRICS, bufferingStore } from '../../metrics.js'
import type { SuppressionBufferMetrics } from '../../metrics.js'
import type { StateStore, StoreKey } from '../api.js'
import { durableStore } from '../../state/stores.js'
import type { StoreBuilder } from '../../state/stores.js'
import { persistentStore } from '../../state/persistent-store.js'
import type { StoreDisk } from '../../state/persistent-store.js'

/**
 * A task's state stores: built once, restored from a checkpoint (or, persistent stores in a durable run,
 * attached to their entries on disk), and (durable mode) tracking changes.
 */
export class TaskStores {
  private readonly stores = new Map<string, StateStore>()

  constructor(
    builders: readonly StoreBuilder[],
    saved: Readonly<Record<string, ReadonlyArray<[StoreKey, unknown]>>> | undefined,
    trackChanges: boolean,
    storeDisk?: (store: string) => StoreDisk | undefined,
  ) {
    for (const b of builders) {
      const store = b.build()
      const durable = durableStore(store)
      const disk = b.persistent === true ? storeDisk?.(b.name) : undefined
      if (disk !== undefined) persistentStore(store)?.attach(disk)
      if (durable !== undefined) {
        const entries = saved?.[b.name]
        if (entries !== undefined) durable.restore(entries)
        if (trackChanges) durable.trackChanges()
      }
      this.stores.set(b.name, store)
    }
  }

  get(name: string): StateStore | undefined {
    return this.stores.get(name)
  }

  /** Entries of every durable-capable store (a full snapshot). */
  snapshot(): Record<string, Array<[StoreKey, unknown]>> {
    const out: Record<string, Array<[StoreKey, unknown]>> = {}
    for (const [name, store] of this.stores) {
      const durable = durableStore(store)
      if (durable !== undefined) out[name] = durable.entries()
    }
    return out
  }

  /** Changed entries since the last call (durable mode), by store name. */
  changes(): Map<string, Array<[StoreKey, unknown]>> {
    const out = new Map<string, Array<[StoreKey, unknown]>>()
    for (const [name, store] of this.stores) {
      const changes = durableStore(store)?.takeChanges()
      if (changes !== undefined && changes.length > 0) out.set(name, changes)
    }
    return out
  }

  /** The changes last taken are durable. */
  committed(): void {
    for (const store of this.stores.values()) durableStore(store)?.committed?.()
  }

  /** What each buffering store (a suppression) holds now. */
  suppressionBuffers(): SuppressionBufferMetrics[] {
    const out: SuppressionBufferMetrics[] = []
    for (const [name, store] of this.stores) {
      const buffering = bufferingStore(store)
      if (buffering !== undefined) out.push({ store: name, ...buffering[BUFFER_METRICS]() })
    }
    return out
  }

  close(): void {
    for (const s of this.stores.values()) s.close()
  }
}
