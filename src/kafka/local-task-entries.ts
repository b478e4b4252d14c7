import type { KeyedChanges } from '../keyed/keyed-task-state.js'
import type { TimerRecord } from '../keyed/timer-service.js'
import type { StoreKey } from '../processor/api.js'
import type { TaskCheckpoint } from '../processor/internal/task-config.js'
import type { ChangelogRecord } from '../runtime/changelog.js'
import { decodeTimer, KEYED_STATE_STORE_PREFIX, TASK_STORE, TIMER_STORE, timerKey } from '../runtime/changelog-records.js'
import type { TaskChangelogCodec } from '../runtime/changelog-records.js'
import type { ChangelogSource } from '../runtime/changelog-source.js'
import type { CheckpointStore, DurableTaskState, TaskEntry, TaskEntryWriter } from '../state/checkpoint-store.js'
import { decodeStoreKey, unpackValue } from '../state/changelog-codec.js'
import type { StateKind } from '../keyed/api.js'
import type { Logger } from '../util/logger.js'
import { covers } from './commit-numbers.js'
import type { CommitMark } from './commit-numbers.js'

/**
 * How old a task's local entries may be: Kafka's default `delete.retention.ms`, which the changelog
 * topics keep. Compaction may drop a tombstone that old, and entries older than it could keep a key
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

/** Where a task restores from locally: its entries as records, then the changelog's tail from `offsets`. */
export interface LocalStart {
  /** Per changelog topic: where the tail starts. */
  readonly offsets: Readonly<Record<string, number>>
  /** The task's entries (clocks, positions, timers, keyed state, store entries) as changelog records. */
  readonly source: ChangelogSource
}

/** Records read from the checkpoint store per batch. */
const BATCH = 2000

/**
 * The Kafka runtime's task state in the state directory (the checkpoint store, lmdb): what each commit
 * left there (`LocalCommitBackend`), read back when a task is assigned here, and kept up with the
 * changelog records a restore reads (`tailWriter`). A task with usable local entries restores from them
 * and then only its changelog's tail from their offsets; one without (a fresh directory, entries too
 * old, of other topics, or past the changelog's end) has them removed and restores its changelog from the
 * beginning, writing what it reads here as it goes.
 *
 * Usable means: the same changelog topics; written within `LOCAL_STATE_MAX_AGE_MS`; each offset between
 * the partition's first offset and its end (a topic made again, or compacted past the offset, fails
 * this); at least once, the group's commit mark covers the commit that wrote them, and the group took
 * that commit's offsets (otherwise the changelog may void that commit's records while the entries hold
 * them).
 */
export class LocalTaskEntries {
  private readonly usable = new Map<string, { readonly state: DurableTaskState; readonly offsets: Readonly<Record<string, number>> }>()
  /** Per task restoring: its timers by record key (a changelog tombstone of a timer does not carry its sequence number, its entry key does). */
  private readonly timers = new Map<string, Map<string, TimerRecord>>()

