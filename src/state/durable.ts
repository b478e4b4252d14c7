import type { StateStore, StoreKey } from '../processor/api.js'

/** What a store offers to be made durable: change tracking and restore. */
export interface DurableStore {
  /** From now on, record changed keys. */
  trackChanges(): void
  /** Changed keys with their values now (undefined: deleted) since the last call. */
  takeChanges(): Array<[StoreKey, unknown]>
  /** The changes last taken are durable now (a store that reads its committed entries from disk may rely on them). */
  committed?(): void
  /** All entries, for a full snapshot. */
  entries(): Array<[StoreKey, unknown]>
  restore(entries: ReadonlyArray<[StoreKey, unknown]>): void
}

/** The capability a store exposes when it can be durable (no downcasting: look it up by this symbol). */
export const DURABLE: unique symbol = Symbol('punctual.durableStore')

export function durableStore(store: StateStore): DurableStore | undefined {
  return (store as { [DURABLE]?: DurableStore })[DURABLE]
}
