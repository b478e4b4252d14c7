import { statSync } from 'node:fs'
import { join } from 'node:path'
import { open } from 'lmdb'
import type { Database, Key, RootDatabase } from 'lmdb'
import { PunctualError } from '../errors.js'
import type { KeyedChanges, KeyedChangesLater, KeyedEntryOut, TimerChange } from '../keyed/keyed-task-state.js'
import type { StateKind } from '../keyed/api.js'
import type { KeyedStateOnDisk } from '../keyed/keyed-state.js'
import type { TimerRecord } from '../keyed/timer-service.js'
import type { StoreKey } from '../processor/api.js'
import { CommitJournal, Handled } from './commit-journal.js'
import type { JournalWrite } from './commit-journal.js'
import { keyPart } from './key-part.js'
import type { StoreDisk } from './persistent-store.js'
import { TaskRecords, recordKey, recordsPrefix } from './task-records.js'
import type { ChangelogBytes } from './task-records.js'
import { TaskCheckpointReader } from './task-checkpoint-reader.js'
import type { Range } from './task-checkpoint-reader.js'
import { writeError } from './write-error.js'

/** A task's commit record: stream time, the last fire time of each punctuation, its input positions. */
export interface DurableTaskState {
  readonly streamTime: number | undefined
  readonly lastFires: Readonly<Record<string, number>>
  /** Next offset to read per input, keyed `topic:partition`. */
  readonly positions: Readonly<Record<string, number>>
  /** Where the task's entries stand in its changelog topics (a runtime whose commits write changelogs: Kafka). */
  readonly changelog?: ChangelogPosition
}

/**
 * How far into a task's changelog topics its local entries reach: every entry is the changelog's as of
 * `offsets` or later, never ahead of what the changelog holds as committed (a restore reads the tail
 * from there). Written with each commit.
 */
export interface ChangelogPosition {
  /** Per changelog topic (the task's partition of it): the offset the tail starts at. */
  readonly offsets: Readonly<Record<string, number>>
  /** When it was written (ms since the epoch): a tail older than the changelog keeps tombstones may miss deletions. */
  readonly writtenAt: number
  /** At least once: the number of the commit written (`commit-numbers.ts`). */
  readonly n?: number
  /** At least once: whether the group took that commit's offsets. */
  readonly confirmed?: boolean
}

export type { ChangelogBytes, RecordWriter } from './task-records.js'

type KeyPart = string | number | boolean

/** What `settledCopy` answers for a value that can change and is not a plain record of values that cannot. */
const LIVE: unique symbol = Symbol('live')

/**
 * `value` as a commit may encode it later: itself when it cannot change (a number, a string, a
 * deletion), a shallow copy when it is an array or a plain object of such values, LIVE otherwise (a
 * nested object, a Buffer, a class instance: encoded at once). The copy costs far less than encoding.
 */
function settledCopy(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value
  if (Array.isArray(value)) {
    for (const x of value as unknown[]) if (typeof x === 'object' && x !== null) return LIVE
    return value.slice()
  }
  if (Object.getPrototypeOf(value) !== Object.prototype) return LIVE
  const record = value as Record<string, unknown>
  for (const k in record) {
    const x = record[k]
    if (typeof x === 'object' && x !== null) return LIVE
  }
  return { ...record }
}

/** Takes a task's keyed changes for a commit that gets the state entries later (`TaskCommit.keyedLater`). */
export type KeyedLater = (out: KeyedEntryOut) => KeyedChangesLater | undefined

/** What a commit hands the writers beside the checkpoints (the embedded runtime's topics). */
export interface CommitWriter {
  /** Work done before the commit is sealed, a slice at a time with the commit's other work (encoding records). */
  later(work: () => void): void
  /** A write queued in the event turn that seals the commit: lmdb commits it with the commit, in one transaction. */
  atSeal(write: () => void): void
}

/** How long a commit's slices held the event loop after the call that took it: in all, and the longest. */
export interface CommitHolds {
  readonly heldMs: number
  readonly longestMs: number
}

/** How long one slice of a commit may hold the event loop, in ms. */
export const SLICE_MS = 2

/**
 * Writes above which a commit goes through the journal in slices (`CheckpointStore.save`): queued at
 * once, 4,096 writes hold the event loop about 10 ms here.
 */
