import type { StreamTask } from '../processor/internal/task.js'
import type { TaskCheckpoint } from '../processor/internal/task-config.js'
import type { CommitHolds } from '../state/checkpoint-store.js'
import type { StoreBuilder } from '../state/stores.js'
import type { ChangelogListener, ChangelogRecord, TaskChangelog } from './changelog.js'
import { TaskChangelogCodec } from './changelog-records.js'
import type { CommitBackend, TaskCommit } from './commit-backend.js'

import type { CommitStats } from '../metrics.js'

export type { CommitStats } from '../metrics.js'

/** The commit stats of a runtime that has not committed yet (`commitStats()` before `start()`). */
export const NO_COMMITS: CommitStats = Object.freeze({ commits: 0, meanMs: 0, maxMs: 0, blockingMeanMs: 0, blockingMaxMs: 0 })

/**
 * Collects each task's commit (checkpoint, state changes, their changelog records) the same way for
 * every runtime, has the commit backend make them durable (none: in memory only), then hands the records
 * to the changelog listener. Keeps commit counts and durations. Where tasks restore from is not its
 * business: the task manager reads a task's local checkpoint (`LocalTaskState`) or its changelog.
 * `AlsoWrite` is what the runtime has its backend write with each commit (see `CommitBackend`).
 */
export class Committer<AlsoWrite = never> {
  private readonly checkpoints = new Map<string, TaskCheckpoint>()
  /** Per sub-topology: its stores' changelog serdes. */
  private readonly codecs = new Map<number, TaskChangelogCodec>()
  private commits = 0
  private totalMs = 0
  private maxMs = 0
  private blockedTotalMs = 0
  private blockedMaxMs = 0

  constructor(
    private backend: CommitBackend<AlsoWrite> | undefined,
    private readonly changelog?: ChangelogListener,
  ) {}

  get durable(): boolean {
    return this.backend !== undefined
  }

  /** Whether tasks must record their state changes (for the backend or the changelog). */
  get tracksChanges(): boolean {
    return this.backend !== undefined || this.changelog !== undefined
  }

  /**
   * Collects every task's commit and has the backend write them, with what `alsoWrite` says to write,
   * atomically. Returns once the commit is taken (the tasks may go on); the promise settles when it is
   * durable, after the stores and the changelog listener were told. Without a backend it is done on
   * return (undefined).
   */
  commit(tasks: readonly StreamTask[], alsoWrite?: AlsoWrite): Promise<void> | undefined {
    const started = performance.now()
    const commits: TaskCommit[] = []
    // Keyed entries are encoded after this call (a slice at a time) when no listener needs records now.
    const later = this.changelog === undefined && this.backend?.takesStateLater === true
    for (const task of tasks) {
      const taskId = task.taskId.toString()
      const previous = this.checkpoints.get(taskId)
      const checkpoint = task.lightCheckpoint()
      this.checkpoints.set(taskId, checkpoint)
      const stores = task.storeChanges()
      if (later) {
        commits.push({ taskId, checkpoint, keyed: undefined, keyedLater: (out) => task.keyedChangesLater(out), stores, records: recordsNotTaken })
        continue
      }
      const keyed = task.keyedChanges()
      const codec = this.codecOf(task)
      let records: ChangelogRecord[] | undefined
      commits.push({ taskId, checkpoint, keyed, stores, records: () => (records ??= codec.commitRecords(previous, checkpoint, keyed, stores)) })
    }
    // Encoded now: the listener must see the state as of this commit, not as it is when it is durable.
    const changes = this.changelog === undefined ? undefined : this.changelogOf(commits)
    const durable = this.backend?.commit(commits, alsoWrite)
    const blockedMs = performance.now() - started
    // The tasks whose changes this commit took (the caller's array changes as tasks come and go).
    const taken = tasks.slice()
    const done = (holds?: CommitHolds | void): void => {
      for (const task of taken) task.changesCommitted()
      if (changes !== undefined && changes.length > 0) this.changelog?.(changes)
      this.record(blockedMs, performance.now() - started, holds ?? undefined)
    }
    if (durable === undefined) {
      done()
      return undefined
    }
    return durable.then(done)
  }

  private changelogOf(commits: readonly TaskCommit[]): TaskChangelog[] {
    const changes: TaskChangelog[] = []
    for (const c of commits) {
      const records = c.records()
      if (records.length > 0) changes.push({ taskId: c.taskId, records })
    }
    return changes
  }

  private record(blockedMs: number, durableMs: number, holds: CommitHolds | undefined): void {
    this.commits++
    this.totalMs += durableMs
    if (durableMs > this.maxMs) this.maxMs = durableMs
    this.blockedTotalMs += blockedMs + (holds?.heldMs ?? 0)
    this.blockedMaxMs = Math.max(this.blockedMaxMs, blockedMs, holds?.longestMs ?? 0)
  }

  /** The codec of a task's changelog records (one per sub-topology). */
  codecOf(task: StreamTask): TaskChangelogCodec {
    return this.codecFor(task.taskId.subtopology, task.storeBuilders())
  }

  codecFor(subtopology: number, stores: readonly StoreBuilder[]): TaskChangelogCodec {
    let codec = this.codecs.get(subtopology)
    if (codec === undefined) this.codecs.set(subtopology, (codec = new TaskChangelogCodec(stores)))
    return codec
  }

  /** The last checkpoint of each task. */
  committed(): ReadonlyMap<string, TaskCheckpoint> {
    return this.checkpoints
  }

  /**
   * Commits so far; how long each took until durable (mean, max), and how long it held the event loop
   * (collecting the changes and queuing the writes).
   */
  stats(): CommitStats {
    const n = this.commits
    return { commits: n, meanMs: n === 0 ? 0 : this.totalMs / n, maxMs: this.maxMs, blockingMeanMs: n === 0 ? 0 : this.blockedTotalMs / n, blockingMaxMs: this.blockedMaxMs }
  }

  /**
   * Forgets what this committer last committed of a task that was closed without a commit or is being
   * restored: its next commit then writes its clocks and positions whole, rather than the differences
   * from a commit its state no longer follows (one that was aborted, or older than the restored one).
   */
  forget(taskId: string): void {
    this.checkpoints.delete(taskId)
  }

  /** Closes the backend (settled once its writes in flight have ended); later commits only take in-memory checkpoints. */
  close(): Promise<void> | undefined {
    const closed = this.backend?.close()
    this.backend = undefined
    return closed
  }
}

function recordsNotTaken(): never {
  throw new Error('a commit that takes keyed state later has no changelog records')
}
