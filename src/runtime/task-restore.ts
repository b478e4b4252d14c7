import type { TaskCheckpoint } from '../processor/internal/task-config.js'
import type { ChangelogRestorer } from './changelog-records.js'
import type { ChangelogSource } from './changelog-source.js'
import type { CheckpointRestore } from './commit-backend.js'

/**
 * A task coming back, read in bounded steps between processing slices: from its changelog records, or
 * from the last commit in the state directory. The task manager builds the task from `checkpoint()`
 * once `done`.
 */
export interface TaskRestore {
  readonly from: 'changelog' | 'stateDirectory'
  /** Reads up to `max` records or entries; returns how many it read. */
  step(max: number): number
  /** Whether all is read (after a step). */
  readonly done: boolean
  /** Records or entries read so far. */
  readonly count: number
  /** Still to read, when known. */
  remaining(): number | undefined
  /** For a source whose records arrive asynchronously: resolves when a step may read again. */
  readonly whenReadable: (() => Promise<void>) | undefined
  checkpoint(): TaskCheckpoint | undefined
}

/** A restore from changelog records, folded last-wins into the task's checkpoint. */
export function changelogRestore(source: ChangelogSource, restorer: ChangelogRestorer): TaskRestore {
  let done = false
  return {
    from: 'changelog',
    step(max) {
      const batch = source.read(max)
      for (const record of batch) restorer.apply(record)
      const left = source.remaining()
      // Read: none remaining, or (a source that cannot tell) nothing more to read.
      done = left === 0 || (left === undefined && batch.length === 0)
      return batch.length
    },
    get done() {
      return done
    },
    get count() {
      return restorer.applied
    },
    remaining: () => source.remaining(),
    whenReadable: source.whenReadable === undefined ? undefined : () => (source.whenReadable as () => Promise<void>)(),
    checkpoint: () => restorer.checkpoint(),
  }
}

/** A restore from the last commit a commit backend holds (the state directory). */
export function checkpointRestore(restore: CheckpointRestore): TaskRestore {
  return {
    from: 'stateDirectory',
    step: (max) => restore.read(max),
    get done() {
      return restore.done
    },
    get count() {
      return restore.count
    },
    remaining: () => restore.remaining(),
    whenReadable: undefined,
    checkpoint: () => restore.checkpoint(),
  }
}
