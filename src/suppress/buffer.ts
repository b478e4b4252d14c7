import { BUFFER_METRICS } from '../metrics.js'
import type { StoreKey } from '../processor/api.js'
import { DURABLE } from '../state/stores.js'
import type { DurableStore } from '../state/stores.js'
import type { ChangeSet } from '../state/change-set.js'
import { ChangeLog, LoggedField } from '../state/change-log.js'
import type { StoreContents } from '../state/change-log.js'
import { PERSISTENT } from '../state/persistent-store.js'
import type { PersistentCapability, StoreDisk } from '../state/persistent-store.js'
import { IndexedMinHeap } from '../util/indexed-heap.js'
import type { HeapElement } from '../util/indexed-heap.js'

/** One buffered key: its latest value and record timestamp, and its order time. */
export class BufferEntry<K, V> implements HeapElement {
  heapIndex = -1
  /** The change-set epoch in which this entry's key was last noted (durable buffers). */
  noted = 0

  constructor(
    /** The key's bytes as a latin1 string: compares in byte order, as Kafka orders keys. */
    readonly keyId: string,
    readonly key: K,
    public value: V | null,
    /** Timestamp of the latest update (the emitted record's timestamp). */
    public timestamp: number,
    /** The time the buffer orders and expires by (latest update, first update, or window end). */
    public orderTime: number,
    public size: number,
  ) {}
}

const older = (a: BufferEntry<unknown, unknown>, b: BufferEntry<unknown, unknown>): boolean =>
  a.orderTime < b.orderTime || (a.orderTime === b.orderTime && a.keyId < b.keyId)

/** Where a buffer notes the keys it changes: the suppression store's change log. */
export interface BufferLog {
  readonly changes: ChangeSet<string> | undefined
}

/** The log of a buffer not part of a logged store (yet). */
export const NOT_LOGGED: BufferLog = Object.freeze({ changes: undefined })

/**
 * What the suppress processor needs of a buffer: in memory, or spilling to disk. Its contents, by key
 * id, are the suppression store's entries.
 */
export interface SuppressionBuffer<K, V> extends StoreContents<string> {
  readonly numRecords: number
  /** Sum of entry sizes. */
  readonly bufferSize: number
  /** Entries held on disk (0 in memory). */
  readonly spilledRecords: number
  has(keyId: string): boolean
  /** The order time of a buffered key (for `waitFrom: first`, its first update's timestamp). */
  orderTimeOf(keyId: string): number | undefined
  /** Earliest order time, or Infinity when empty. */
  minOrderTime(): number
  put(keyId: string, key: K, value: V | null, timestamp: number, orderTime: number, size: number): void
  evictWhile(predicate: (oldest: BufferEntry<K, V>) => boolean, emit: (entry: BufferEntry<K, V>) => void): void
  /** From now on, note the keys this buffer changes in `log`. */
  logChangesTo(log: BufferLog): void
  close(): void
}

/**
 * The suppression buffer: one entry per key, ordered by (order time, key bytes), with O(log n) put,
 * update and eviction and exact byte accounting. It holds no policy: the suppress processor decides
 * order times and calls `evictWhile` with its rule (as Kafka Streams' buffer offers evictWhile).
 */
export class TimeOrderedBuffer<K, V> implements SuppressionBuffer<K, V> {
  private readonly heap = new IndexedMinHeap<BufferEntry<K, V>>(older)
  private readonly byKey = new Map<string, BufferEntry<K, V>>()
  private bytes = 0
  private log = NOT_LOGGED

  logChangesTo(log: BufferLog): void {
    this.log = log
  }

  saved(keyId: string): SavedEntry<K, V> | undefined {
    return snapshotOf(this.byKey.get(keyId))
  }

  savedEntries(): Array<[StoreKey, unknown]> {
    return [...this.byKey].map(([id, e]) => [id, snapshotOf(e)])
  }

  load(keyId: string, saved: unknown): void {
    loadSaved(this, keyId, saved)
  }

  get numRecords(): number {
    return this.byKey.size
  }

  get bufferSize(): number {
    return this.bytes
  }
  get spilledRecords(): number {
    return 0
  }


  get(keyId: string): BufferEntry<K, V> | undefined {
    return this.byKey.get(keyId)
  }

  has(keyId: string): boolean {
    return this.byKey.has(keyId)
  }

  orderTimeOf(keyId: string): number | undefined {
    return this.byKey.get(keyId)?.orderTime
  }

  close(): void {}

  /** Earliest order time, or Infinity when empty. */
  minOrderTime(): number {
    return this.heap.peek()?.orderTime ?? Infinity
  }

  /** Inserts a key, or updates it in place (value, timestamp, order time, size). */
  put(keyId: string, key: K, value: V | null, timestamp: number, orderTime: number, size: number): void {
    const existing = this.byKey.get(keyId)
    const c = this.log.changes
    if (c !== undefined && (existing === undefined || existing.noted !== c.epoch)) {
      if (!c.has(keyId)) c.first(keyId, existing !== undefined)
      if (existing !== undefined) existing.noted = c.epoch
    }
    if (existing === undefined) {
      const entry = new BufferEntry(keyId, key, value, timestamp, orderTime, size)
      if (c !== undefined) entry.noted = c.epoch
      this.byKey.set(keyId, entry)
      this.heap.add(entry)
      this.bytes += size
      return
    }
    this.bytes += size - existing.size
    existing.value = value
    existing.timestamp = timestamp
    existing.size = size
    if (existing.orderTime !== orderTime) {
      this.heap.remove(existing)
      existing.orderTime = orderTime
      this.heap.add(existing)
    }
  }

