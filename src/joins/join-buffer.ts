import type { Headers } from '../processor/api.js'
import { ChangeLog, LoggedField } from '../state/change-log.js'
import { DEFAULT_CACHE_ENTRIES, DURABLE } from '../state/stores.js'
import { PERSISTENT } from '../state/persistent-store.js'
import type { PersistentCapability } from '../state/persistent-store.js'
import { TimeOrderedBuffer } from './time-ordered-buffer.js'
import type { DurableStore } from '../state/stores.js'
import { bigEndian64 } from '../windows/key-id.js'

/** A stream record waiting in a stream-table join's grace buffer. */
export interface Buffered<K, V> {
  readonly key: K
  readonly value: V
  readonly ts: number
  readonly headers: Headers
}

const TIME_KEY = -1
const SEQ_KEY = -2

/**
 * The grace buffer of a stream-table join with a versioned table (Kafka Streams' time-ordered buffer,
 * KIP-923): stream records by (timestamp, key bytes, arrival), the order they leave in. Its id is that
 * layout as a latin1 string (8 timestamp bytes, the key's bytes, 8 sequence bytes), so string order is
 * Kafka Streams' order. Its time is the largest timestamp it was given. A task store: commits write
 * what changed, a restart or another instance restores it. In a durable run it lives on disk, memory
 * holding the records changed since the last durable commit and up to `cacheEntries` others, the next
 * to leave (`TimeOrderedBuffer`).
 */
export class JoinBufferStore<K, V> {
  private readonly time = new LoggedField(TIME_KEY, -1)
  private readonly seq = new LoggedField(SEQ_KEY, 0)
  private readonly log: ChangeLog<string> = new ChangeLog<string>(
    {
      saved: (id) => this.buffer.inMemory(id),
      savedEntries: () => this.buffer.savedEntries((record) => record),
      load: (id, saved) => this.buffer.restore(id, saved as Buffered<K, V>),
      taken: () => this.buffer.taken(),
      committed: () => this.buffer.committed(),
    },
    [this.time, this.seq] as Array<LoggedField<unknown>>,
  )
  private readonly buffer: TimeOrderedBuffer<Buffered<K, V>>

  readonly [DURABLE]: DurableStore = this.log

  constructor(
    readonly name: string,
    cacheEntries = DEFAULT_CACHE_ENTRIES,
  ) {
    this.buffer = new TimeOrderedBuffer<Buffered<K, V>>(() => this.log.changes, (_id, saved) => saved as Buffered<K, V>, cacheEntries)
  }

  readonly [PERSISTENT]: PersistentCapability = {
    attach: (disk) => {
      for (const field of [this.time, this.seq] as Array<LoggedField<unknown>>) {
        const saved = disk.get(field.key)
        if (saved !== undefined) field.restore(saved)
      }
      this.buffer.attach(disk)
    },
  }

  /** The largest timestamp buffered so far (-1: none). */
  get streamTime(): number {
    return this.time.value
  }

  put(keyId: string, record: Buffered<K, V>): void {
    if (record.ts > this.time.value) this.time.value = record.ts
    const n = this.seq.value
    this.seq.value = n + 1
    const id = bigEndian64(record.ts) + keyId + bigEndian64(n)
    const c = this.log.changes
    if (c !== undefined && !c.has(id)) c.first(id, false)
    this.buffer.add(id, record)
  }

  /** Takes out, in order, every record with a timestamp at or before `limit`, handing each to `emit`. */
  evictThrough(limit: number, emit: (record: Buffered<K, V>) => void): void {
    this.buffer.scan((id, record) => {
      if (record.ts > limit) return false
      const c = this.log.changes
      if (c !== undefined && !c.has(id)) c.first(id, true)
      this.buffer.delete(id)
      emit(record)
      return true
    })
  }

  /** Number of records buffered (on disk, every id is read). */
  size(): number {
    return this.buffer.size()
  }

  /** Number of records in memory (tests: the cache's bound). */
  entriesInMemory(): number {
    return this.buffer.entriesInMemory()
  }

  close(): void {}
}
