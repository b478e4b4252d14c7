import type { KeyedStateOnDisk } from '../keyed/keyed-state.js'
import type { TaskCheckpoint } from '../processor/internal/task-config.js'
import type { StoreDisk } from '../state/persistent-store.js'

/** A task's last local checkpoint, read a bounded number of entries at a time (restoring does not hold the event loop). */
export interface CheckpointRestore {
  /** Reads up to `max` entries; returns how many it read. */
  read(max: number): number
  readonly done: boolean
  /** Entries read so far. */
  readonly count: number
  /** Entries still to read. */
  remaining(): number
  /** The checkpoint read (call once `done`). */
  checkpoint(): TaskCheckpoint
}

/**
 * Where a task's state lives on this machine between runs: its last local checkpoint, and the committed
 * entries its persistent stores and keyed states read from disk rather than hold in memory. The
 * embedded runtime's state directory is one (the checkpoint store, which its commits also write); a
 * runtime without one (the Kafka runtime, which restores tasks from their changelog topics) gives none,
 * and its tasks hold their state in memory. What makes a commit durable is the other half of the
 * runtime seam, `CommitBackend`.
 *
 * Not named `StateDirectory`: that is the directory's lock and metadata (`state/state-directory.ts`),
 * as Kafka Streams' `StateDirectory` locks and lists task directories; reading a task's local
 * checkpoint and its stores' files is what Kafka Streams' `ProcessorStateManager` does per task, over
 * the `.checkpoint` file. This is the part of both a runtime supplies.
 */
export interface LocalTaskState {
  /**
   * Whether the changelog records a task restores from are kept here as they are read (the Kafka
   * runtime's local records): a persistent store's records are then not loaded into memory, since the
   * store reads its entries here.
   */
  readonly keepsChangelog?: boolean
  /**
   * A task's last local checkpoint, with the entries of its `inMemoryStores`, read in steps (persistent
   * stores and keyed state read their entries here when needed: `storeDisk`, `keyedStateDisk`);
   * undefined if it has none.
   */
  restore(taskId: string, inMemoryStores: readonly string[]): CheckpointRestore | undefined
  /** Where a persistent store of a task finds its committed entries. */
  storeDisk(taskId: string, store: string): StoreDisk | undefined
  /**
   * Where a keyed state of a task restored from here finds its committed entries (undefined: none of
   * the state's entries are here).
   */
  keyedStateDisk(taskId: string, state: string): KeyedStateOnDisk | undefined
}
