import type { KeyValueStore, StoreKey } from '../processor/api.js'
import { ChangeLog } from './change-log.js'
import { ReadCache } from './read-cache.js'
import { compareStoreKeys as compareKeys } from './key-part.js'
import { DURABLE } from './durable.js'
import { checkStoreWrite } from './store-writes.js'
import type { StoreWriteSerdes } from './store-writes.js'
import type { DurableStore } from './durable.js'

/** A store's committed entries on disk, as the state directory holds them. */
export interface StoreDisk {
  get(key: StoreKey): unknown
  /** Every entry from key `from` on (from the first without it), in the disk's key order (booleans, numbers, then strings). */
  entries(from?: StoreKey): Iterable<[StoreKey, unknown]>
  count(): number
  /** The disk's key order, when it is not `compareStoreKeys`'s (booleans, numbers, then strings). */
  compare?(a: StoreKey, b: StoreKey): number
}

/** The capability of a store that can live on disk (looked up by this symbol, like DURABLE). */
export const PERSISTENT: unique symbol = Symbol('punctual.persistentStore')

export interface PersistentCapability {
  /** From now on, committed entries are on `disk`; memory holds changes and a bounded read cache. */
  attach(disk: StoreDisk): void
}

export function persistentStore(store: unknown): PersistentCapability | undefined {
  return (store as { [PERSISTENT]?: PersistentCapability })[PERSISTENT]
}

/** Deleted since the last commit (a value the user cannot store: stores hold values, not undefined). */
const DELETED = Symbol('deleted')

/**
 * A key-value store on disk (Kafka Streams' persistent store): in a durable run its committed entries
 * live in the state directory, memory holds the changes since the last commit (the write-back cache,
 * written by the commit) and a bounded cache of entries read; state may be larger than memory, and a
 * restart reads nothing up front. Without a state directory (the test kit, a run without `stateDir`) it
 * is an in-memory store.
 */
export class PersistentKeyValueStore<K extends StoreKey, V> implements KeyValueStore<K, V> {
  private disk: StoreDisk | undefined
  /** Without a disk: every entry. With one: changes since the last commit. */
  private mem = new Map<K, V | typeof DELETED>()
  /** With a disk: changes taken by a commit that is not durable yet. */
  private committing = new Map<K, V | typeof DELETED>()
  /** With a disk: entries read (or written and committed), at most cacheEntries. */
  private readonly cache: ReadCache<K, V>
  private readonly log = new ChangeLog<K>({
    saved: (k) => {
      const v = this.mem.get(k)
      return v === DELETED ? undefined : v
    },
    savedEntries: () => this.all(),
    load: (k, v) => this.mem.set(k, v as V),
    taken: () => {
      // With a disk, the changes are on their way there: reads find them in `committing` until the
      // commit is durable (reads of the disk see the previous commit until then).
      if (this.disk === undefined) return
      if (this.committing.size === 0) {
        // The usual case (the last commit is durable): the changes become the commit's as they are.
        const taken = this.mem
        this.mem = this.committing
        this.committing = taken
        return
      }
      for (const [k, v] of this.mem) this.committing.set(k, v)
      this.mem.clear()
    },
    committed: () => {
      // Durable: the disk has them now. A written value stays cached, unless the key changed again since.
      for (const [k, v] of this.committing) {
        if (v === DELETED) this.cache.delete(k)
        else if (!this.mem.has(k)) this.remember(k, v)
      }
      this.committing.clear()
    },
  })

  constructor(
    readonly name: string,
    cacheEntries: number,
    /** The serdes its builder writes the changelog with: a put checks the entry fits them. */
    private readonly serdes: StoreWriteSerdes = {},
  ) {
    this.cache = new ReadCache(cacheEntries)
  }

  readonly [PERSISTENT]: PersistentCapability = {
    attach: (disk) => {
      this.disk = disk
    },
  }

  readonly [DURABLE]: DurableStore = this.log

  get(key: K): V | undefined {
    const v = this.mem.get(key) ?? this.committing.get(key)
    if (v !== undefined) return v === DELETED ? undefined : v
    const disk = this.disk
    if (disk === undefined) return undefined
    const cached = this.cache.get(key)
    if (cached !== undefined) return cached
    const read = disk.get(key) as V | undefined
    if (read !== undefined) this.remember(key, read)
    return read
  }

  put(key: K, value: V): void {
    checkStoreWrite(this.name, this.serdes, key, value)
    const c = this.log.changes
    if (c !== undefined && !c.has(key)) {
      // Whether the key is on disk matters only if it is deleted again before the commit; rather than
      // read the disk for every put, assume it is (at worst the commit deletes an absent key).
      const v = this.mem.get(key) ?? this.committing.get(key)
      c.first(key, v !== undefined ? v !== DELETED : this.disk !== undefined)
    }
    this.mem.set(key, value)
    this.cache.delete(key)
  }

  putIfAbsent(key: K, value: V): V | undefined {
    const existing = this.get(key)
    if (existing === undefined) this.put(key, value)
    return existing
  }

  delete(key: K): V | undefined {
    const existing = this.get(key)
    const c = this.log.changes
    if (c !== undefined && !c.has(key)) c.first(key, existing !== undefined)
    if (this.disk === undefined) this.mem.delete(key)
    else this.mem.set(key, DELETED)
    this.cache.delete(key)
    return existing
  }

  /** All entries in key order: booleans, numbers, then strings (the disk's order, in memory too). */
  all(): IterableIterator<[K, V]> {
    return this.scan(undefined, undefined)
  }

  /** The entries with keys from `from` to `to`, both included, in key order; the disk is read from `from` on. */
  range(from: K, to: K): IterableIterator<[K, V]> {
    return this.scan(from, to)
  }

  private *scan(from: K | undefined, to: K | undefined): IterableIterator<[K, V]> {
    const disk = this.disk
    const compare = disk?.compare ?? compareKeys
    const within = (k: K): boolean => (from === undefined || compare(k, from) >= 0) && (to === undefined || compare(k, to) <= 0)
    if (disk === undefined) {
      for (const k of [...this.mem.keys()].filter(within).sort(compareKeys)) yield [k, this.mem.get(k) as V]
      return
    }
    // Merge the disk's entries with the changes not on disk yet (few), both in key order.
    const changes = [...new Set([...this.committing.keys(), ...this.mem.keys()])].filter(within).sort(compare)
    let i = 0
    for (const [dk, dv] of disk.entries(from)) {
      if (to !== undefined && compare(dk as K, to) > 0) break
      while (i < changes.length && compare(changes[i] as K, dk) < 0) yield* this.changed_(changes[i++] as K)
      if (i < changes.length && compare(changes[i] as K, dk) === 0) yield* this.changed_(changes[i++] as K)
      else yield [dk as K, dv as V]
    }
    while (i < changes.length) yield* this.changed_(changes[i++] as K)
  }

  approximateNumEntries(): number {
    if (this.disk === undefined) return this.mem.size
    let n = this.disk.count()
    for (const v of this.committing.values()) n += v === DELETED ? -1 : 1
    for (const [k, v] of this.mem) if (!this.committing.has(k)) n += v === DELETED ? -1 : 1
    return Math.max(0, n)
  }

  close(): void {
    this.mem.clear()
    this.committing.clear()
    this.cache.clear()
  }

  private *changed_(key: K): IterableIterator<[K, V]> {
    const v = this.mem.get(key) ?? this.committing.get(key)
    if (v !== undefined && v !== DELETED) yield [key, v]
  }

  private remember(key: K, value: V): void {
    this.cache.set(key, value)
  }
}