  constructor(
    private readonly store: CheckpointStore,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Decides, for each task about to restore, whether its local entries are usable (`take` hands them
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
        this.usable.set(task.taskId, { state, offsets: state.changelog.offsets })
        continue
      }
      if (state === undefined && why === undefined && this.store.countTaskEntries(task.taskId, 1) === 0) continue
      this.logger.info({ taskId: task.taskId }, `task ${task.taskId}: its local state is not used (${why ?? 'it has no changelog offsets'}); restoring from the changelog's beginning`)
      await this.store.removeTask(task.taskId)
    }
  }

  /** A task's usable local entries found by `load`, once. */
  take(taskId: string, codec: TaskChangelogCodec): LocalStart | undefined {
    const found = this.usable.get(taskId)
    this.usable.delete(taskId)
    if (found === undefined) return undefined
    const timers = this.timersOf(taskId)
    return { offsets: found.offsets, source: this.entriesSource(taskId, found.state, codec, timers) }
  }

  /**
   * What keeps a restoring task's entries up with the changelog records it reads past them (all of them,
   * for a task restoring from the beginning): each record is written to its entry as it is read.
   * Records of the task's clocks and positions are not: its commits write them whole.
   */
  tailWriter(taskId: string, codec: TaskChangelogCodec): { readonly write: (record: ChangelogRecord) => void; readonly writer: TaskEntryWriter } {
    const writer = this.store.entryWriter(taskId)
    const timers = this.timersOf(taskId)
    const write = (record: ChangelogRecord): void => {
      const { store, value } = record
      if (store === TIMER_STORE) {
        const id = bytesId(record.key)
        const before = timers.get(id)
        if (before !== undefined) writer.timer(before, false)
        if (value === null) timers.delete(id)
        else {
          const timer = decodeTimer(record)
          timers.set(id, timer)
          writer.timer(timer, true)
        }
      } else if (store.startsWith(KEYED_STATE_STORE_PREFIX)) {
        const state = store.slice(KEYED_STATE_STORE_PREFIX.length)
        const key = decodeStoreKey(record.key)
        if (value === null) writer.state(state, 'value', key, undefined)
        else {
          const [kind, entries] = unpackValue(value) as [StateKind, unknown]
          writer.state(state, kind, key, entries)
        }
      } else if (store !== TASK_STORE) {
        const c = codec.codec(store)
        writer.store(store, c.decodeKey(record.key), value === null ? undefined : c.decodeValue(value))
      }
    }
    return { write, writer }
  }

  /** The task restored (or left): its timers are not needed any more. */
  done(taskId: string): void {
    this.timers.delete(taskId)
  }

  private timersOf(taskId: string): Map<string, TimerRecord> {
    let timers = this.timers.get(taskId)
    if (timers === undefined) this.timers.set(taskId, (timers = new Map()))
    return timers
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

  /** A task's entries as changelog records, a batch at a time; the timers read are kept for its tail. */
  private entriesSource(taskId: string, state: DurableTaskState, codec: TaskChangelogCodec, timers: Map<string, TimerRecord>): ChangelogSource {
    const entries = this.store.taskEntries(taskId)
    const checkpoint: TaskCheckpoint = { streamTime: state.streamTime, lastFires: state.lastFires, positions: state.positions }
    let first = true
    let done = false
    let left = this.store.countTaskEntries(taskId)
    return {
      remaining: () => (done ? 0 : left + (first ? 1 : 0)),
      read(max) {
        if (done) return []
        const states: Array<KeyedChanges['states'][number]> = []
        const timerChanges: Array<KeyedChanges['timers'][number]> = []
        const stores = new Map<string, Array<readonly [StoreKey, unknown]>>()
        let n = 0
        while (n < Math.min(max, BATCH)) {
          const next = entries.next()
          if (next.done === true) {
            done = true
            break
          }
          n++
          const e: TaskEntry = next.value
          if (e.type === 'timer') {
            timerChanges.push({ added: true, record: e.record })
            timers.set(bytesId(timerKey(e.record)), e.record)
          } else if (e.type === 'state') states.push({ state: e.state, kind: e.kind, key: e.key, entries: e.entries })
          else {
            let list = stores.get(e.store)
            if (list === undefined) stores.set(e.store, (list = []))
            list.push([e.key, e.value])
          }
        }
        left = Math.max(0, left - n)
        // The clocks and positions with the first batch; later ones differ from them in nothing.
        const records = codec.commitRecords(first ? undefined : checkpoint, checkpoint, { states, timers: timerChanges }, stores)
        first = false
        return records
      },
    }
  }
}

/** A record key's bytes as a string (one character per byte), to compare keys by their bytes. */
function bytesId(key: Uint8Array): string {
  return (key instanceof Buffer ? key : Buffer.from(key.buffer, key.byteOffset, key.byteLength)).toString('latin1')
}
