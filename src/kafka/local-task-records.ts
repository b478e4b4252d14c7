import type { ChangelogRecord } from '../runtime/changelog.js'
import type { ChangelogSource } from '../runtime/changelog-source.js'
import { KEYED_STATE_STORE_PREFIX } from '../runtime/changelog-records.js'
import type { LocalTaskState } from '../runtime/local-task-state.js'
import type { StoreCodec } from '../state/changelog-codec.js'
import type { CheckpointStore, DurableTaskState, RecordWriter } from '../state/checkpoint-store.js'
import type { Logger } from '../util/logger.js'
import { covers } from './commit-numbers.js'
import type { CommitMark } from './commit-numbers.js'

/**
 * How old a task's local records may be: Kafka's default `delete.retention.ms`, which the changelog
 * topics keep. Compaction may drop a tombstone that old, and records older than it could keep a key
 * whose deletion the tail no longer holds.
 */
export const LOCAL_STATE_MAX_AGE_MS = 24 * 60 * 60 * 1000

/** A task's changelog partitions: its partition of each changelog topic of its sub-topology. */
export interface TaskChangelogPartitions {
  readonly taskId: string
  readonly partition: number
  readonly topics: readonly string[]
}

/** A partition's first and end offsets. */
export interface Watermarks {
  readonly lowOffset: number
  readonly highOffset: number
}

/** Where a task restores from locally: its changelog records kept here, then the changelog's tail from `offsets`. */
export interface LocalStart {
  /** Per changelog topic: where the tail starts. */
  readonly offsets: Readonly<Record<string, number>>
  /** The task's changelog records kept here (its clocks, positions, timers, keyed state, store entries). */
  readonly source: ChangelogSource
}

/** Records read from the checkpoint store per batch. */
const BATCH = 2000

/**
 * The Kafka runtime's task state in the state directory (the checkpoint store, lmdb): each task's
 * changelog records as its compacted changelog holds them, up to the offsets of its last local commit
 * (`LocalCommitBackend`), read back when a task is assigned here, and kept up with the changelog records
 * a restore reads (`tailWriter`). The bytes are the changelog's own: nothing is encoded or decoded to
 * keep them. A task with usable local records restores from them and then only its changelog's tail
 * from their offsets; one without (a fresh directory, records too old, of other topics, or past the
 * changelog's end) has them removed and restores its changelog from the beginning, keeping what it reads
 * here as it goes.
 *
 * Usable means: the same changelog topics; written within `LOCAL_STATE_MAX_AGE_MS`; each offset between
 * the partition's first offset and its end (a topic made again, or compacted past the offset, fails
 * this); at least once, the group's commit mark covers the commit that wrote them, and the group took
 * that commit's offsets (otherwise the changelog may void that commit's records while they are here).
 */
export class LocalTaskRecords {
  private readonly usable = new Map<string, { readonly offsets: Readonly<Record<string, number>>; readonly n: number | undefined }>()

