import { mkdir, open, readFile, rename, rm } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import type { ChangelogRecord } from '../runtime/changelog.js'
import type { ChangelogSource } from '../runtime/changelog-source.js'

/** The first bytes of a checkpoint file; another format is not read. */
const MAGIC = 'PCK1'
/** Bytes encoded before each write: few writes, and no buffer as large as the state. */
const CHUNK = 1 << 20

/** What a checkpoint file says besides its records. */
export interface LocalCheckpointHeader {
  readonly taskId: string
  /** Per changelog topic of the task: the offset its records reach (the next offset after them). */
  readonly offsets: Readonly<Record<string, number>>
  /** When it was written (ms since the epoch). */
  readonly writtenAt: number
  /** How many records follow. */
  readonly count: number
}

/** A checkpoint read from disk: its header, and its records as a source read in bounded batches. */
export interface LocalCheckpoint extends LocalCheckpointHeader {
  source(): ChangelogSource
}

/** Where a task's checkpoint lives in a state directory. */
export function localCheckpointPath(stateDir: string, taskId: string): string {
  return join(stateDir, 'tasks', `${taskId}.checkpoint`)
}

/**
 * Writes a task's state as it stands after a commit, as changelog records, with the changelog offsets
 * that state corresponds to: a task assigned here again reads it and then only the changelog's tail.
 * Written to a temporary file, then renamed over the old one, so a crash leaves either. Encoded a chunk
 * at a time between writes, so the event loop is not held for the whole state.
 *
 * Layout: `PCK1`, a 32-bit header length, the header as JSON (with the store names), then per record a
 * 16-bit store index, a 32-bit key length and the key, a 32-bit value length (-1: a tombstone) and the value.
 */
export async function writeLocalCheckpoint(path: string, header: Omit<LocalCheckpointHeader, 'count'>, records: readonly ChangelogRecord[]): Promise<void> {
  const stores: string[] = []
  const storeIndex = new Map<string, number>()
  for (const r of records) {
    if (!storeIndex.has(r.store)) {
      storeIndex.set(r.store, stores.length)
      stores.push(r.store)
    }
  }
  const json = Buffer.from(JSON.stringify({ ...header, count: records.length, stores }), 'utf8')
  const start = Buffer.allocUnsafe(8 + json.length)
  start.write(MAGIC, 0, 'latin1')
  start.writeUInt32BE(json.length, 4)
  json.copy(start, 8)

  await mkdir(dirname(path), { recursive: true })
  const temporary = `${path}.tmp`
  const file = await open(temporary, 'w')
  try {
    await file.write(start)
    let chunk = Buffer.allocUnsafe(CHUNK)
    let at = 0
    for (const r of records) {
      const need = 10 + r.key.byteLength + (r.value?.byteLength ?? 0)
      if (at + need > chunk.length) {
        if (at > 0) await file.write(chunk, 0, at)
        at = 0
        if (need > chunk.length) chunk = Buffer.allocUnsafe(need)
      }
      chunk.writeUInt16BE(storeIndex.get(r.store) as number, at)
      chunk.writeUInt32BE(r.key.byteLength, at + 2)
      chunk.set(r.key, at + 6)
      at += 6 + r.key.byteLength
      if (r.value === null) chunk.writeInt32BE(-1, at)
      else {
        chunk.writeInt32BE(r.value.byteLength, at)
        chunk.set(r.value, at + 4)
      }
      at += 4 + (r.value?.byteLength ?? 0)
    }
    if (at > 0) await file.write(chunk, 0, at)
    await file.sync()
  } finally {
    await file.close()
  }
  await rename(temporary, path)
}

/** A task's checkpoint file, or undefined when there is none; a file that is not a whole checkpoint is an error. */
export async function readLocalCheckpoint(path: string): Promise<LocalCheckpoint | undefined> {
  let bytes: Buffer
  try {
    bytes = await readFile(path)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
  if (bytes.length < 8 || bytes.toString('latin1', 0, 4) !== MAGIC) throw new Error(`${path} is not a punctual task checkpoint`)
  const headerEnd = 8 + bytes.readUInt32BE(4)
  if (headerEnd > bytes.length) throw new Error(`${path} is cut short`)
  const header = JSON.parse(bytes.toString('utf8', 8, headerEnd)) as LocalCheckpointHeader & { stores: string[] }
  const records = header.count
  const stores = header.stores
  return {
    taskId: header.taskId,
    offsets: header.offsets,
    writtenAt: header.writtenAt,
    count: records,
    source(): ChangelogSource {
      let at = headerEnd
      let read = 0
      return {
        remaining: () => records - read,
        read(max) {
          const batch: ChangelogRecord[] = []
          while (read < records && batch.length < max) {
            if (at + 10 > bytes.length) throw new Error(`${path} is cut short after ${read} of ${records} records`)
            const store = stores[bytes.readUInt16BE(at)]
            const keyLength = bytes.readUInt32BE(at + 2)
            const key = bytes.subarray(at + 6, at + 6 + keyLength)
            at += 6 + keyLength
            const valueLength = bytes.readInt32BE(at)
            at += 4
            const value = valueLength < 0 ? null : bytes.subarray(at, at + valueLength)
            at += Math.max(0, valueLength)
            if (store === undefined || at > bytes.length) throw new Error(`${path} is malformed at record ${read}`)
            batch.push({ store, key, value })
            read++
          }
          return batch
        },
      }
    },
  }
}

/** Removes a task's checkpoint file (one that cannot be used). */
export async function removeLocalCheckpoint(path: string): Promise<void> {
  await rm(path, { force: true })
}