export const SLICE_COMMITS_ABOVE = 4096

/** Where a commit's keyed writes go: queued on lmdb as they come, or into the journal. */
interface KeyedWrites {
  put(key: KeyPart[], value: unknown): void
  remove(key: KeyPart[]): void
}

/** Runs a commit's work a slice per event turn and keeps how long the slices held the loop. */
class Holds {
  private heldMs = 0
  private longestMs = 0

  constructor(private readonly isClosed: () => boolean) {}

  /** Calls `step(deadline)` once per event turn, from the next one on, until it returns true. */
  sliced(step: (deadline: number) => boolean): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const run = (): void => {
        // A runtime that failed closes the store with a commit in flight: it ends there, unwritten.
        if (this.isClosed()) {
          reject(new PunctualError('STATE_DIR', 'the checkpoint store was closed before the commit was durable'))
          return
        }
        const started = performance.now()
        let done: boolean
        try {
          done = step(started + SLICE_MS)
        } catch (err) {
          reject(err instanceof PunctualError ? err : writeError(err))
          return
        }
        const ms = performance.now() - started
        this.heldMs += ms
        if (ms > this.longestMs) this.longestMs = ms
        if (done) resolve()
        else setImmediate(run)
      }
      setImmediate(run)
    })
  }

  result(): CommitHolds {
    return { heldMs: this.heldMs, longestMs: this.longestMs }
  }
}

/**
 * The keyed database writes objects in values (keyed state cells, store values) as plain msgpack maps
 * (msgpackr's `useRecords: false`, which lmdb passes on; its types omit it). As records, each entry
 * carries its own record definition (lmdb shares none here), and decoding that costs more than the
 * map: reading 1 M state entries took 24–56% less time with maps (three runs). Entries written as records still read.
 */
const KEYED_DB = { name: 'keyed', useRecords: false }
/** Kafka instances' tasks' changelog records (see `CheckpointStore.records`). */
const RECORDS_DB = 'changelog-records'

/**
 * Task checkpoints in the state directory (`<stateDir>/checkpoints`, lmdb), written in one transaction
 * per commit: stream time and punctuation last-fire times (what `onMissed: 'fireOnce'` needs), and the
 * changes to keyed state, timers and stores since the previous commit (incremental: a commit writes what
 * changed, not everything). Other databases in the same environment (`database`) commit in the same
 * transactions: the embedded runtime keeps its topics' records there. A Kafka instance keeps its tasks'
 * changelog records instead (`saveRecordsAfter`, `records`): the bytes its changelog topics hold.
 */
export class CheckpointStore {
  private constructor(
    private readonly env: RootDatabase,
    private readonly tasks: Database<DurableTaskState, string>,
    /**
     * ['s', task, state, key] -> [key, kind, entries]; ['T', task, group, timestamp, seq, owner, key]
     * (`timerEntryKey`: no value); ['kv', task, store, key] -> [key, value]. Arrays, not objects:
     * msgpack encodes and decodes them with no record structure per entry (that was a third of a
     * commit's time).
     */
    private readonly keyed: Database<unknown, KeyPart[]>,
    /** Where a large commit's keyed writes go first (see `save`). */
    private readonly journal: CommitJournal,
    /**
     * Tasks' changelog records as a Kafka instance keeps them (`saveRecordsAfter`, `records`): key `<task> NUL
     * <store> NUL <record key bytes>` -> the record's value bytes; a tombstone removes the key. What the
     * task's compacted changelog holds, up to the task record's `changelog` offsets.
     */
    recordsDb: Database<Buffer, Buffer>,
    /** The journal of the records' commits. */
    private readonly recordsJournal: CommitJournal,
    /** A commit with more writes than this goes through the journal, in slices. */
    private readonly sliceAbove: number,
  ) {
    this.records = new TaskRecords(recordsDb, () => this.written())
  }

  /** Kafka instances' tasks' changelog records: read, removed, written by restores, read by persistent stores. */
  readonly records: TaskRecords

  /**
   * A named database in the checkpoints' environment: what is written to it inside `save`'s `alsoWrite`
   * commits (or not) with the checkpoints.
   */
  database<V = unknown, K extends Key = Key>(name: string, options: { encoding?: 'binary' } = {}): Database<V, K> {
    return this.env.openDB<V, K>({ name, ...options })
  }

