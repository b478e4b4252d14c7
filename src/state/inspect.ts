import { existsSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { open } from 'lmdb'
import { PunctualError } from '../errors.js'
import type { DurableTaskState } from './checkpoint-store.js'
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
  /** Entries per state store (a suppression's buffer is its store: its entries are the buffered keys, and its own clock). */
  readonly stores: Readonly<Record<string, number>>
}

/** What a state directory holds, read without changing it. */
export interface StateDirectoryReport {
  readonly path: string
  readonly applicationId: string
  readonly format: number
  /** Size of the checkpoint store's file. */
  readonly checkpointBytes: number
  /** When the checkpoint store was last written: the last commit. */
  readonly lastCommitAt: Date
  /** A large commit written to the journal and not yet applied: the next start applies it. */
  readonly pendingJournal: boolean
  readonly tasks: readonly InspectedTask[]
  /** Records the embedded runtime keeps per topic (its durable log). */
  readonly topicRecords: Readonly<Record<string, number>>
}

/**
 * Reads a state directory's metadata and checkpoints read-only: its application, each task's stream time,
 * input positions, punctuations' last fires, pending timers by kind and domain, keyed states and stores
 * with their sizes. Refuses a directory a running process holds (naming the process): its files change
 * under a reader.
 */
export function inspectStateDirectory(path: string): StateDirectoryReport {
  const meta = join(path, 'punctual.json')
  if (!existsSync(meta)) throw new PunctualError('STATE_DIR', `${path} is not a punctual state directory (it has no punctual.json)`)
  const owner = lockOwner(path)
  if (owner !== undefined) throw new PunctualError('STATE_DIR_LOCKED', `state directory ${path} is in use by process ${owner}; inspect it once that process has stopped`)
  const { applicationId, format } = JSON.parse(readFileSync(meta, 'utf8')) as { applicationId: string; format: number }
  const data = join(path, 'checkpoints', 'data.mdb')
  if (!existsSync(data)) return { path, applicationId, format, checkpointBytes: 0, lastCommitAt: statSync(meta).mtime, pendingJournal: false, tasks: [], topicRecords: {} }
  const env = open({ path: join(path, 'checkpoints'), readOnly: true, compression: false })
  try {
    const taskDb = env.openDB<DurableTaskState, string>({ name: 'tasks' })
    const keyed = env.openDB<unknown, Array<string | number | boolean>>({ name: 'keyed', useRecords: false } as { name: string })
    const journal = env.openDB<Buffer, number[]>({ name: 'journal', encoding: 'binary' })
    const tasks = new Map<string, { state: DurableTaskState; timers: InspectedTask['timers']; keyedStates: Record<string, number>; stores: Record<string, number> }>()
    const task = (id: string): NonNullable<ReturnType<typeof tasks.get>> => {
      let t = tasks.get(id)
      if (t === undefined) tasks.set(id, (t = { state: { streamTime: undefined, positions: {}, lastFires: {} }, timers: { user: { event: 0, processing: 0 }, ttl: { event: 0, processing: 0 } }, keyedStates: {}, stores: {} }))
      return t
    }
    for (const { key, value } of taskDb.getRange()) task(key).state = value
    for (const key of keyed.getKeys()) {
      const [kind, taskId, name] = key as [string, string, string | number]
      const t = task(taskId)
      if (kind === 'T') {
        const group = name as number
        t.timers[(group & 1) === 1 ? 'ttl' : 'user'][(group & 2) === 2 ? 'processing' : 'event']++
      } else if (kind === 's') t.keyedStates[name as string] = (t.keyedStates[name as string] ?? 0) + 1
      else if (kind === 'kv') t.stores[name as string] = (t.stores[name as string] ?? 0) + 1
    }
    const topicRecords: Record<string, number> = {}
    // A chunk of a partition's records per key: [topic, partition, first offset, count, append time].
    const log = env.openDB<unknown, Array<string | number>>({ name: 'log-records', encoding: 'binary' })
    for (const key of log.getKeys()) {
      const [topic, , , count] = key as [string, number, number, number]
      topicRecords[topic] = (topicRecords[topic] ?? 0) + count
    }
    return {
      path,
      applicationId,
      format,
      checkpointBytes: statSync(data).size,
      lastCommitAt: statSync(data).mtime,
      pendingJournal: journal.getKeysCount() > 0,
      tasks: [...tasks]
        .sort(([a], [b]) => compareTaskIds(a, b))
        .map(([taskId, t]) => ({ taskId, streamTime: t.state.streamTime, positions: t.state.positions, lastFires: t.state.lastFires, timers: t.timers, keyedStates: t.keyedStates, stores: t.stores })),
      topicRecords,
    }
  } finally {
    env.close()
  }
}

/** `0_2` before `0_10` before `1_0`. */
function compareTaskIds(a: string, b: string): number {
  const [as, ap] = a.split('_').map(Number) as [number, number]
  const [bs, bp] = b.split('_').map(Number) as [number, number]
  return as - bs || ap - bp || a.localeCompare(b)
}
