import type { KeyedStateOnDisk } from '../keyed/keyed-state.js'
import type { TaskCheckpoint } from '../processor/internal/task-config.js'
import type { CheckpointStore } from '../state/checkpoint-store.js'
import type { StoreDisk } from '../state/persistent-store.js'
import type { CheckpointRestore, LocalTaskState } from './local-task-state.js'

/**
 * Where tasks' state lives locally, over a checkpoint store (lmdb) in the state directory: a task
 * restores from its last commit there, and its persistent stores and keyed states read their committed
 * entries on disk. Both runtimes can keep task state this way; what writes the commits is each
 * runtime's `CommitBackend` (the embedded runtime's `StateDirectoryBackend` is both).
 */
export class CheckpointLocalState implements LocalTaskState {
  constructor(protected readonly store: CheckpointStore) {}

  restore(taskId: string, inMemoryStores: readonly string[]): CheckpointRestore | undefined {
    const reader = this.store.readTask(taskId, inMemoryStores)
    if (reader === undefined) return undefined
    return {
      read: (max) => reader.readSome(max),
      get done() {
        return reader.done
      },
      get count() {
        return reader.read
      },
      remaining: () => reader.remaining(),
      checkpoint: (): TaskCheckpoint => {
        const { state } = reader
        const keyed = reader.keyed()
        const stores = reader.stores()
        return {
          streamTime: state?.streamTime,
          lastFires: state?.lastFires ?? {},
          positions: state?.positions ?? {},
          ...(keyed === undefined ? {} : { keyed }),
          ...(stores === undefined ? {} : { stores }),
        }
      },
    }
  }

  storeDisk(taskId: string, store: string): StoreDisk {
    return this.store.storeDisk(taskId, store)
  }

  keyedStateDisk(taskId: string, state: string): KeyedStateOnDisk | undefined {
    return this.store.keyedStateDisk(taskId, state)
  }
}