  static open(stateDir: string, options: { sliceCommitsAbove?: number } = {}): CheckpointStore {
    try {
      // noSync: a commit reaches the OS when its promise settles, so it survives the process being killed; it is
      // not flushed to the device each time (an OS crash or power loss may lose the latest commits).
      const path = join(stateDir, 'checkpoints')
      const env = open({ path, compression: false, noSync: true })
      // A truncated file would crash the process (SIGBUS) on the first read of a missing page: check
      // the size the last commit recorded (in the meta pages, read on open) before reading anything.
      const { lastPageNumber, pageSize } = env.getStats() as { lastPageNumber: number; pageSize: number }
      const size = statSync(join(path, 'data.mdb')).size
      if (size < (lastPageNumber + 1) * pageSize) {
        env.close()
        throw new Error(`data.mdb is truncated: ${size} bytes, its last commit needs ${(lastPageNumber + 1) * pageSize}`)
      }
      const keyed = env.openDB<unknown, KeyPart[]>(KEYED_DB)
      // What a process that stopped mid-commit left in the journal is applied (sealed) or dropped first.
      const journal = CommitJournal.open(env, KEYED_DB.name)
      migrateTimers(keyed)
      const records = env.openDB<Buffer, Buffer>({ name: RECORDS_DB, encoding: 'binary', keyEncoding: 'binary' })
      const recordsJournal = CommitJournal.open(env, RECORDS_DB, `${RECORDS_DB}-journal`, { keyEncoding: 'binary' })
      return new CheckpointStore(env, env.openDB<DurableTaskState, string>({ name: 'tasks' }), keyed, journal, records, recordsJournal, options.sliceCommitsAbove ?? SLICE_COMMITS_ABOVE)
    } catch (err) {
      throw new PunctualError('STATE_DIR', `state directory ${stateDir}: the checkpoint store cannot be opened (${(err as Error).message}); refusing to start rather than reset it`, { cause: err })
    }
  }

  load(taskId: string): DurableTaskState | undefined {
    const state = this.tasks.get(taskId)
    if (state === undefined) return undefined
    if (typeof state !== 'object' || state === null || (state.streamTime !== undefined && typeof state.streamTime !== 'number') || typeof state.lastFires !== 'object' || typeof state.positions !== 'object' || (state.changelog !== undefined && !isChangelogPosition(state.changelog))) {
      throw new PunctualError('STATE_DIR', `checkpoint of task ${taskId} is corrupt; refusing to start rather than reset it`)
    }
    return state
  }

  /** Every task's commit record. */
  loadAll(): DurableTaskState[] {
    return this.loadEach().map(([, state]) => state)
  }

  /** Every task's commit record, with the task's id. */
  loadEach(): Array<[taskId: string, state: DurableTaskState]> {
    const out: Array<[string, DurableTaskState]> = []
    for (const { key } of this.tasks.getRange()) out.push([key, this.load(key) as DurableTaskState])
    return out
  }

  /**
   * Reads a task's last commit in steps (`TaskCheckpointReader`); undefined when the task has none. Its
   * small commit record is read now; its timers and the entries of `inMemoryStores` in steps. Keyed
   * state stays on disk (`keyedStateDisk`).
   */
  readTask(taskId: string, inMemoryStores: readonly string[]): TaskCheckpointReader | undefined {
    const state = this.load(taskId)
    const ranges = [['T', taskId], ...inMemoryStores.map((name) => ['kv', taskId, name])].map(prefixRange)
    // A copy: lmdb's count marks the options object it is given as a count.
    const count = (range: Range): number => this.keyed.getKeysCount({ ...range })
    if (state === undefined && [prefixRange(['s', taskId]), ...ranges].every((range) => count({ ...range, limit: 1 } as Range) === 0)) return undefined
    return new TaskCheckpointReader(this.keyed, ranges, state, () => ranges.reduce((n, range) => n + count(range), 0))
  }

