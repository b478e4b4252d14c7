import { statSync } from 'node:fs'
import { join } from 'node:path'
import { open } from 'lmdb'
import type { Database, Key, RootDatabase } from 'lmdb'
import { PunctualError } from '../errors.js'
import type { KeyedChanges, KeyedSnapshot } from '../keyed/keyed-task-state.js'
import type { StateKind } from '../keyed/api.js'
import type { KeyedStateOnDisk } from '../keyed/keyed-state.js'
import type { TimerRecord } from '../keyed/timer-service.js'
import type { StoreKey } from '../processor/api.js'
import { fromKeyPart, keyPart } from './key-part.js'
import type { StoreDisk } from './persistent-store.js'

/** A task's commit record: stream time, the last fire time of each punctuation, its input positions. */
export interface DurableTaskState {
  readonly streamTime: number | undefined
  readonly lastFires: Readonly<Record<string, number>>
  /** Next offset to read per input, keyed `topic:partition`. */
  readonly positions: Readonly<Record<string, number>>
}

type KeyPart = string | number | boolean

/**
 * The keyed database writes objects in values (keyed state cells, store values) as plain msgpack maps
 * (msgpackr's `useRecords: false`, which lmdb passes on; its types omit it). As records, each entry
 * carries its own record definition (lmdb shares none here), and decoding that costs more than the
 * map: reading 1 M state entries took 24–56% less time with maps (three runs). Entries written as records still read.
 */
const KEYED_DB = { name: 'keyed', useRecords: false }

/**
 * Task checkpoints in the state directory (`<stateDir>/checkpoints`, lmdb), written in one transaction
 * per commit: stream time and punctuation last-fire times (what `onMissed: 'fireOnce'` needs), and the
 * changes to keyed state, timers and stores since the previous commit (incremental: a commit writes what
 * changed, not everything). Other databases in the same environment (`database`) commit in the same
 * transactions: the embedded runtime keeps its topics' records there.
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
  ) {}

  /**
   * A named database in the checkpoints' environment: what is written to it inside `save`'s `alsoWrite`
   * commits (or not) with the checkpoints.
   */
  database<V = unknown, K extends Key = Key>(name: string, options: { encoding?: 'binary' } = {}): Database<V, K> {
    return this.env.openDB<V, K>({ name, ...options })
  }

  static open(stateDir: string): CheckpointStore {
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
      migrateTimers(keyed)
      return new CheckpointStore(env, env.openDB<DurableTaskState, string>({ name: 'tasks' }), keyed)
    } catch (err) {
      throw new PunctualError('STATE_DIR', `state directory ${stateDir}: the checkpoint store cannot be opened (${(err as Error).message}); refusing to start rather than reset it`, { cause: err })
    }
  }

  load(taskId: string): DurableTaskState | undefined {
    const state = this.tasks.get(taskId)
    if (state === undefined) return undefined
    if (typeof state !== 'object' || state === null || (state.streamTime !== undefined && typeof state.streamTime !== 'number') || typeof state.lastFires !== 'object' || typeof state.positions !== 'object') {
      throw new PunctualError('STATE_DIR', `checkpoint of task ${taskId} is corrupt; refusing to start rather than reset it`)
    }
    return state
  }

  /** Every task's commit record. */
  loadAll(): DurableTaskState[] {
    const out: DurableTaskState[] = []
    for (const { key } of this.tasks.getRange()) out.push(this.load(key) as DurableTaskState)
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
   * A keyed state's committed entries (`<processor>/<state>` of a task), read a key at a time; undefined
   * when there are none.
   */
  keyedStateDisk(taskId: string, state: string): KeyedStateOnDisk | undefined {
    const db = this.keyed
    const range = prefixRange(['s', taskId, state])
    let kind: StateKind | undefined
    for (const { value } of db.getRange({ ...range, limit: 1 })) kind = (value as SavedKeyedState)[1]
    if (kind === undefined) return undefined
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
      *entries() {
        for (const { value } of db.getRange(range)) {
          const [k, v] = value as [StoreKey, unknown]
          yield [k, v]
        }
      },
      // A copy: lmdb marks the options object it counts with as a count.
      count: () => db.getKeysCount({ ...range }),
    }
  }

  /**
   * Writes every task's state, keyed changes and store changes, and whatever `alsoWrite` writes (the
   * topics' new records, with `put`/`remove`, not their Sync forms), in one transaction: all or nothing.
   * The writes are queued now, on the main thread (lmdb encodes keys and values here), and lmdb commits
   * them on its write thread; the promise settles when they are committed. Reads see the previous
   * commit until then.
   */
  save(
    states: ReadonlyMap<string, DurableTaskState>,
    keyedChanges: ReadonlyMap<string, KeyedChanges> = new Map(),
    storeChanges: ReadonlyMap<string, ReadonlyMap<string, ReadonlyArray<readonly [StoreKey, unknown]>>> = new Map(),
    alsoWrite?: () => void,
  ): Promise<void> {
    try {
      // Every write queued in this event turn goes into one lmdb transaction; nothing here may wait.
      for (const [taskId, state] of states) void this.tasks.put(taskId, { streamTime: state.streamTime, lastFires: state.lastFires, positions: state.positions })
      for (const [taskId, changes] of keyedChanges) {
        for (const c of changes.states) {
          const k = ['s', taskId, c.state, keyPart(c.key)]
          if (c.entries === undefined) void this.keyed.remove(k)
          else void this.keyed.put(k, [c.key, c.kind, c.entries])
        }
        for (const { added, record } of changes.timers) {
          const k = timerEntryKey(taskId, record)
          if (added) void this.keyed.put(k, null)
          else void this.keyed.remove(k)
        }
      }
      for (const [taskId, stores] of storeChanges) {
        for (const [store, changes] of stores) {
          for (const [key, value] of changes) {
            const k = ['kv', taskId, store, keyPart(key)]
            if (value === undefined) void this.keyed.remove(k)
            else void this.keyed.put(k, [key, value])
          }
        }
      }
      alsoWrite?.()
    } catch (err) {
      return Promise.reject(writeError(err))
    }
    // The writes of one batch share one promise; `committed` settles with it (and handles its rejection).
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

  close(): void {
    this.env.close()
  }
}

