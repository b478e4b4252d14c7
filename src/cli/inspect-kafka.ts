import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { PunctualError } from '../errors.js'
import { readLocalCheckpoint } from '../kafka/checkpoint-file.js'
import { KEYED_STATE_STORE_PREFIX, TASK_STORE, TIMER_STORE } from '../runtime/changelog-records.js'
import { decodeStoreKey, unpackValue } from '../state/changelog-codec.js'
import { compareTaskIds, readStateDirectoryMetadata, storeEntries, tallyStoreKey } from '../state/inspect.js'
import type { InspectedTask, StateDirectoryReport, StoreKeyTally } from '../state/inspect.js'

/** Records read from a checkpoint at a time. */
const BATCH = 4096

/**
 * A Kafka instance's state directory (`punctual run --kafka`): its state lives in changelog topics, and
 * the directory holds a checkpoint per task it gave up or held when it stopped (`tasks/<task>.checkpoint`,
 * `src/kafka/checkpoint-file.ts`): the task's whole state as changelog records, with the changelog
 * offsets they reach. Each task is described from its checkpoint, as of the commit it was written after.
 */
export async function inspectKafkaStateDirectory(path: string): Promise<StateDirectoryReport> {
  const { applicationId, format, live } = readStateDirectoryMetadata(path)
  const dir = join(path, 'tasks')
  let files: string[]
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.checkpoint'))
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    files = []
  }
  const tasks: InspectedTask[] = []
  let bytes = 0
  let last: Date | undefined
  for (const file of files) {
    let checkpoint: Awaited<ReturnType<typeof readLocalCheckpoint>>
    let size: number
    try {
      checkpoint = await readLocalCheckpoint(join(dir, file))
      size = checkpoint === undefined ? 0 : statSync(join(dir, file)).size
    } catch (err) {
      // Gone since the listing: the running instance dropped a checkpoint it could not use.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue
      throw new PunctualError('STATE_DIR', `${join(dir, file)} cannot be read: ${(err as Error).message}`, { cause: err })
    }
    if (checkpoint === undefined) continue
    bytes += size
    const writtenAt = new Date(checkpoint.writtenAt)
    if (last === undefined || writtenAt > last) last = writtenAt
    tasks.push({ ...describeRecords(checkpoint.source()), taskId: checkpoint.taskId, checkpoint: { writtenAt, bytes: size, records: checkpoint.count, changelogOffsets: checkpoint.offsets } })
  }
  tasks.sort((a, b) => compareTaskIds(a.taskId, b.taskId))
  return { path, applicationId, format, runtime: 'kafka', live, checkpointBytes: bytes, lastCommitAt: last, pendingJournal: false, tasks, topicRecords: {} }
}

/** What a task's checkpoint records say: its clocks and positions, timers, keyed states and store entries. */
function describeRecords(source: ReturnType<NonNullable<Awaited<ReturnType<typeof readLocalCheckpoint>>>['source']>): Omit<InspectedTask, 'taskId' | 'checkpoint'> {
  let streamTime: number | undefined
  const positions: Record<string, number> = {}
  const lastFires: Record<string, number> = {}
  const timers = { user: { event: 0, processing: 0 }, ttl: { event: 0, processing: 0 } }
  const keyedStates: Record<string, number> = {}
  const storeKeys = new Map<string, StoreKeyTally>()
  for (let batch = source.read(BATCH); batch.length > 0; batch = source.read(BATCH)) {
    for (const { store, key, value } of batch) {
      // A checkpoint holds the state, not its history: a tombstone in it holds nothing.
      if (value === null) continue
      if (store === TASK_STORE) {
        const name = decodeStoreKey(key) as string
        const n = unpackValue(value) as number
        if (name === 'streamTime') streamTime = n
        else if (name.startsWith('position/')) positions[name.slice('position/'.length)] = n
        else if (name.startsWith('lastFire/')) lastFires[name.slice('lastFire/'.length)] = n
      } else if (store === TIMER_STORE) {
        // The first byte of a timer's key: 1 for TTL, 2 for processing time (`timerKey`).
        const flags = key[0] as number
        timers[(flags & 1) === 1 ? 'ttl' : 'user'][(flags & 2) === 2 ? 'processing' : 'event']++
      } else if (store.startsWith(KEYED_STATE_STORE_PREFIX)) {
        const state = store.slice(KEYED_STATE_STORE_PREFIX.length)
        keyedStates[state] = (keyedStates[state] ?? 0) + 1
      } else tallyStoreKey(storeKeys, store, storeKeyOf(key))
    }
  }
  return { streamTime, positions, lastFires, timers, keyedStates, stores: storeEntries(storeKeys) }
}

/**
 * A store record's key, as far as telling entries from logged fields needs: the stores with logged
 * fields have no key serde, so their keys are tagged (`encodeStoreKey`); a key a serde wrote counts as an entry.
 */
function storeKeyOf(key: Uint8Array): unknown {
  try {
    return decodeStoreKey(key)
  } catch {
    return ''
  }
}