  /**
   * A keyed state's committed entries (`<processor>/<state>` of a task), read a key at a time (kind
   * undefined: there are none yet).
   */
  keyedStateDisk(taskId: string, state: string): KeyedStateOnDisk {
    const db = this.keyed
    const range = prefixRange(['s', taskId, state])
    let kind: StateKind | undefined
    for (const { value } of db.getRange({ ...range, limit: 1 })) kind = (value as SavedKeyedState)[1]
    return {
      kind,
      disk: {
        get: (key) => (db.get(['s', taskId, state, keyPart(key)]) as SavedKeyedState | undefined)?.[2],
        *entries() {
          for (const { value } of db.getRange(range)) {
            const [key, , entries] = value as SavedKeyedState
            yield [key, entries]
          }
        },
      },
    }
  }

  /** A store's committed entries, read from disk on demand (persistent stores). */
  storeDisk(taskId: string, store: string): StoreDisk {
    const db = this.keyed
    const range = { start: ['kv', taskId, store], end: ['kv', taskId, `${store}\u0000`] }
    return {
      get: (key) => (db.get(['kv', taskId, store, keyPart(key)]) as [StoreKey, unknown] | undefined)?.[1],
      *entries(from) {
        for (const { value } of db.getRange(from === undefined ? range : { ...range, start: ['kv', taskId, store, keyPart(from)] })) {
          const [k, v] = value as [StoreKey, unknown]
          yield [k, v]
        }
      },
      // A copy: lmdb marks the options object it counts with as a count.
      count: () => db.getKeysCount({ ...range }),
    }
  }

  /**
   * Takes a commit of tasks' changelog records now (their bytes copied into the journal) and writes it
   * once `durable` resolves, with the task records `states` makes of its value: nothing of it is
   * written when `durable` rejects (it rejects with its error), nor when the store closes first. A
   * process that stops before the seal leaves the previous commit; one that stops after it, this one
   * (applied at the next open). Commits must not overlap: the next is taken once this one settled, or a
   * smaller later one could be applied before it. Each record puts its value at its key in the task's
   * records (`records`), a tombstone removes it: what the task's compacted changelog holds. A Kafka
   * instance's local commit, after the commit on Kafka.
   */
  saveRecordsAfter<T>(durable: Promise<T>, states: (durable: T) => ReadonlyMap<string, DurableTaskState>, records: ReadonlyMap<string, readonly ChangelogBytes[]>): Promise<CommitHolds | void> {
    durable.catch(() => {})
    const journal = this.recordsJournal.begin()
    try {
      for (const [taskId, list] of records) {
        const prefix = recordsPrefix(taskId)
        for (const r of list) {
          const key = recordKey(prefix, taskId, r.store, r.key)
          if (r.value === null) journal.remove(key)
          else journal.put(key, r.value)
        }
      }
    } catch (err) {
      return Promise.reject(writeError(err))
    }
    const tasks = (value: unknown): void => {
      for (const [taskId, s] of states(value as T)) this.tasks.put(taskId, s).catch(ignore)
    }
    return this.finish(journal, [], tasks, durable)
  }

  /**
   * Writes a task's record alone, outside any commit: a standby's, whose changelog records a `writer`
   * wrote (and which settled) up to the offsets of `state.changelog`.
   */
  async saveTaskRecord(taskId: string, state: DurableTaskState): Promise<void> {
    await this.tasks.put(taskId, state)
  }

  /**
   * Removes a task's record and its changelog records (a state that cannot be used: the task restores
   * from the beginning of its changelog). The record goes first: a process that stops part-way leaves
   * records without a task record, which the next restore removes again.
   */
  async removeTask(taskId: string): Promise<void> {
    await this.tasks.remove(taskId)
    await this.records.remove(taskId)
  }

