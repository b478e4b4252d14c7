import type { TaskCheckpoint } from '../processor/internal/task-config.js'
import type { ChangelogRestorer } from './changelog-records.js'
import type { ChangelogSource } from './changelog-source.js'

/**
 * A task coming back, read in bounded steps between processing slices: from its changelog records, or
 * from its last local checkpoint (a `LocalTaskState`'s `CheckpointRestore` is one as it is). The
 * task manager builds the task from `checkpoint()` once `done`.
 */
export interface TaskRestore {
  /** Reads up to `max` records or entries; returns how many it read. */
  read(max: number): number
  /** Whether all is read (after a read). */
  readonly done: boolean
  /** Records or entries read so far. */
  readonly count: number
  /** Still to read, when known. */
  remaining(): number | undefined
  /** For a source whose records arrive asynchronously: resolves when a read may find records again. */
  whenReadable?(): Promise<void>
  checkpoint(): TaskCheckpoint | undefined
}

/** A restore from changelog records, folded last-wins into the task's checkpoint. */
export function changelogRestore(source: ChangelogSource, restorer: ChangelogRestorer): TaskRestore {
  let done = false
  return {
    read(max) {
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
    ...(source.whenReadable === undefined ? {} : { whenReadable: () => (source.whenReadable as () => Promise<void>)() }),
    checkpoint: () => restorer.checkpoint(),
  }
}
