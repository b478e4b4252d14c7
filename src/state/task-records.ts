import type { Database } from 'lmdb'
import type { StoreKey } from '../processor/api.js'
import type { StateKind } from '../keyed/api.js'
import type { KeyedStateOnDisk } from '../keyed/keyed-state.js'
import { decodeStoreKey, encodeStoreKey, unpackValue } from './changelog-codec.js'
import type { StoreCodec } from './changelog-codec.js'
import { MAX_KEY_BYTES } from './commit-journal.js'
import type { StoreDisk } from './persistent-store.js'
import { writeError } from './write-error.js'

/** A changelog record as the checkpoint store keeps it: its store, key and value bytes (null: a tombstone). */
export interface ChangelogBytes {
  readonly store: string
  readonly key: Uint8Array
  readonly value: Uint8Array | null
}

/** Writes of a task's changelog records outside commits: a restore's tail (see `TaskRecords.writer`). */
export interface RecordWriter {
  write(record: ChangelogBytes): void
  /** Settles once every write so far is committed; rejects with the first that failed. */
  written(): Promise<void>
}

/** Keys removed per lmdb transaction when a task's records go (`remove`). */
const REMOVE_BATCH = 10_000

/**
 * Kafka instances' tasks' changelog records in the checkpoint store's lmdb: key `<task> NUL <store> NUL
 * <record key bytes>` -> the record's value bytes; a tombstone removes the key. What each task's
 * compacted changelog holds, up to the offsets of its task record (`ChangelogPosition`). Commits write
 * them with the task records (`CheckpointStore.saveRecordsAfter`); a restore reads them (`of`) and adds
 * the changelog's tail (`writer`); a persistent store reads its entries here (`storeDisk`), in the order
 * of its serialized keys' bytes, as Kafka Streams' RocksDB stores do.
 */
export class TaskRecords {
  constructor(
    private readonly db: Database<Buffer, Buffer>,
    /** Settles once the writes queued so far are committed. */
    private readonly written: () => Promise<void>,
  ) {}

  /**
   * A task's records, one at a time, by store and key; the records of the stores `except` names are
   * skipped in lmdb (a persistent store's or a keyed state's entries stay where they are: it reads them
   * there).
   */
  *of(taskId: string, except: (store: string) => boolean = none): Generator<ChangelogBytes> {
    const prefix = recordsPrefix(taskId)
    const end = prefixEnd(prefix)
    let start: Buffer = prefix
    for (;;) {
      let skipTo: Buffer | undefined
      for (const { key, value } of this.db.getRange({ start, end })) {
        const storeEnd = key.indexOf(0, prefix.length)
        const store = key.toString('utf8', prefix.length, storeEnd)
        if (except(store)) {
          skipTo = prefixEnd(key.subarray(0, storeEnd + 1))
          break
        }
        yield { store, key: key.subarray(storeEnd + 1), value }
      }
      if (skipTo === undefined) return
      start = skipTo
    }
  }

  /** How many records `of(taskId, except)` gives; `limit`: counting stops there. */
  count(taskId: string, except: (store: string) => boolean = none, limit = Infinity): number {
    const prefix = recordsPrefix(taskId)
    const end = prefixEnd(prefix)
    if (except === none) return this.db.getKeysCount({ start: prefix, end, ...(limit === Infinity ? {} : { limit }) })
    let n = 0
    let start: Buffer = prefix
    for (;;) {
      let skipTo: Buffer | undefined
      for (const key of this.db.getKeys({ start, end })) {
        const storeEnd = key.indexOf(0, prefix.length)
        if (except(key.toString('utf8', prefix.length, storeEnd))) {
          skipTo = prefixEnd(key.subarray(0, storeEnd + 1))
          break
        }
        if (++n >= limit) return n
      }
      if (skipTo === undefined) return n
      start = skipTo
    }
  }

  /**
   * Removes a task's records, a bounded batch per lmdb transaction so as not to hold the event loop
   * long.
   */
  async remove(taskId: string): Promise<void> {
    const prefix = recordsPrefix(taskId)
    const range = { start: prefix, end: prefixEnd(prefix) }
    for (;;) {
      const keys = [...this.db.getKeys({ ...range, limit: REMOVE_BATCH })]
      if (keys.length === 0) break
      for (const key of keys) this.db.remove(key).catch(ignore)
      await this.written()
    }
  }