  /**
   * Writes every task's state, keyed changes and store changes, and whatever `alsoWrite` hands the
   * commit (the embedded runtime's topics), atomically: all or nothing, also across a crash.
   *
   * The call takes the commit: the changed entries of `keyedLater` are only taken (copy on write: each
   * is handed over when the commit gets to it, or before anything reads or changes it); the entries of
   * `keyedChanges`, and those of `storeChanges` that are neither values that cannot change nor plain
   * records of them (copied, see `settledCopy`), are written or encoded now. Then:
   * - a commit of at most `sliceAbove` writes queues them all now, as lmdb writes of one transaction
   *   (lmdb encodes and queues a write in about 2–3 µs on the main thread, and writes it on its own);
   * - a larger one goes through the journal (`CommitJournal`), a slice per event turn (`SLICE_MS` at
   *   most each): the taken entries, the timers, the settled store entries and `alsoWrite`'s deferred
   *   work are encoded into it; one
   *   turn seals it, with the task records and `alsoWrite`'s writes, in one transaction; then its writes
   *   are applied. That bounds how long the commit holds the event loop at once, for more work in all.
   * The promise settles once everything is committed (and applied); until then, reads of the disk see
   * the previous commit or part of this one, which the stores hold in memory meanwhile.
   */
  save(
    states: ReadonlyMap<string, DurableTaskState>,
    keyedChanges: ReadonlyMap<string, KeyedChanges> = new Map(),
    storeChanges: ReadonlyMap<string, ReadonlyMap<string, ReadonlyArray<readonly [StoreKey, unknown]>>> = new Map(),
    alsoWrite?: (writer: CommitWriter) => void,
    keyedLater: ReadonlyMap<string, KeyedLater> = new Map(),
  ): Promise<CommitHolds | void> {
    return this.write(states, keyedChanges, storeChanges, alsoWrite, keyedLater)
  }

  private write(
    states: ReadonlyMap<string, DurableTaskState>,
    keyedChanges: ReadonlyMap<string, KeyedChanges>,
    storeChanges: ReadonlyMap<string, ReadonlyMap<string, ReadonlyArray<readonly [StoreKey, unknown]>>>,
    alsoWrite: ((writer: CommitWriter) => void) | undefined,
    keyedLater: ReadonlyMap<string, KeyedLater>,
  ): Promise<CommitHolds | void> {
    /** Where the keyed writes go; decided once the commit is taken (nothing is handed over before). */
    const to: { writes?: KeyedWrites } = {}
    const put = (key: KeyPart[], value: unknown): void => (to.writes as KeyedWrites).put(key, value)
    const remove = (key: KeyPart[]): void => (to.writes as KeyedWrites).remove(key)
    const stateEntry =
      (taskId: string): KeyedEntryOut =>
      (state, kind, key, entries) => {
        const k = ['s', taskId, state, keyPart(key)]
        if (entries === undefined) remove(k)
        else put(k, [key, kind, entries])
      }
    const taken: Array<{ taskId: string; changes: KeyedChangesLater }> = []
    let count = 0
    try {
      for (const [taskId, take] of keyedLater) {
        const changes = take(stateEntry(taskId))
        if (changes === undefined) continue
        taken.push({ taskId, changes })
        count += changes.states + changes.timers.length
      }
      for (const changes of keyedChanges.values()) count += changes.states.length + changes.timers.length
      for (const stores of storeChanges.values()) for (const changes of stores.values()) count += changes.length
    } catch (err) {
      return Promise.reject(writeError(err))
    }
    // Eager keyed changes (`keyedChanges`) are small (the committer takes large ones later): written at once.
    const sliced = count > this.sliceAbove && keyedChanges.size === 0
    const journal = sliced ? this.journal.begin() : undefined
    const handled = new Handled()
    const tasks = (): void => {
      for (const [taskId, s] of states) handled.add(this.tasks.put(taskId, { streamTime: s.streamTime, lastFires: s.lastFires, positions: s.positions }))
    }
    // Queued at once, the task records go first: the event turn's first write has a promise of its own.
    if (journal === undefined) tasks()
    to.writes =
      journal === undefined
        ? { put: (k, v) => handled.add(this.keyed.put(k, v)), remove: (k) => handled.add(this.keyed.remove(k)) }
        : { put: (k, v) => journal.put(k, this.encode(v)), remove: (k) => journal.remove(k) }
    /** Work after this call, in order, a slice at a time: each returns true when it is done. */
    const later: Array<(deadline: number) => boolean> = []
    const atSeal: Array<() => void> = []
    const timers = (taskId: string, changes: readonly TimerChange[]): void => {
      let next = 0
      const step = (deadline: number): boolean => {
        while (next < changes.length) {
          const { added, record } = changes[next++] as TimerChange
          const k = timerEntryKey(taskId, record)
          if (added) put(k, null)
          else remove(k)
          if (next % 256 === 0 && performance.now() >= deadline) return next === changes.length
        }
        return true
      }
      if (sliced) later.push(step)
      else step(Infinity)
    }
    try {
      for (const [taskId, changes] of keyedChanges) {
        const out = stateEntry(taskId)
        for (const c of changes.states) out(c.state, c.kind, c.key, c.entries)
        timers(taskId, changes.timers)
      }
      for (const { taskId, changes } of taken) {
        if (sliced) later.push((deadline) => changes.handSome(deadline))
        else changes.handSome(Infinity)
        timers(taskId, changes.timers)
      }
      for (const [taskId, stores] of storeChanges) {
        for (const [store, changes] of stores) {
          const write = (key: StoreKey, value: unknown): void => {
            const k = ['kv', taskId, store, keyPart(key)]
            if (value === undefined) remove(k)
            else put(k, [key, value])
          }
          if (!sliced) {
            for (const [key, value] of changes) write(key, value)
            continue
          }
          // A store's value is live: what the commit encodes later must be what it is now. A value
          // that cannot change, or a copy of one of plain fields (a count, a window's cell), waits for
          // a slice; a deeper one is encoded now.
          const settled: Array<readonly [StoreKey, unknown]> = []
          for (const [key, value] of changes) {
            const v = settledCopy(value)
            if (v === LIVE) write(key, value)
            else settled.push([key, v])
          }
          let next = 0
          later.push((deadline) => {
            while (next < settled.length) {
              const [key, value] = settled[next++] as readonly [StoreKey, unknown]
              write(key, value)
              if (next % 256 === 0 && performance.now() >= deadline) return next === settled.length
            }
            return true
          })
        }
      }
      if (journal === undefined) {
        // Every write queued in this event turn goes into one lmdb transaction.
        alsoWrite?.({ later: (work) => work(), atSeal: (write) => write() })
        return this.written()
      }
      alsoWrite?.({
        later: (work) =>
          void later.push(() => {
            work()
            return true
          }),
        atSeal: (write) => void atSeal.push(write),
      })
      return this.finish(
        journal,
        later,
        () => {
          tasks()
          for (const write of atSeal) write()
        },
        undefined,
      )
    } catch (err) {
      return Promise.reject(writeError(err))
    }
  }