  constructor(
    private readonly store: CheckpointStore,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Decides, for each task about to restore, whether its local records are usable (`take` hands them
   * out); removes those that are not.
   */
  async load(tasks: readonly TaskChangelogPartitions[], watermarks: (topic: string, partition: number) => Promise<Watermarks>, marks: (taskId: string) => CommitMark | undefined): Promise<void> {
    for (const task of tasks) {
      this.usable.delete(task.taskId)
      let state: DurableTaskState | undefined
      let why: string | undefined
      try {
        state = this.store.load(task.taskId)
      } catch (err) {
        why = (err as Error).message
      }
      if (state !== undefined) why = await this.unusable(task, state, watermarks, marks(task.taskId))
      if (why === undefined && state?.changelog !== undefined) {
        this.usable.set(task.taskId, { offsets: state.changelog.offsets, n: state.changelog.n })
        continue
      }
      if (state === undefined && why === undefined && this.store.records.count(task.taskId, undefined, 1) === 0) continue
      this.logger.info({ taskId: task.taskId }, `task ${task.taskId}: its local state is not used (${why ?? 'it has no changelog offsets'}); restoring from the changelog's beginning`)
      await this.store.removeTask(task.taskId)
    }
  }

  /**
   * A task's usable local records found by `load`, once; those of the stores `onDisk` names (its
   * persistent stores and keyed states, which read their entries here) are left where they are.
   */
  take(taskId: string, onDisk: (store: string) => boolean): LocalStart | undefined {
    const found = this.takePosition(taskId)
    if (found === undefined) return undefined
    return { offsets: found.offsets, source: this.recordsSource(taskId, onDisk) }
  }

  /**
   * Where a task's usable local records found by `load` reach, and at least once the number of the
   * commit they hold, once (a standby goes on from there).
   */
  takePosition(taskId: string): { readonly offsets: Readonly<Record<string, number>>; readonly n: number | undefined } | undefined {
    const found = this.usable.get(taskId)
    this.usable.delete(taskId)
    return found
  }

  /**
   * These records as the task manager's `LocalTaskState`: a persistent store reads its committed entries
   * here, decoded with `codecOf` (the codec of its changelog records), and so does a keyed state, a key
   * at a time. Everything else comes back through the restore's records (`take`, `tailWriter`), so
   * there is no checkpoint to read.
   */
  asLocalState(codecOf: (taskId: string, store: string) => StoreCodec): LocalTaskState {
    return {
      keepsChangelog: true,
      restore: () => undefined,
      storeDisk: (taskId, store) => this.store.records.storeDisk(taskId, store, codecOf(taskId, store)),
      keyedStateDisk: (taskId, state) => this.store.records.keyedStateDisk(taskId, KEYED_STATE_STORE_PREFIX + state),
    }
  }

  /**
   * What keeps a restoring task's local records up with the changelog records it reads past them (all
   * of them, for a task restoring from the beginning): each is written as it is read.
   */
  tailWriter(taskId: string): RecordWriter {
    return this.store.records.writer(taskId)
  }

  /**
   * A standby's records, written by its `tailWriter` (settled), reach `offsets` of its changelog topics;
   * at least once, `n` is the highest commit number among them (0: none), a commit the group took.
   */
  savePosition(taskId: string, offsets: Readonly<Record<string, number>>, n: number | undefined): Promise<void> {
    const changelog = n === undefined ? { offsets, writtenAt: this.now() } : { offsets, writtenAt: this.now(), n, confirmed: true }
    return this.store.saveTaskRecord(taskId, { streamTime: undefined, lastFires: {}, positions: {}, changelog })
  }

  private async unusable(task: TaskChangelogPartitions, state: DurableTaskState, watermarks: (topic: string, partition: number) => Promise<Watermarks>, mark: CommitMark | undefined): Promise<string | undefined> {
    const at = state.changelog
    if (at === undefined) return 'it has no changelog offsets'
    const topics = Object.keys(at.offsets).sort()
    const expected = [...task.topics].sort()
    if (topics.join(',') !== expected.join(',')) return `its changelog topics ${topics.join(', ')} are not the task's ${expected.join(', ')}`
    const age = this.now() - at.writtenAt
    if (age > LOCAL_STATE_MAX_AGE_MS) return `it is ${Math.round(age / 3_600_000)} h old, older than the changelogs keep tombstones`
    if (mark !== undefined) {
      if (at.n === undefined || at.confirmed !== true) return "the group did not take the offsets of the commit that wrote it: the changelog may leave that commit's records out"
      if (!covers(mark, at.n)) return `the group's commit mark does not cover commit ${at.n}, which wrote it`
    }
    for (const topic of topics) {
      const offset = at.offsets[topic] as number
      const { lowOffset, highOffset } = await watermarks(topic, task.partition)
      if (offset > highOffset) return `it reaches offset ${offset} of ${topic}-${task.partition}, whose end is ${highOffset}: the topic was made again`
      if (offset < lowOffset) return `it reaches offset ${offset} of ${topic}-${task.partition}, which starts at ${lowOffset} now`
    }
    return undefined
  }

  /** A task's local records, a batch at a time. */
  private recordsSource(taskId: string, onDisk: (store: string) => boolean): ChangelogSource {
    const records = this.store.records.of(taskId, onDisk)
    let left = this.store.records.count(taskId, onDisk)
    let done = false
    return {
      // Never 0 before the iterator ended: the tail is read only once these are.
      remaining: () => (done ? 0 : Math.max(1, left)),
      read(max) {
        const out: ChangelogRecord[] = []
        while (!done && out.length < Math.min(max, BATCH)) {
          const next = records.next()
          if (next.done === true) done = true
          else out.push(next.value)
        }
        left = Math.max(0, left - out.length)
        return out
      },
    }
  }
}