  /**
   * Writes a task's changelog records straight into its records, outside any commit: records of the
   * task's changelog that a restore read past the offsets of its last commit (`ChangelogPosition`). The
   * caller writes only what the changelog holds as committed, so a record written ahead of the task's
   * offsets is the changelog's as of a later point: the next restore reads the same tail again and ends
   * in the same state.
   */
  writer(taskId: string): RecordWriter {
    const prefix = recordsPrefix(taskId)
    let failure: unknown
    const handled = (written: Promise<unknown>): void => {
      written.catch((err: unknown) => (failure ??= err))
    }
    return {
      write: (r) => {
        let key: Buffer
        try {
          key = recordKey(prefix, taskId, r.store, r.key)
        } catch (err) {
          throw writeError(err)
        }
        handled(r.value === null ? this.db.remove(key) : this.db.put(key, asBuffer(r.value)))
      },
      written: async () => {
        await this.written()
        if (failure !== undefined) throw writeError(failure)
      },
    }
  }

  /**
   * A keyed state's committed entries as a task's records hold them (store `punctual.state.<processor>/<state>`,
   * each key's value its kind and entries: `TaskChangelogCodec`); kind undefined: it has none yet.
   */
  keyedStateDisk(taskId: string, store: string): KeyedStateOnDisk {
    const db = this.db
    const prefix = recordKey(recordsPrefix(taskId), taskId, store, EMPTY)
    const range = { start: prefix, end: prefixEnd(prefix) }
    let kind: StateKind | undefined
    for (const { value } of db.getRange({ ...range, limit: 1 })) kind = (unpackValue(value) as [StateKind, unknown])[0]
    return {
      kind,
      disk: {
        get(key) {
          const bytes = encodeStoreKey(key)
          if (prefix.length + bytes.length > MAX_KEY_BYTES) return undefined
          const value = db.get(Buffer.concat([prefix, bytes]))
          return value === undefined ? undefined : (unpackValue(value) as [StateKind, unknown])[1]
        },
        *entries() {
          for (const { key, value } of db.getRange(range)) yield [decodeStoreKey(key.subarray(prefix.length)), (unpackValue(value) as [StateKind, unknown])[1]]
        },
      },
    }
  }

  /**
   * A persistent store's committed entries as a task's records hold them, decoded with the codec its
   * changelog records are written with. Its key order is that of the serialized keys' bytes.
   */
  storeDisk(taskId: string, store: string, codec: StoreCodec): StoreDisk {
    const db = this.db
    const prefix = recordKey(recordsPrefix(taskId), taskId, store, EMPTY)
    const range = { start: prefix, end: prefixEnd(prefix) }
    const keyOf = (key: StoreKey): Buffer | undefined => {
      const bytes = codec.encodeKey(key)
      // A key too long for lmdb was never written (its commit failed): it is not there.
      return prefix.length + bytes.length > MAX_KEY_BYTES ? undefined : Buffer.concat([prefix, bytes])
    }
    return {
      get(key) {
        const k = keyOf(key)
        const value = k === undefined ? undefined : db.get(k)
        return value === undefined ? undefined : codec.decodeValue(value)
      },
      *entries(from) {
        const start = from === undefined ? prefix : (keyOf(from) ?? prefix)
        for (const { key, value } of db.getRange({ ...range, start })) yield [codec.decodeKey(key.subarray(prefix.length)), codec.decodeValue(value)]
      },
      // A copy: lmdb marks the options object it counts with as a count.
      count: () => db.getKeysCount({ ...range }),
      compare: (a, b) => Buffer.compare(asBuffer(codec.encodeKey(a)), asBuffer(codec.encodeKey(b))),
    }
  }
}

const none = (): boolean => false
const EMPTY = new Uint8Array(0)
const ignore = (): void => {}

/** The first bytes of a task's records' keys: its id, NUL. */
export function recordsPrefix(taskId: string): Buffer {
  return Buffer.from(`${taskId}\u0000`, 'utf8')
}

/**
 * A record's key in the records database: the task's prefix, the store's name, NUL, the record's key
 * bytes. Throws, naming the store, when it is longer than lmdb takes.
 */
export function recordKey(prefix: Buffer, taskId: string, store: string, key: Uint8Array): Buffer {
  const storeBytes = Buffer.byteLength(store, 'utf8')
  const length = prefix.length + storeBytes + 1 + key.length
  if (length > MAX_KEY_BYTES) throw new Error(`a key of store "${store}" of task ${taskId} takes ${length} bytes on disk, more than the state directory's limit of ${MAX_KEY_BYTES} (lmdb's): keep store keys shorter`)
  const out = Buffer.allocUnsafe(length)
  prefix.copy(out, 0)
  out.write(store, prefix.length, 'utf8')
  out[prefix.length + storeBytes] = 0
  out.set(key, prefix.length + storeBytes + 1)
  return out
}

/** The first key after every key that starts with `prefix` (whose last byte is NUL). */
function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix)
  end[end.length - 1] = 1
  return end
}

function asBuffer(bytes: Uint8Array): Buffer {
  return bytes instanceof Buffer ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}