function writeError(err: unknown): PunctualError {
  const code = (err as NodeJS.ErrnoException).code
  const message = (err as Error).message
  // lmdb reports a failed write of a full disk as ENOSPC, or as an I/O error; a file size limit as EFBIG.
  const why =
    code === 'ENOSPC' || /MDB_MAP_FULL|No space/i.test(message)
      ? 'the disk or the store is full'
      : /Input\/output error|too large|EFBIG|EIO/i.test(message)
        ? `${message} (is the disk full?)`
        : message
  return new PunctualError('STATE_DIR', `cannot write checkpoints: ${why}`, { cause: err, fatal: true })
}

type Range = { readonly start: KeyPart[]; readonly end: KeyPart[] }

/**
 * A timer's entry: the whole timer in the key, in firing order within the task (group: event-time user
 * timers, event-time TTL timers, then the processing-time ones; then timestamp, then registration
 * sequence), so a restore reads keys only, already in the order the queues take them.
 */
function timerEntryKey(taskId: string, r: TimerRecord): KeyPart[] {
  return ['T', taskId, (r.domain === 'processing' ? 2 : 0) | (r.kind === 'ttl' ? 1 : 0), r.timestamp, r.seq, r.owner, keyPart(r.key)]
}

function timerFromEntryKey(key: KeyPart[]): TimerRecord {
  const group = key[2] as number
  return { kind: (group & 1) === 1 ? 'ttl' : 'user', domain: (group & 2) === 2 ? 'processing' : 'event', timestamp: key[3] as number, seq: key[4] as number, owner: key[5] as string, key: fromKeyPart(key[6] as KeyPart) }
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

/** The keys that start with `prefix` (its last part a string: `\u0000` is the first string after it). */
function prefixRange(prefix: KeyPart[]): Range {
  return { start: prefix, end: [...prefix.slice(0, -1), `${prefix.at(-1) as string}\u0000`] }
}

/** A keyed state entry as written: the key, the state's kind, the key's entries. */
type SavedKeyedState = [StoreKey, StateKind, unknown]

/**
 * A task's last commit, read a bounded number of entries at a time, so that a task restoring from the
 * state directory does not hold the event loop: its timers, then the entries of its in-memory stores
 * (keyed state stays on disk until used). Each range is read through one lmdb iterator, a snapshot of the commit it started
 * in (later commits of other tasks do not touch this task's entries).
 */
export class TaskCheckpointReader {
  private readonly timers: TimerRecord[] = []
  private readonly storeEntries: Record<string, Array<[StoreKey, unknown]>> = {}
  private range = 0
  private iterator: Iterator<{ key: KeyPart[]; value: unknown }> | Iterator<KeyPart[]> | undefined
  private count = 0

  constructor(
    private readonly db: Database<unknown, KeyPart[]>,
    private readonly ranges: readonly Range[],
    /** The task's commit record (stream time, last fire times, positions). */
    readonly state: DurableTaskState | undefined,
    /** Counts the entries in the ranges (about 6% of the time reading them takes: done only when asked). */
    private readonly countAll: () => number,
  ) {}

  private total: number | undefined

  /** Entries read so far. */
  get read(): number {
    return this.count
  }

  remaining(): number {
    this.total ??= this.countAll()
    return Math.max(0, this.total - this.count)
  }

  get done(): boolean {
    return this.range >= this.ranges.length
  }

  /** Reads up to `max` entries; returns how many it read. */
  readSome(max: number): number {
    let n = 0
    while (n < max && this.range < this.ranges.length) {
      const range = this.ranges[this.range] as Range
      // Timers are all key (`timerEntryKey`); store entries are keys and values.
      const timers = range.start[0] === 'T'
      this.iterator ??= timers ? this.db.getKeys(range)[Symbol.iterator]() : this.db.getRange(range)[Symbol.iterator]()
      const next = this.iterator.next()
      if (next.done === true) {
        this.iterator = undefined
        this.range++
        continue
      }
      if (timers) this.timers.push(timerFromEntryKey(next.value as KeyPart[]))
      else {
        const { key, value } = next.value as { key: KeyPart[]; value: unknown }
        const [k, v] = value as [StoreKey, unknown]
        ;(this.storeEntries[key[2] as string] ??= []).push([k, v])
      }
      n++
    }
    this.count += n
    return n
  }

  /**
   * The timers as read (keyed state stays on disk); undefined when there are none. Each queue's
   * timers come in its firing order (the order of their entries).
   */
  keyed(): KeyedSnapshot | undefined {
    if (this.timers.length === 0) return undefined
    return { timers: this.timers, states: {} }
  }

  /** The in-memory stores' entries as read; undefined when there are none. */
  stores(): Record<string, Array<[StoreKey, unknown]>> | undefined {
    return Object.keys(this.storeEntries).length === 0 ? undefined : this.storeEntries
  }
}
