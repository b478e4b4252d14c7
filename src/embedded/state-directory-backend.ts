import type { KeyedChanges } from '../keyed/keyed-task-state.js'
import type { StoreKey } from '../processor/api.js'
import type { TaskCheckpoint } from '../processor/internal/task-config.js'
import type { CommitHolds, CommitWriter, KeyedLater } from '../state/checkpoint-store.js'
import { CheckpointLocalState } from '../runtime/checkpoint-local-state.js'
import type { CommitBackend, TaskCommit } from '../runtime/commit-backend.js'

/** What the embedded runtime writes in a commit beside its tasks' changes (its topics), through lmdb's writer. */
export type AlsoWriteCheckpoints = (writer: CommitWriter) => void

/**
 * The embedded runtime's state directory, in both of the runtime seam's roles, over its checkpoint
 * store: the commit backend, one atomic commit (journaled, see `CheckpointStore.save`) holding every
 * task's checkpoint and state changes and the runtime's topics; and where tasks' state lives locally,
 * which a task restores from and its persistent stores and keyed states read on disk
 * (`CheckpointLocalState`, which it extends). One class, as both are the same lmdb environment: what a
 * commit wrote is what a restore reads.
 */
export class StateDirectoryBackend extends CheckpointLocalState implements CommitBackend<AlsoWriteCheckpoints> {
  readonly takesStateLater = true

  /** Writes the committed tasks' checkpoints and changes (a task not running keeps its last one on disk). */
  commit(commits: readonly TaskCommit[], alsoWrite?: AlsoWriteCheckpoints): Promise<CommitHolds | void> {
    const checkpoints = new Map<string, TaskCheckpoint>()
    const keyed = new Map<string, KeyedChanges>()
    const keyedLater = new Map<string, KeyedLater>()
    const stores = new Map<string, ReadonlyMap<string, ReadonlyArray<readonly [StoreKey, unknown]>>>()
    for (const c of commits) {
      checkpoints.set(c.taskId, c.checkpoint)
      if (c.keyed !== undefined && (c.keyed.states.length > 0 || c.keyed.timers.length > 0)) keyed.set(c.taskId, c.keyed)
      if (c.keyedLater !== undefined) keyedLater.set(c.taskId, c.keyedLater)
      if (c.stores.size > 0) stores.set(c.taskId, c.stores)
    }
    return this.store.save(checkpoints, keyed, stores, alsoWrite, keyedLater)
  }

  /** Input positions of every task's last commit, keyed `topic:partition` (the lowest, if tasks share a partition). */
  restoredPositions(): Map<string, number> {
    const out = new Map<string, number>()
    for (const state of this.store.loadAll()) for (const [k, v] of Object.entries(state.positions)) out.set(k, Math.min(v, out.get(k) ?? Infinity))
    return out
  }

  close(): Promise<void> | undefined {
    return this.store.close()
  }
}
