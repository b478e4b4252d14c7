import type { KeyedChanges, KeyedChangesLater, KeyedEntryOut } from '../keyed/keyed-task-state.js'
import type { StoreKey } from '../processor/api.js'
import type { TaskCheckpoint } from '../processor/internal/task-config.js'
import type { CommitHolds } from '../state/checkpoint-store.js'
import type { ChangelogRecord } from './changelog.js'

/**
 * What one commit of one task holds: its clocks and positions, and what changed in its state since its
 * previous commit, structured (what a local store writes) and as changelog records (what a changelog
 * topic takes). The committer collects these the same way for every runtime.
 */
export interface TaskCommit {
  readonly taskId: string
  /** Stream time, last fire times and input positions (no state: see `keyed` and `stores`). */
  readonly checkpoint: TaskCheckpoint
  readonly keyed: KeyedChanges | undefined
  /**
   * Instead of `keyed`, for a backend that `takesStateLater`: takes the keyed changes when called (in
   * the backend's `commit` call), handing each changed entry to `out` later (copy on write).
   */
  readonly keyedLater?: (out: KeyedEntryOut) => KeyedChangesLater | undefined
  /** Per store, the entries that changed, as [key, value now]; undefined means deleted. */
  readonly stores: ReadonlyMap<string, ReadonlyArray<readonly [StoreKey, unknown]>>
  /** The same commit as changelog records (encoded on the first call). */
  records(): readonly ChangelogRecord[]
}

/**
 * What makes a commit durable, for one runtime: the embedded runtime's state directory (one lmdb
 * transaction), or a Kafka transaction of outputs, changelog records and consumed offsets. Where a
 * task's state lives locally, and how a task reads it back, is the other half of the runtime seam,
 * `LocalTaskState` (a runtime may give none).
 *
 * `AlsoWrite` is what a runtime has the backend write in the same commit besides its tasks' changes
 * (the embedded runtime's topics), in the backend's own terms; the committer hands it on untouched.
 * A backend that writes nothing else keeps the default, `never`.
 */
export interface CommitBackend<AlsoWrite = never> {
  /**
   * Whether `commit` takes keyed state through `TaskCommit.keyedLater` (it encodes entries after the
   * call, a slice at a time) rather than `keyed`. The committer uses it only when nothing needs the
   * commit's changelog records when it is taken.
   */
  readonly takesStateLater?: boolean
  /**
   * Makes every task's commit durable in one atomic step, together with what `alsoWrite` says to write
   * (the runtime's own data): all or nothing. It takes what it needs from `commits` before it returns
   * (tasks go on changing); the promise settles once the commit is durable, or rejects when it cannot
   * be, with how long its work after the call held the event loop, when it did some. The runtime starts
   * no other commit before it settles.
   */
  commit(commits: readonly TaskCommit[], alsoWrite?: AlsoWrite): Promise<CommitHolds | void>
  /**
   * Closes it. Returns a promise when writes are in flight, settled once they have ended and its files
   * are closed; undefined when it closed at once.
   */
  close(): Promise<void> | undefined
}