  /** The rest of a sliced `save` (or a `saveRecordsAfter`, sealed once `after` resolves), a slice per event turn. */
  private async finish(journal: JournalWrite, later: ReadonlyArray<(deadline: number) => boolean>, seal: (durable: unknown) => void, after: Promise<unknown> | undefined): Promise<CommitHolds> {
    const holds = new Holds(() => this.closed)
    let next = 0
    await holds.sliced((deadline) => {
      while (next < later.length) {
        if (!(later[next] as (deadline: number) => boolean)(deadline)) return false
        next++
        if (performance.now() >= deadline) return false
      }
      return true
    })
    // Nothing of the journal is on disk before its seal: a commit whose other half failed is dropped
    // here, and so is one whose store closes meanwhile (the next step rejects, the store being closed).
    const durable = after === undefined ? undefined : await Promise.race([after, this.closing])
    // One turn: lmdb commits the marker with everything else queued in it, in one transaction.
    let sealed: Promise<void> | undefined
    await holds.sliced(() => {
      journal.seal()
      seal(durable)
      sealed = this.written()
      return true
    })
    await sealed
    // Each slice's writes are a transaction of their own: every one's outcome is awaited (a failure
    // that nobody awaits is an unhandled rejection in lmdb-js).
    const applied: Array<Promise<void>> = []
    let failed = false
    await holds.sliced((deadline) => {
      // No more transactions once one failed (a full disk): the commit fails anyway, the sealed
      // journal applies it at the next open, and a run of failed writes can corrupt lmdb-js's
      // memory (glibc then aborts the process before the error is reported).
      if (failed) return true
      const done = journal.apply(deadline)
      const written = this.written()
      // Handled now, reported by Promise.all below: a slice that fails before the last one is queued
      // must not be an unhandled rejection meanwhile.
      written.catch(() => {
        failed = true
      })
      applied.push(written)
      return done
    })
    await Promise.all(applied)
    return holds.result()
  }

