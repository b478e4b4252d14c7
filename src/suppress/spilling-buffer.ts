import { mkdirSync, rmSync } from 'node:fs'
import { open } from 'lmdb'
import type { Database, RootDatabase } from 'lmdb'
import type { StoreKey } from '../processor/api.js'
import { SlottedHeap } from '../util/indexed-heap.js'
import { BufferEntry, loadSaved, NOT_LOGGED, snapshotOf } from './buffer.js'
import { SpillIndex, keyIdHash } from './spill-index.js'
import type { BufferLog, SavedEntry, SuppressionBuffer } from './buffer.js'

/** An entry in memory: a buffer entry that also knows its slots in the oldest- and newest-first heaps. */
class MemEntry<K, V> extends BufferEntry<K, V> {
  oldestSlot = -1
  newestSlot = -1
}

interface Spilled<K, V> {
  readonly key: K
  readonly value: V | null
  readonly timestamp: number
  readonly size: number
}

/** A spilled entry on disk: an array, which msgpack encodes with no record structure per entry. */
type OnDisk<K, V> = [K, V | null, number, number]
const toDisk = <K, V>(s: Spilled<K, V>): OnDisk<K, V> => [s.key, s.value, s.timestamp, s.size]
const fromDisk = <K, V>(d: OnDisk<K, V>): Spilled<K, V> => ({ key: d[0], value: d[1], timestamp: d[2], size: d[3] })

const older = (a: MemEntry<unknown, unknown>, b: MemEntry<unknown, unknown>): boolean => a.orderTime < b.orderTime || (a.orderTime === b.orderTime && a.keyId < b.keyId)
const newer = (a: MemEntry<unknown, unknown>, b: MemEntry<unknown, unknown>): boolean => older(b, a)
/** Pending disk operations committed together. */
const FLUSH_AT = 4096
const orderKey = (orderTime: number, keyId: string): string => `${orderTime}\u0000${keyId}`

const compareOrder = (t1: number, k1: string, t2: number, k2: string): number => (t1 !== t2 ? t1 - t2 : k1 < k2 ? -1 : k1 > k2 ? 1 : 0)

/** A disk write waiting for the next flush. */
interface PendingWrite<K, V> {
  readonly orderTime: number
  readonly keyId: string
  /** The entry to write, or null to delete it. */
  value: Spilled<K, V> | null
  /** Whether the disk held this (order time, key id) at the last flush (a delete is then needed). */
  readonly onDisk: boolean
}

/**
 * A suppression buffer that never emits early and keeps its entries within the memory bound: the oldest
 * entries (by order time, then key bytes) stay in memory within the bound, and the newer ones spill to
 * an lmdb environment whose keys are (order time, key bytes), so the disk part is ordered the same way.
 * Every memory entry is older than every spilled one; eviction takes from memory and refills it from disk
 * in order, so emission order and results are those of an unbounded buffer (KAFKA-7224, beyond Kafka).
 * The environment lives in `dir`, is a cache (emptied on open, deleted on close): in a durable run the
 * suppression's store commits the changed keys, wherever they are, and a restart rebuilds the buffer.
 *
 * - A spilled entry leaves 12-24 bytes in memory: its key hash and order time in a `SpillIndex`, so
 *   that a put of a key that is not spilled (the common case) reads nothing from disk, and an update of
 *   a spilled one reads just its entry. The index replaced an lmdb database of key id -> order time.
 * - Disk writes go through a small write-back overlay (point reads consult it first) and are committed
 *   in one lmdb transaction per FLUSH_AT operations, or before a range read: per-write commits were the
 *   whole cost of spilling. An entry spilled and taken back between two flushes never reaches the disk.
 * - The smallest spilled order key is cached, so most puts need no range read.
 */
