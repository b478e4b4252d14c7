import type { StoreKey } from '../processor/api.js'
import { DURABLE } from '../state/stores.js'
import type { DurableStore } from '../state/stores.js'
import { ChangeSet } from '../state/change-set.js'
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

/** What the suppress processor needs of a buffer: in memory, or spilling to disk. */
export interface SuppressionBuffer<K, V> {
  readonly numRecords: number
  /** Sum of entry sizes. */
  readonly bufferSize: number
  has(keyId: string): boolean
  /** The order time of a buffered key (for `waitFrom: first`, its first update's timestamp). */
  orderTimeOf(keyId: string): number | undefined
  /** Earliest order time, or Infinity when empty. */
  minOrderTime(): number
  put(keyId: string, key: K, value: V | null, timestamp: number, orderTime: number, size: number): void
  evictWhile(predicate: (oldest: BufferEntry<K, V>) => boolean, emit: (entry: BufferEntry<K, V>) => void): void
  /** Change tracking and restore, for the suppression's durable store. */
  readonly durable: DurableStore
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
  /** Key ids changed since the last commit, recorded only when durable. */
  private changed: ChangeSet<string> | undefined

  /** Durable-store capability: the suppression's store commits changed entries and restores them. */
  readonly durable: DurableStore = {
    trackChanges: () => {
      this.changed ??= new ChangeSet()
    },
    takeChanges: () => this.changed?.take((id) => snapshotOf(this.byKey.get(id))) ?? [],
    entries: () => [...this.byKey].map(([id, e]) => [id, snapshotOf(e)]),
    restore: (entries) => {
      putSaved(this, entries)
      this.changed?.clear()
    },
  }

  get numRecords(): number {
    return this.byKey.size
  }

  get bufferSize(): number {
    return this.bytes
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
    const c = this.changed
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
      const c = this.changed
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

/** Puts saved entries (keyed by key id; other keys are the store's own fields) back into a buffer. */
export function putSaved<K, V>(buffer: SuppressionBuffer<K, V>, entries: Iterable<readonly [StoreKey, unknown]>): void {
  for (const [id, v] of entries) {
    if (typeof id !== 'string') continue
    const e = v as SavedEntry<K, V>
    buffer.put(id, e.key, e.value, e.timestamp, e.orderTime, e.size)
  }
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
  private tracking = false
  private observed = -1
  private observedChanged = false
  private closed: Array<[number, string]> = []
  private closedChanged = false
  /** A spilling suppression's committed entries, in a durable run (streamed into the buffer in useBuffer). */
  private disk: StoreDisk | undefined

  constructor(readonly name: string) {}

  readonly [PERSISTENT]: PersistentCapability = {
    attach: (disk) => {
      this.disk = disk
      // The store's own fields are small: read them now. Buffered entries wait for the real buffer.
      const observed = disk.get(STREAM_TIME_KEY)
      if (observed !== undefined) this.observed = observed as number
      const closed = disk.get(CLOSED_EARLY_KEY)
      if (closed !== undefined) this.closed = (closed as Array<[number, string]>).slice()
    },
  }

  get buffer(): SuppressionBuffer<K, V> {
    return this.current
  }

  /**
   * Replaces the in-memory buffer with `buffer` (a spilling one), moving what was restored into it. In a
   * durable run the committed entries stream from disk one by one, so a buffer larger than memory is
   * restored within its memory bound.
   */
  useBuffer(buffer: SuppressionBuffer<K, V>): void {
    if (this.tracking) buffer.durable.trackChanges()
    if (this.disk !== undefined) {
      putSaved(buffer, this.disk.entries())
      buffer.durable.restore([]) // forgets the puts above as changes: they are committed already
    } else {
      buffer.durable.restore(this.current.durable.entries())
    }
    this.current.close()
    this.current = buffer
  }

  /** Windows the wall clock closed before stream time did, as (window end, key id), by end. */
  get closedEarly(): Array<[number, string]> {
    return this.closed
  }

  set closedEarly(windows: Array<[number, string]>) {
    this.closed = windows
    this.closedChanged = true
  }

  /** Call after changing the `closedEarly` array in place. */
  closedEarlyChanged(): void {
    this.closedChanged = true
  }

  get streamTime(): number {
    return this.observed
  }

  set streamTime(t: number) {
    this.observed = t
    this.observedChanged = true
  }

  readonly [DURABLE]: DurableStore = {
    trackChanges: () => {
      this.tracking = true
      this.current.durable.trackChanges()
    },
    takeChanges: () => {
      const changes = this.current.durable.takeChanges()
      if (this.observedChanged) changes.push([STREAM_TIME_KEY, this.observed])
      if (this.closedChanged) changes.push([CLOSED_EARLY_KEY, this.closed.length === 0 ? undefined : this.closed.slice()])
      this.observedChanged = false
      this.closedChanged = false
      return changes
    },
    entries: () => [...this.current.durable.entries(), [STREAM_TIME_KEY, this.observed], [CLOSED_EARLY_KEY, this.closed.slice()]],
    restore: (entries) => {
      this.current.durable.restore(entries)
      for (const [k, v] of entries) {
        if (k === STREAM_TIME_KEY) this.observed = v as number
        else if (k === CLOSED_EARLY_KEY) this.closed = (v as Array<[number, string]>).slice()
      }
    },
  }

  close(): void {
    this.current.close()
  }
}