  /** Removes oldest entries while `predicate` holds, handing each to `emit` after it left the buffer. */
  evictWhile(predicate: (oldest: BufferEntry<K, V>) => boolean, emit: (entry: BufferEntry<K, V>) => void): void {
    for (let head = this.heap.peek(); head !== undefined && predicate(head); head = this.heap.peek()) {
      this.heap.poll()
      this.byKey.delete(head.keyId)
      const c = this.log.changes
      if (c !== undefined && head.noted !== c.epoch && !c.has(head.keyId)) c.first(head.keyId, true)
      this.bytes -= head.size
      emit(head)
    }
  }

  /** Entries oldest first (for snapshots and tests). */
  entries(): Array<BufferEntry<K, V>> {
    return [...this.byKey.values()].sort((a, b) => (older(a, b) ? -1 : older(b, a) ? 1 : 0))
  }
}

/** A buffered entry as a commit saves it. */
export interface SavedEntry<K, V> {
  readonly key: K
  readonly value: V | null
  readonly timestamp: number
  readonly orderTime: number
  readonly size: number
}

/** Puts a saved entry back into a buffer. */
export function loadSaved<K, V>(buffer: SuppressionBuffer<K, V>, keyId: string, saved: unknown): void {
  const e = saved as SavedEntry<K, V>
  buffer.put(keyId, e.key, e.value, e.timestamp, e.orderTime, e.size)
}

export function snapshotOf<K, V>(e: BufferEntry<K, V> | undefined): SavedEntry<K, V> | undefined {
  return e === undefined ? undefined : { key: e.key, value: e.value, timestamp: e.timestamp, orderTime: e.orderTime, size: e.size }
}

/** Store keys of the suppression's own fields (buffer keys are strings, so they cannot clash). */
const STREAM_TIME_KEY = -1
const CLOSED_EARLY_KEY = -2

/**
 * The task store holding a suppression's buffer (in memory, or spilling to disk), its observed stream
 * time and the windows the wall clock closed early, so all are committed and restored (SEMANTICS 6:
 * nothing buffered is lost, nothing emitted is emitted again).
 */
export class SuppressionStore<K, V> {
  private current: SuppressionBuffer<K, V> = new TimeOrderedBuffer<K, V>()
  private readonly observed = new LoggedField(STREAM_TIME_KEY, -1)
  private readonly closed = new LoggedField<Array<[number, string]>>(
    CLOSED_EARLY_KEY,
    [],
    (windows) => (windows.length === 0 ? undefined : windows.slice()),
    (saved) => (saved as Array<[number, string]>).slice(),
  )
  /** The buffer's entries by key id, and the store's own fields. */
  private readonly log = new ChangeLog<string>(
    {
      saved: (id) => this.current.saved(id),
      savedEntries: () => this.current.savedEntries(),
      load: (id, saved) => this.current.load(id, saved),
    },
    [this.observed, this.closed] as Array<LoggedField<unknown>>,
  )
  /** A spilling suppression's committed entries, in a durable run (streamed into the buffer in useBuffer). */
  private disk: StoreDisk | undefined

  constructor(readonly name: string) {
    this.current.logChangesTo(this.log)
  }

  readonly [PERSISTENT]: PersistentCapability = {
    attach: (disk) => {
      this.disk = disk
      // The store's own fields are small: read them now. Buffered entries wait for the real buffer.
      for (const field of [this.observed, this.closed]) {
        const saved = disk.get(field.key)
        if (saved !== undefined) field.restore(saved)
      }
    },
  }

  readonly [DURABLE]: DurableStore = this.log

  get buffer(): SuppressionBuffer<K, V> {
    return this.current
  }

  /** What the buffer holds (metrics). */
  [BUFFER_METRICS](): { records: number; bytes: number; spilled: number } {
    const b = this.current
    return { records: b.numRecords, bytes: b.bufferSize, spilled: b.spilledRecords }
  }

  /**
   * Replaces the in-memory buffer with `buffer` (a spilling one), moving what was restored into it. In a
   * durable run the committed entries stream from disk one by one, so a buffer larger than memory is
   * restored within its memory bound. The moves are not changes: the new buffer joins the log after them.
   */
  useBuffer(buffer: SuppressionBuffer<K, V>): void {
    const moved = this.disk !== undefined ? this.disk.entries() : this.current.savedEntries()
    for (const [id, saved] of moved) if (typeof id === 'string') buffer.load(id, saved)
    buffer.logChangesTo(this.log)
    this.current.close()
    this.current = buffer
  }

  /** Windows the wall clock closed before stream time did, as (window end, key id), by end. */
  get closedEarly(): Array<[number, string]> {
    return this.closed.value
  }

  set closedEarly(windows: Array<[number, string]>) {
    this.closed.value = windows
  }

  /** Call after changing the `closedEarly` array in place. */
  closedEarlyChanged(): void {
    this.closed.touch()
  }

  get streamTime(): number {
    return this.observed.value
  }

  set streamTime(t: number) {
    this.observed.value = t
  }

  close(): void {
    this.current.close()
  }
}