export class SpillingBuffer<K, V> implements SuppressionBuffer<K, V> {
  private readonly mem = new Map<string, MemEntry<K, V>>()
  private readonly oldest = new SlottedHeap<MemEntry<K, V>>(older, { get: (e) => e.oldestSlot, set: (e, i) => (e.oldestSlot = i) })
  private readonly newest = new SlottedHeap<MemEntry<K, V>>(newer, { get: (e) => e.newestSlot, set: (e, i) => (e.newestSlot = i) })
  private memBytes = 0
  private diskCount = 0
  private diskBytes = 0
  private readonly env: RootDatabase
  /** (order time, key id) -> entry. */
  private readonly entries: Database<OnDisk<K, V>, [number, string]>
  /** (key hash, order time) of every spilled entry, to find a spilled key on update. */
  private readonly spilled = new SpillIndex()
  /** Uncommitted entry writes by orderKey. */
  private readonly pending = new Map<string, PendingWrite<K, V>>()
  /** The smallest spilled (order time, key id), when known. */
  private cachedDiskMin: [number, string] | undefined
  private diskMinKnown = true
  private log = NOT_LOGGED

  constructor(
    private readonly dir: string,
    private readonly maxRecords: number,
    private readonly maxBytes: number,
    /** Hashes key ids for the spill index; tests pass a colliding one. */
    private readonly hash: (keyId: string) => number = keyIdHash,
  ) {
    // Left over by a process that was killed: stale, since the buffer is rebuilt from its store.
    rmSync(dir, { recursive: true, force: true })
    mkdirSync(dir, { recursive: true })
    // Spilled entries are a cache of the (separately durable) buffer: no fsync per write.
    this.env = open({ path: dir, noSync: true, compression: false })
    this.entries = this.env.openDB<OnDisk<K, V>, [number, string]>({ name: 'entries' })
  }

  get numRecords(): number {
    return this.mem.size + this.diskCount
  }

  get bufferSize(): number {
    return this.memBytes + this.diskBytes
  }

  /** Bytes and entries held in memory (within the bound). */
  get memoryRecords(): number {
    return this.mem.size
  }

  get memorySize(): number {
    return this.memBytes
  }

  get spilledRecords(): number {
    return this.diskCount
  }

  minOrderTime(): number {
    const head = this.oldest.peek()
    if (head !== undefined) return head.orderTime
    return this.diskMin()?.[0] ?? Infinity
  }

  has(keyId: string): boolean {
    return this.mem.has(keyId) || this.spilledOrderTime(keyId) !== undefined
  }

  orderTimeOf(keyId: string): number | undefined {
    return this.mem.get(keyId)?.orderTime ?? this.spilledOrderTime(keyId)
  }

  logChangesTo(log: BufferLog): void {
    this.log = log
  }

  savedEntries(): Array<[StoreKey, unknown]> {
    const out: Array<[StoreKey, unknown]> = [...this.mem].map(([id, e]) => [id, snapshotOf(e)])
    this.flush()
    for (const { key, value } of this.entries.getRange({})) out.push([key[1], { ...fromDisk(value), orderTime: key[0] }])
    return out
  }

  load(keyId: string, saved: unknown): void {
    loadSaved(this, keyId, saved)
  }

  /** A key's entry as a commit saves it, wherever it is; undefined when it is not buffered. */
  saved(keyId: string): SavedEntry<K, V> | undefined {
    const inMemory = this.mem.get(keyId)
    if (inMemory !== undefined) return snapshotOf(inMemory)
    const orderTime = this.spilledOrderTime(keyId)
    if (orderTime === undefined) return undefined
    const pending = this.pending.get(orderKey(orderTime, keyId))
    const onDisk = pending === undefined ? this.entries.get([orderTime, keyId]) : undefined
    const s = pending !== undefined ? pending.value : onDisk === undefined ? undefined : fromDisk(onDisk)
    return s === null || s === undefined ? undefined : { key: s.key, value: s.value, timestamp: s.timestamp, orderTime, size: s.size }
  }

