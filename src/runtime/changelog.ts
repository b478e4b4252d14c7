import type { KeyedChanges } from '../keyed/keyed-task-state.js'
import type { StoreKey } from '../processor/api.js'

/**
 * What one commit changed in one task's state: the change stream a runtime on Kafka sends to compacted
 * changelog topics (one per store, keyed by the store key; a deletion is a tombstone) and restores
 * from. Values are the stores' own saved forms, the same the state directory writes.
 */
export interface TaskChangelog {
  readonly taskId: string
  /** Per store name, the entries that changed, as [key, value now]; undefined means deleted. */
  readonly stores: ReadonlyMap<string, ReadonlyArray<readonly [StoreKey, unknown]>>
  /** Keyed state entries (per state and key) and timers (added or removed) that changed. */
  readonly keyed: KeyedChanges | undefined
}

/**
 * Called after each commit with every task whose state changed, in commit order, once the commit is
 * durable (with a state directory) or taken (without). A listener that throws stops the runtime.
 */
export type ChangelogListener = (changes: readonly TaskChangelog[]) => void
