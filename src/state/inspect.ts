import { existsSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { open } from 'lmdb'
import type { Database } from 'lmdb'
import { PunctualError } from '../errors.js'
import type { DurableTaskState } from './checkpoint-store.js'
import { decodeStoreKey } from './changelog-codec.js'
import { lockOwner } from './state-directory.js'

/** What one task's last commit in a state directory holds. */
export interface InspectedTask {
  readonly taskId: string
  readonly streamTime: number | undefined
  /** Next offset to read per input (`topic:partition`). */
  readonly positions: Readonly<Record<string, number>>
  /** Last fire time per punctuation. */
  readonly lastFires: Readonly<Record<string, number>>
  readonly timers: { readonly user: { event: number; processing: number }; readonly ttl: { event: number; processing: number } }
  /** Keys per keyed state (`<processor>/<state>`). */
  readonly keyedStates: Readonly<Record<string, number>>
  /**
   * Entries per state store (a suppression's buffer is its store: its entries are the buffered keys). The
   * fields a store keeps beside its entries (its stream time, a window store's largest start) are not
   * entries and are not counted.
   */
  readonly stores: Readonly<Record<string, number>>
  /** A Kafka instance's: where the task's local state stands in its changelog topics (a restore reads the tail from there). */
  readonly changelog?: InspectedChangelogPosition
}

/** Where a Kafka instance's local state of a task stands in its changelog topics, as of its last commit. */
export interface InspectedChangelogPosition {
  /** When the commit that wrote it was written. */
  readonly writtenAt: Date
  /** Per changelog topic of the task: the offset the local state reaches. */
  readonly offsets: Readonly<Record<string, number>>
}

/** The process running the application whose state directory this is, while it runs. */
export interface LiveOwner {
  readonly pid: number
  /** The owner is a runtime in the process that inspects. */
  readonly thisProcess: boolean
}

/** What a state directory holds, read without changing it. */
export interface StateDirectoryReport {
  readonly path: string
  readonly applicationId: string
  readonly format: number
  /**
   * Which runtime keeps this directory. The embedded runtime keeps its checkpoints and topics in it; a Kafka
   * instance keeps its tasks' state here as of each commit, with where it stands in their changelog topics
   * (which hold it too).
   */
  readonly runtime: 'embedded' | 'kafka'
  /**
   * Set when a running application holds the directory: the report is then its state as of the last
   * commit when it was read, and the application goes on changing it.
   */
  readonly live: LiveOwner | undefined
  /** Size of the checkpoint store's file. */
  readonly checkpointBytes: number
  /** When the checkpoint store was last written: the last commit. */
  readonly lastCommitAt: Date | undefined
  /** A large commit written to the journal and not yet applied: the next start applies it. */
  readonly pendingJournal: boolean
  readonly tasks: readonly InspectedTask[]
  /** Records the embedded runtime keeps per topic (its durable log). */
  readonly topicRecords: Readonly<Record<string, number>>
}

/**
 * Reads a state directory's metadata and checkpoints read-only: its application, each task's stream time,
 * input positions, punctuations' last fires, pending timers by kind and domain, keyed states and stores
 * with their sizes. A directory a running application holds is read too (`live` names its process): an
 * lmdb reader does not block the writer, and one read transaction sees one commit whole.
 */
export function inspectStateDirectory(path: string): StateDirectoryReport {
  const { applicationId, format, live } = readStateDirectoryMetadata(path)
  const meta = join(path, 'punctual.json')
  const data = join(path, 'checkpoints', 'data.mdb')
  if (!existsSync(data)) return { path, applicationId, format, runtime: 'embedded', live, checkpointBytes: 0, lastCommitAt: statSync(meta).mtime, pendingJournal: false, tasks: [], topicRecords: {} }
  const env = open({ path: join(path, 'checkpoints'), readOnly: true, compression: false })
  try {
    const taskDb = env.openDB<DurableTaskState, string>({ name: 'tasks' })
    const keyed = env.openDB<unknown, Array<string | number | boolean>>({ name: 'keyed', useRecords: false } as { name: string })
    const journal = env.openDB<Buffer, number[]>({ name: 'journal', encoding: 'binary' })
    // A chunk of a partition's records per key: [topic, partition, first offset, count, append time].
    // A Kafka instance's tasks' changelog records (absent from the embedded runtime's directory).
    const records = env.openDB<Buffer, Buffer>({ name: 'changelog-records', encoding: 'binary', keyEncoding: 'binary' }) as Database<Buffer, Buffer> | undefined
    // (Absent from a Kafka instance's directory: a read-only environment opens no new database.)
    const log = env.openDB<unknown, Array<string | number>>({ name: 'log-records', encoding: 'binary' }) as Database<unknown, Array<string | number>> | undefined
    // Opened databases first: opening one renews the environment's read transaction.
    const transaction = env.useReadTransaction()
    try {
      const tasks = new Map<string, { state: DurableTaskState; timers: InspectedTask['timers']; keyedStates: Record<string, number>; storeKeys: Map<string, StoreKeyTally> }>()
      const task = (id: string): NonNullable<ReturnType<typeof tasks.get>> => {
        let t = tasks.get(id)
        if (t === undefined) tasks.set(id, (t = { state: { streamTime: undefined, positions: {}, lastFires: {} }, timers: { user: { event: 0, processing: 0 }, ttl: { event: 0, processing: 0 } }, keyedStates: {}, storeKeys: new Map() }))
        return t
      }
      for (const { key, value } of taskDb.getRange({ transaction })) task(key).state = value
      for (const key of keyed.getKeys({ transaction })) {
        const [kind, taskId, name, storeKey] = key as [string, string, string | number, string | number | boolean]
        const t = task(taskId)
        if (kind === 'T') {
          const group = name as number
          t.timers[(group & 1) === 1 ? 'ttl' : 'user'][(group & 2) === 2 ? 'processing' : 'event']++
        } else if (kind === 's') t.keyedStates[name as string] = (t.keyedStates[name as string] ?? 0) + 1
        else if (kind === 'kv') tallyStoreKey(t.storeKeys, name as string, storeKey)
      }
      for (const key of records?.getKeys({ transaction }) ?? []) {
        const taskEnd = key.indexOf(0)
        const storeEnd = key.indexOf(0, taskEnd + 1)
        const t = task(key.toString('utf8', 0, taskEnd))
        const store = key.toString('utf8', taskEnd + 1, storeEnd)
        if (store === 'punctual.timers') {
          // The timer record's first byte: 1 TTL, 2 processing time (changelog-records.ts, timerKey).
          const flags = key[storeEnd + 1] ?? 0
          t.timers[(flags & 1) === 1 ? 'ttl' : 'user'][(flags & 2) === 2 ? 'processing' : 'event']++
        } else if (store.startsWith('punctual.state.')) {
          const name = store.slice('punctual.state.'.length)
          t.keyedStates[name] = (t.keyedStates[name] ?? 0) + 1
        } else if (store !== 'punctual.task') tallyStoreKey(t.storeKeys, store, recordKeyOf(key.subarray(storeEnd + 1)))
      }
      const kafka = [...tasks.values()].some((t) => t.state.changelog !== undefined)
      const topicRecords: Record<string, number> = {}
      for (const key of log?.getKeys({ transaction }) ?? []) {
        const [topic, , , count] = key as [string, number, number, number]
        topicRecords[topic] = (topicRecords[topic] ?? 0) + count
      }
      return {
        path,
        applicationId,
        format,
        runtime: kafka ? 'kafka' : 'embedded',
        live,
        checkpointBytes: statSync(data).size,
        lastCommitAt: statSync(data).mtime,
        pendingJournal: journal.getKeysCount({ transaction }) > 0,
        tasks: [...tasks]
          .sort(([a], [b]) => compareTaskIds(a, b))
          .map(([taskId, t]) => ({
            taskId,
            streamTime: t.state.streamTime,
            positions: t.state.positions,
            lastFires: t.state.lastFires,
            timers: t.timers,
            keyedStates: t.keyedStates,
            stores: storeEntries(t.storeKeys),
            ...(t.state.changelog === undefined ? {} : { changelog: { writtenAt: new Date(t.state.changelog.writtenAt), offsets: t.state.changelog.offsets } }),
          })),
        topicRecords,
      }
    } finally {
      transaction.done()
    }
  } finally {
    env.close()
  }
}

/** A changelog record's key as the default codec writes it, to tell a store's logged fields from its entries; undefined when a serde of the application's wrote it. */
function recordKeyOf(bytes: Buffer): unknown {
  try {
    return decodeStoreKey(bytes)
  } catch {
    return undefined
  }
}

/** A state directory's application and format (`punctual.json`), and the running application holding it, if one does. */
export function readStateDirectoryMetadata(path: string): { applicationId: string; format: number; live: LiveOwner | undefined } {
  const meta = join(path, 'punctual.json')
  if (!existsSync(meta)) throw new PunctualError('STATE_DIR', `${path} is not a punctual state directory (it has no punctual.json)`)
  const owner = lockOwner(path)
  const { applicationId, format } = JSON.parse(readFileSync(meta, 'utf8')) as { applicationId: string; format: number }
  return { applicationId, format, live: owner === undefined ? undefined : { pid: owner, thisProcess: owner === process.pid } }
}

/**
 * The keys of the fields stores log beside their entries (`LoggedField`): a stream time, a window
 * store's largest start and the like are small negative numbers, a versioned store's observed time is
 * `true`.
 */
const FIELD_KEYS: ReadonlySet<unknown> = new Set([-1, -2, -3, -4, true])

/** One store's keys, as far as telling entries from logged fields needs. */
export interface StoreKeyTally {
  keys: number
  /** Keys that are strings: the stores with logged fields key their entries by key id, a string. */
  strings: number
  /** Keys that are a logged field's key. */
  fieldLike: number
}

export function tallyStoreKey(tallies: Map<string, StoreKeyTally>, store: string, key: unknown): void {
  let tally = tallies.get(store)
  if (tally === undefined) tallies.set(store, (tally = { keys: 0, strings: 0, fieldLike: 0 }))
  tally.keys++
  if (typeof key === 'string') tally.strings++
  else if (FIELD_KEYS.has(key)) tally.fieldLike++
}

/**
 * Entries per store: its keys less its logged fields. A key of a field's form is a field in a store whose
 * entries are keyed by key id (a string), or in one with no other key; a store keyed by the user's
 * numbers (-1 among others) keeps it as an entry.
 */
export function storeEntries(tallies: ReadonlyMap<string, StoreKeyTally>): Record<string, number> {
  const out: Record<string, number> = {}
  for (const [store, t] of tallies) out[store] = t.strings > 0 || t.fieldLike === t.keys ? t.keys - t.fieldLike : t.keys
  return out
}

/** `0_2` before `0_10` before `1_0`. */
export function compareTaskIds(a: string, b: string): number {
  const [as, ap] = a.split('_').map(Number) as [number, number]
  const [bs, bp] = b.split('_').map(Number) as [number, number]
  return as - bs || ap - bp || a.localeCompare(b)
}