  /** The order time of a spilled key: its index candidates, each checked on disk (or in the overlay). */
  private spilledOrderTime(keyId: string, keyHash?: number): number | undefined {
    if (this.diskCount === 0) return undefined
    const h = keyHash ?? this.hash(keyId)
    const index = this.spilled
    for (let slot = index.find(h, index.home(h)); slot >= 0; slot = index.find(h, slot + 1)) {
      const orderTime = index.orderTimeAt(slot)
      const pending = this.pending.get(orderKey(orderTime, keyId))
      if (pending !== undefined ? pending.value !== null : this.entries.doesExist([orderTime, keyId])) return orderTime
    }
    return undefined
  }

  put(keyId: string, key: K, value: V | null, timestamp: number, orderTime: number, size: number): void {
    const c = this.log.changes
    if (c !== undefined && !c.has(keyId)) c.first(keyId, this.has(keyId))
    const inMemory = this.mem.get(keyId)
    if (inMemory !== undefined) {
      this.memBytes += size - inMemory.size
      inMemory.value = value
      inMemory.timestamp = timestamp
      inMemory.size = size
      if (inMemory.orderTime !== orderTime) {
        this.oldest.remove(inMemory)
        this.newest.remove(inMemory)
        inMemory.orderTime = orderTime
        this.oldest.add(inMemory)
        this.newest.add(inMemory)
      }
      if (this.diskCount > 0 || this.overBound()) this.rebalance()
      return
    }
    if (this.diskCount === 0 && this.mem.size < this.maxRecords && this.memBytes + size <= this.maxBytes) {
      this.addToMemory(new MemEntry(keyId, key, value, timestamp, orderTime, size)) // the common case: nothing on disk and room in memory
      return
    }
    // Hashed once for the index lookup, the removal and the addition below.
    const h = this.hash(keyId)
    const spilledAt = this.spilledOrderTime(keyId, h)
    if (spilledAt !== undefined) this.unspill(spilledAt, keyId, h)
    const diskMin = this.diskMin()
    if (diskMin !== undefined && compareOrder(orderTime, keyId, diskMin[0], diskMin[1]) > 0) {
      // Newer than a spilled entry, so it belongs on disk: straight there, memory unchanged.
      this.toDisk(keyId, h, orderTime, { key, value, timestamp, size })
      return
    }
    this.addToMemory(new MemEntry(keyId, key, value, timestamp, orderTime, size))
    this.rebalance()
  }

  /** Removes oldest entries while `predicate` holds, refilling memory from disk in order. */
  evictWhile(predicate: (oldest: BufferEntry<K, V>) => boolean, emit: (entry: BufferEntry<K, V>) => void): void {
    for (;;) {
      if (this.mem.size === 0 && this.diskCount > 0) this.refill()
      const head = this.oldest.peek()
      if (head === undefined || !predicate(head)) return
      this.removeFromMemory(head)
      const c = this.log.changes
      if (c !== undefined && !c.has(head.keyId)) c.first(head.keyId, true)
      emit(head)
    }
  }

  close(): void {
    this.pending.clear()
    this.spilled.clear()
    this.env.close()
    rmSync(this.dir, { recursive: true, force: true })
  }

  private addToMemory(e: MemEntry<K, V>): void {
    this.mem.set(e.keyId, e)
    this.oldest.add(e)
    this.newest.add(e)
    this.memBytes += e.size
  }

  private removeFromMemory(e: MemEntry<K, V>): void {
    this.mem.delete(e.keyId)
    this.oldest.remove(e)
    this.newest.remove(e)
    this.memBytes -= e.size
  }

  private overBound(): boolean {
    return this.mem.size > this.maxRecords || this.memBytes > this.maxBytes
  }

  /** Restores the invariants: memory within its bound, and older than everything on disk. */
  private rebalance(): void {
    if (this.diskCount > 0) {
      const diskMin = this.diskMin()
      for (let top = this.newest.peek(); top !== undefined && diskMin !== undefined && compareOrder(top.orderTime, top.keyId, diskMin[0], diskMin[1]) > 0; top = this.newest.peek()) {
        this.spill(top)
      }
    }
    while (this.overBound()) this.spill(this.newest.peek() as MemEntry<K, V>)
  }