  /**
   * Settles when the writes queued in this event turn are committed. lmdb-js may give the turn's
   * transaction one more promise when the turn ends (its start); that one is awaited too, from the next
   * turn, so that a failed transaction never leaves a rejection nobody handles (which ends the process).
   */
  private written(): Promise<void> {
    const now = this.committed()
    now.catch(ignore)
    const next = new Promise<void>((resolve, reject) => setImmediate(() => this.committed().then(resolve, reject)))
    next.catch(ignore)
    return Promise.all([now, next]).then(ignore)
  }

  /** Settles when every write queued so far is committed. */
  private committed(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.env.committed.then(
        () => resolve(),
        (err: unknown) => {
          // lmdb rejects a failed batch with a generic error whose `commitError` carries the reason.
          const detail = (err as { commitError?: Promise<unknown> }).commitError
          if (detail === undefined) reject(writeError(err))
          else detail.then(() => reject(writeError(err)), (cause: unknown) => reject(writeError(cause)))
        },
      )
    })
  }

  /** A value as the keyed database encodes it (the journal copies it out of the encoder's buffer). */
  private encode(value: unknown): Uint8Array {
    return (this.keyed as unknown as { encoder: { encode(v: unknown): Uint8Array } }).encoder.encode(value)
  }

  private closed = false
  private markClosed: (() => void) | undefined
  /** Settles when `close` is called: a `saveRecordsAfter` waiting for its other half stops waiting then. */
  private readonly closing = new Promise<void>((resolve) => (this.markClosed = resolve))

  /**
   * Closes the store. With writes in flight, returns a promise settled once lmdb has ended them and
   * closed its files (undefined when it closed at once). Until then lmdb's writer may hold the file's
   * write lock, waiting for this thread to end its batch: a store opened on the same directory meanwhile
   * (whose recovery writes synchronously) would wait for that lock forever, blocking the thread the
   * writer waits for.
   */
  close(): Promise<void> | undefined {
    this.closed = true
    this.markClosed?.()
    const closed = this.env.close()
    return (this.env as { status?: string }).status === 'closed' ? undefined : closed
  }
}



/**
 * A timer's entry: the whole timer in the key, in firing order within the task (group: event-time user
 * timers, event-time TTL timers, then the processing-time ones; then timestamp, then registration
 * sequence), so a restore reads keys only, already in the order the queues take them.
 */
function timerEntryKey(taskId: string, r: TimerRecord): KeyPart[] {
  return ['T', taskId, (r.domain === 'processing' ? 2 : 0) | (r.kind === 'ttl' ? 1 : 0), r.timestamp, r.seq, r.owner, keyPart(r.key)]
}

/**
 * Rewrites timers of the earlier layout (['t', task, kind, domain, owner, key, timestamp] -> [key,
 * seq], not in firing order) as `timerEntryKey`s, in one transaction, when a state directory has any.
 */
function migrateTimers(db: Database<unknown, KeyPart[]>): void {
  const old = prefixRange(['t'])
  if (db.getKeysCount({ ...old, limit: 1 }) === 0) return
  const entries = [...db.getRange(old)].map(({ key, value }) => ({ key, value }))
  db.transactionSync(() => {
    for (const { key, value } of entries) {
      const [k, seq] = value as [StoreKey, number]
      db.putSync(timerEntryKey(key[1] as string, { kind: key[2] as 'user' | 'ttl', domain: key[3] as 'event' | 'processing', owner: key[4] as string, key: k, timestamp: key[6] as number, seq }), null)
      db.removeSync(key)
    }
  })
}

function isChangelogPosition(value: unknown): value is ChangelogPosition {
  if (typeof value !== 'object' || value === null) return false
  const p = value as ChangelogPosition
  return typeof p.offsets === 'object' && p.offsets !== null && Object.values(p.offsets).every((o) => typeof o === 'number' && Number.isInteger(o) && o >= 0) && typeof p.writtenAt === 'number' && (p.n === undefined || typeof p.n === 'number')
}

/** The keys that start with `prefix` (its last part a string: `\u0000` is the first string after it). */
function prefixRange(prefix: KeyPart[]): Range {
  return { start: prefix, end: [...prefix.slice(0, -1), `${prefix.at(-1) as string}\u0000`] }
}

/** A keyed state entry as written: the key, the state's kind, the key's entries. */
type SavedKeyedState = [StoreKey, StateKind, unknown]

const ignore = (): void => {}