  private spill(e: MemEntry<K, V>): void {
    this.removeFromMemory(e)
    this.toDisk(e.keyId, this.hash(e.keyId), e.orderTime, { key: e.key, value: e.value, timestamp: e.timestamp, size: e.size })
  }

  /** Writes an entry that is not buffered anywhere to disk (through the overlay). */
  private toDisk(keyId: string, keyHash: number, orderTime: number, value: Spilled<K, V>): void {
    const ok = orderKey(orderTime, keyId)
    const pending = this.pending.get(ok)
    // Not pending: the disk does not hold it (it is not spilled, and the disk holds only spilled entries).
    if (pending !== undefined) pending.value = value
    else this.pending.set(ok, { orderTime, keyId, value, onDisk: false })
    this.spilled.add(keyHash, orderTime)
    this.diskCount++
    this.diskBytes += value.size
    const min = this.cachedDiskMin
    if (this.diskMinKnown && (min === undefined || compareOrder(orderTime, keyId, min[0], min[1]) < 0)) this.cachedDiskMin = [orderTime, keyId]
    this.maybeFlush()
  }

  /** Takes a spilled entry off disk (its new version is being put). */
  private unspill(orderTime: number, keyId: string, keyHash: number): void {
    const ok = orderKey(orderTime, keyId)
    const pending = this.pending.get(ok)
    const s = pending !== undefined ? (pending.value as Spilled<K, V>) : fromDisk(this.entries.get([orderTime, keyId]) as OnDisk<K, V>)
    if (pending === undefined) this.pending.set(ok, { orderTime, keyId, value: null, onDisk: true })
    else if (pending.onDisk) pending.value = null
    else this.pending.delete(ok) // spilled and taken back since the last flush: nothing to write
    this.spilled.remove(keyHash, orderTime)
    this.diskCount--
    this.diskBytes -= s.size
    const min = this.cachedDiskMin
    if (min !== undefined && min[0] === orderTime && min[1] === keyId) this.diskMinKnown = false
    this.maybeFlush()
  }

  private maybeFlush(): void {
    if (this.pending.size >= FLUSH_AT) this.flush()
  }

  /** Commits the pending writes in one transaction. */
  private flush(): void {
    if (this.pending.size === 0) return
    this.env.transactionSync(() => {
      for (const { orderTime, keyId, value } of this.pending.values()) {
        if (value === null) this.entries.removeSync([orderTime, keyId])
        else this.entries.putSync([orderTime, keyId], toDisk(value))
      }
    })
    this.pending.clear()
  }

  private diskMin(): [number, string] | undefined {
    if (this.diskCount === 0) return undefined
    if (!this.diskMinKnown) {
      this.flush()
      this.cachedDiskMin = undefined
      for (const k of this.entries.getKeys({ limit: 1 })) this.cachedDiskMin = k
      this.diskMinKnown = true
    }
    return this.cachedDiskMin
  }

  /** Moves the oldest spilled entries back into memory, as many as fit within the bound. */
  private refill(): void {
    this.flush()
    const batch: Array<[number, string, Spilled<K, V>]> = []
    let records = 0
    let bytes = 0
    for (const { key, value: onDisk } of this.entries.getRange({})) {
      const value = fromDisk(onDisk)
      if (batch.length > 0 && (records + 1 > this.maxRecords || bytes + value.size > this.maxBytes)) break
      batch.push([key[0], key[1], value])
      records++
      bytes += value.size
    }
    this.env.transactionSync(() => {
      for (const [orderTime, keyId] of batch) this.entries.removeSync([orderTime, keyId])
    })
    for (const [orderTime, keyId, s] of batch) {
      this.spilled.remove(this.hash(keyId), orderTime)
      this.diskCount--
      this.diskBytes -= s.size
      this.addToMemory(new MemEntry(keyId, s.key, s.value, s.timestamp, orderTime, s.size))
    }
    this.diskMinKnown = false
  }
}
