import type { StoreKey } from '../processor/api.js'
import type { ExpiredEntry, ListState, MapState, StateKind, ValueState } from './api.js'
import type { TtlPolicy } from './ttl.js'
import { ShardedMap } from '../util/sharded-map.js'

/** A stored value with its last access time (used only when the state has a TTL). */
interface Cell<T> {
  v: T
  a: number
}

/**
 * A keyed state's committed entries in the state directory, read on demand: a task restored from the
 * state directory loads a key's entries the first time it is used, not every key up front.
 */
export interface KeyedStateDisk {
  /** One key's entries in saved form (`snapshotKey`'s), or undefined when the key has none. */
  get(key: StoreKey): unknown
  /** Every key's entries in saved form. */
  entries(): Iterable<[StoreKey, unknown]>
}

/** A keyed state's entries in the state directory: their kind (undefined: it holds none) and where to read them. */
export interface KeyedStateOnDisk {
  readonly kind: StateKind | undefined
  readonly disk: KeyedStateDisk
}

/** What a state needs from its keyed node: the current key, the TTL clock and TTL timers. */
export interface StateHost {
  currentKey(): StoreKey
  /** Current time of the TTL's domain. */
  ttlNow(): number
  registerTtlTimer(key: StoreKey, at: number): void
  deleteTtlTimer(key: StoreKey, at: number): void
  expired(entry: ExpiredEntry<StoreKey>): void
}

/** A keyed state's data: per key, a cell, a map of cells or a list of cells. */
export abstract class StateTable {
  constructor(
    readonly id: number,
    readonly name: string,
    readonly kind: StateKind,
    readonly ttl: TtlPolicy | undefined,
    protected readonly host: StateHost,
  ) {}

  /** Keys changed since the last `takeChanged()`, recorded only while tracking (durable state). */
  private changedKeys: Set<StoreKey> | undefined
  /**
   * With a disk: keys whose entries were removed while the disk may still hold them, so a read must not
   * fall through to it. A key leaves once a commit that wrote its removal is durable.
   */
  private gone: Set<StoreKey> | undefined
  /** With a disk: the keys gone when the commit in flight took its changes. */
  private goneAtTake: StoreKey[] = []
  private disk: KeyedStateDisk | undefined
  /** With a disk: whether it may hold a key memory does not (false while it held none and no key left memory). */
  private diskHoldsOthers = false
  /** With a disk: keys memory keeps after a durable commit (undefined: every key stays, see `attach`). */
  private cacheEntries: number | undefined
  /** Commits that took changes and are not durable yet: keys leave memory only when none is. */
  private takesInFlight = 0

  trackChanges(): void {
    this.changedKeys ??= new Set()
  }

  /**
   * From now on, the committed entries are on `disk` and load a key at a time. Every key in memory then
   * was read from it or changed since; a key not in memory and not gone is as the disk has it.
   * `holdsKeys`: whether the disk has entries now. Keys beyond `cacheEntries` leave memory after each
   * durable commit, unless memory held keys already (restored from elsewhere, so not on this disk).
   */
  attach(disk: KeyedStateDisk, holdsKeys = true, cacheEntries?: number): void {
    this.disk = disk
    this.gone = new Set()
    this.diskHoldsOthers = holdsKeys
    this.cacheEntries = cacheEntries !== undefined && this.memory().size === 0 ? cacheEntries : undefined
  }

  protected changed(key: StoreKey): void {
    this.changedKeys?.add(key)
  }

  /** A key's saved entries from the disk, when it has some and they were not removed since. */
  protected fromDisk(key: StoreKey): unknown {
    const disk = this.disk
    if (disk === undefined || !this.diskHoldsOthers || (this.gone as Set<StoreKey>).has(key)) return undefined
    return disk.get(key)
  }

  /** A key's entries are removed from memory (with a disk, it may still hold them). */
  protected removed(key: StoreKey): void {
    this.gone?.add(key)
    this.changed(key)
  }

  /** The keys changed since the last call; the set starts empty again. */
  takeChanged(): StoreKey[] {
    this.encodeTaken(Infinity)
    this.takesInFlight++
    const keys = this.changedKeys
    if (keys === undefined || keys.size === 0) {
      this.goneAtTake = []
      return []
    }
    const out = [...keys]
    keys.clear()
    const gone = this.gone
    if (gone !== undefined) {
      this.goneAtTake = []
      for (const k of out) if (gone.has(k)) this.goneAtTake.push(k)
    }
    return out
  }

  /**
   * Keys a commit took and has not encoded yet (`takeChangedLater`): copy on write. The commit encodes
   * them a few at a time (`encodeTaken`); an access to one before that encodes it first, so that the
   * commit writes each entry as it was when the commit was taken, whatever happens to it later.
   */
  private taken: Set<StoreKey> | undefined
  private takenOut: ((key: StoreKey, entries: unknown) => void) | undefined

  /**
   * Like `takeChanged`, but the entries are handed to `out` later (`encodeTaken`), or when first
   * accessed, whichever comes first: taking costs nothing per key. Returns how many keys it took.
   */
  takeChangedLater(out: (key: StoreKey, entries: unknown) => void): number {
    this.encodeTaken(Infinity)
    this.takesInFlight++
    const keys = this.changedKeys
    if (keys === undefined || keys.size === 0) {
      this.goneAtTake = []
      return 0
    }
    this.changedKeys = new Set()
    const gone = this.gone
    if (gone !== undefined) {
      this.goneAtTake = []
      for (const k of keys) if (gone.has(k)) this.goneAtTake.push(k)
    }
    this.taken = keys
    this.takenOut = out
    return keys.size
  }

  /** Hands taken entries not encoded yet to their commit until `deadline` (performance.now()); true when none is left. */
  encodeTaken(deadline: number): boolean {
    const keys = this.taken
    if (keys === undefined) return true
    const out = this.takenOut as (key: StoreKey, entries: unknown) => void
    let n = 0
    for (const key of keys) {
      keys.delete(key)
      out(key, this.snapshotKey(key))
      if (++n % 64 === 0 && performance.now() >= deadline) return false
    }
    this.taken = undefined
    this.takenOut = undefined
    return true
  }

  /** The current key, its entry handed to a commit that took it first (copy on write). */
  protected keyNow(): StoreKey {
    const key = this.host.currentKey()
    if (this.taken !== undefined) this.beforeChange(key)
    return key
  }

  /** Before a taken key's entry is read or changed: the commit gets it as it is now. */
  protected beforeChange(key: StoreKey): void {
    const keys = this.taken
    if (keys !== undefined && keys.delete(key)) (this.takenOut as (key: StoreKey, entries: unknown) => void)(key, this.snapshotKey(key))
  }

  /** The changes last taken are durable: the disk no longer holds the keys they removed. */
  committed(): void {
    this.takesInFlight = Math.max(0, this.takesInFlight - 1)
    const gone = this.gone
    if (gone === undefined) return
    // A key changed again since the take is written by the next commit; it stays gone until then.
    for (const k of this.goneAtTake) if (!(this.changedKeys as Set<StoreKey>).has(k)) gone.delete(k)
    this.goneAtTake = []
    this.evict()
  }

  /**
   * Keys beyond `cacheEntries` leave memory, oldest first, once no commit is in flight: each is then on
   * disk as memory holds it (its last change is durable), save those changed since the take, which stay
   * for the next commit.
   */
  private evict(): void {
    const bound = this.cacheEntries
    if (bound === undefined || this.taken !== undefined || this.takesInFlight > 0) return
    const memory = this.memory()
    let excess = memory.size - bound
    if (excess <= 0) return
    const changed = this.changedKeys
    const leaving: StoreKey[] = []
    for (const key of memory.keys()) {
      if (changed?.has(key) === true) continue
      leaving.push(key)
      if (--excess === 0) break
    }
    for (const key of leaving) memory.delete(key)
    if (leaving.length > 0) this.diskHoldsOthers = true
  }

  /** Every key's saved entries: those in memory, and with a disk, those only the disk has. */
  snapshot(): Array<[StoreKey, unknown]> {
    const out: Array<[StoreKey, unknown]> = []
    const memory = this.memory()
    for (const key of memory.keys()) out.push([key, this.snapshotKey(key)])
    const disk = this.disk
    if (disk === undefined) return out
    const gone = this.gone as Set<StoreKey>
    for (const [key, entries] of disk.entries()) if (!gone.has(key) && !memory.has(key)) out.push([key, entries])
    return out
  }

  /** The state's entries in memory, by key. */
  protected abstract memory(): ShardedMap<StoreKey, unknown>

  /** One key's entries in snapshot form, or undefined when it has none. */
  abstract snapshotKey(key: StoreKey): unknown

  protected isExpired(cell: Cell<unknown>, now: number): boolean {
    return this.ttl !== undefined && now >= cell.a + this.ttl.ttlMs
  }

  /** Whether a read may see this cell; refreshes it under onReadAndWrite when it is unexpired. */
  protected visible(key: StoreKey, cell: Cell<unknown>): boolean {
    const ttl = this.ttl
    if (ttl === undefined) return true
    const now = this.host.ttlNow()
    if (now >= cell.a + ttl.ttlMs) return ttl.returnExpired
    if (ttl.refreshOnRead) this.touch(key, cell, now)
    return true
  }

  /** Sets a cell's access time to now and makes sure a TTL timer covers its new expiry. */
  protected touch(key: StoreKey, cell: Cell<unknown>, at?: number): void {
    const ttl = this.ttl
    if (ttl === undefined) return
    // Read only under a TTL: the processing-time clock is a system call per record.
    const now = at ?? this.host.ttlNow()
    cell.a = now
    this.changed(key)
    this.host.registerTtlTimer(key, now + ttl.ttlMs)
  }

  protected newCell<T>(key: StoreKey, v: T): Cell<T> {
    const cell: Cell<T> = { v, a: 0 }
    this.touch(key, cell)
    return cell
  }

  /** TTL cleanup for one key at `now`: removes cells whose expiry is <= now. */
  abstract cleanup(key: StoreKey, now: number): void
  abstract restore(entries: ReadonlyArray<[StoreKey, unknown]>): void

  protected report(key: StoreKey, cell: Cell<unknown>, now: number, mapKey?: StoreKey): void {
    const entry: ExpiredEntry<StoreKey> = {
      key,
      state: this.name,
      value: cell.v,
      expiredAt: cell.a + (this.ttl as TtlPolicy).ttlMs,
      now,
      ...(mapKey === undefined ? {} : { mapKey }),
    }
    this.host.expired(entry)
  }
}

export class ValueStateTable<T> extends StateTable implements ValueState<T> {
  private readonly cells = new ShardedMap<StoreKey, Cell<T>>()

  /** The key's cell, loaded from the disk when it is there and not in memory yet. */
  private cell(key: StoreKey): Cell<T> | undefined {
    const cell = this.cells.get(key)
    if (cell !== undefined) return cell
    const saved = this.fromDisk(key) as Cell<T> | undefined
    if (saved === undefined) return undefined
    const loaded = { v: saved.v, a: saved.a }
    this.cells.set(key, loaded)
    return loaded
  }

  value(): T | undefined {
    const key = this.keyNow()
    const cell = this.cell(key)
    return cell !== undefined && this.visible(key, cell) ? cell.v : undefined
  }

  update(value: T): void {
    const key = this.keyNow()
    // Without a TTL the previous cell only matters in memory: a write need not read it from the disk.
    const cell = this.ttl === undefined ? this.cells.get(key) : this.cell(key)
    this.changed(key)
    if (cell === undefined) {
      this.cells.set(key, this.newCell(key, value))
      return
    }
    // One cell per key: its previous TTL timer is obsolete.
    if (this.ttl !== undefined) this.host.deleteTtlTimer(key, cell.a + this.ttl.ttlMs)
    cell.v = value
    this.touch(key, cell)
  }

  clear(): void {
    const key = this.keyNow()
    const cell = this.cell(key)
    if (cell === undefined) return
    if (this.ttl !== undefined) this.host.deleteTtlTimer(key, cell.a + this.ttl.ttlMs)
    this.cells.delete(key)
    this.removed(key)
  }

  cleanup(key: StoreKey, now: number): void {
    this.beforeChange(key)
    const cell = this.cell(key)
    if (cell === undefined || !this.isExpired(cell, now)) return
    this.cells.delete(key)
    this.removed(key)
    this.report(key, cell, now)
  }

  snapshotKey(key: StoreKey): unknown {
    const c = this.cells.get(key)
    return c === undefined ? undefined : { v: c.v, a: c.a }
  }

  protected memory(): ShardedMap<StoreKey, unknown> {
    return this.cells
  }

  restore(entries: ReadonlyArray<[StoreKey, unknown]>): void {
    for (const [k, c] of entries) {
      const saved = c as Cell<T>
      this.cells.set(k, { v: saved.v, a: saved.a })
    }
  }
}

export class MapStateTable<UK extends StoreKey, UV> extends StateTable implements MapState<UK, UV> {
  private readonly maps = new ShardedMap<StoreKey, Map<UK, Cell<UV>>>()

  /** The key's map, loaded from the disk when it is there and not in memory yet. */
  private map(key: StoreKey): Map<UK, Cell<UV>> | undefined {
    const m = this.maps.get(key)
    if (m !== undefined) return m
    const saved = this.fromDisk(key)
    if (saved === undefined) return undefined
    const loaded = loadMap<UK, UV>(saved)
    this.maps.set(key, loaded)
    return loaded
  }

  get(mapKey: UK): UV | undefined {
    const key = this.keyNow()
    const cell = this.map(key)?.get(mapKey)
    return cell !== undefined && this.visible(key, cell) ? cell.v : undefined
  }

  contains(mapKey: UK): boolean {
    const key = this.keyNow()
    const cell = this.map(key)?.get(mapKey)
    return cell !== undefined && this.visible(key, cell)
  }

  put(mapKey: UK, value: UV): void {
    const key = this.keyNow()
    let m = this.map(key)
    if (m === undefined) this.maps.set(key, (m = new Map()))
    const cell = m.get(mapKey)
    this.changed(key)
    if (cell === undefined) m.set(mapKey, this.newCell(key, value))
    else {
      cell.v = value
      this.touch(key, cell)
    }
  }

  remove(mapKey: UK): void {
    const key = this.keyNow()
    const m = this.map(key)
    if (m === undefined) return
    m.delete(mapKey)
    if (m.size > 0) this.changed(key)
    else {
      this.maps.delete(key)
      this.removed(key)
    }
  }

  entries(): Array<[UK, UV]> {
    const key = this.keyNow()
    const out: Array<[UK, UV]> = []
    for (const [k, cell] of this.map(key) ?? []) if (this.visible(key, cell)) out.push([k, cell.v])
    return out
  }

  isEmpty(): boolean {
    return this.entries().length === 0
  }

  clear(): void {
    const key = this.keyNow()
    this.maps.delete(key)
    this.removed(key)
  }

  cleanup(key: StoreKey, now: number): void {
    this.beforeChange(key)
    const m = this.map(key)
    if (m === undefined) return
    for (const [mk, cell] of m) {
      if (!this.isExpired(cell, now)) continue
      m.delete(mk)
      this.changed(key)
      this.report(key, cell, now, mk)
    }
    if (m.size === 0) {
      this.maps.delete(key)
      this.removed(key)
    }
  }

  snapshotKey(key: StoreKey): unknown {
    const m = this.maps.get(key)
    return m === undefined ? undefined : [...m].map(([mk, c]) => [mk, { v: c.v, a: c.a }])
  }

  protected memory(): ShardedMap<StoreKey, unknown> {
    return this.maps
  }

  restore(entries: ReadonlyArray<[StoreKey, unknown]>): void {
    for (const [k, saved] of entries) this.maps.set(k, loadMap<UK, UV>(saved))
  }
}

function loadMap<UK, UV>(saved: unknown): Map<UK, Cell<UV>> {
  return new Map((saved as Array<[UK, Cell<UV>]>).map(([mk, c]) => [mk, { v: c.v, a: c.a }]))
}

export class ListStateTable<T> extends StateTable implements ListState<T> {
  private readonly lists = new ShardedMap<StoreKey, Array<Cell<T>>>()

  /** The key's list, loaded from the disk when it is there and not in memory yet. */
  private list(key: StoreKey): Array<Cell<T>> | undefined {
    const l = this.lists.get(key)
    if (l !== undefined) return l
    const saved = this.fromDisk(key)
    if (saved === undefined) return undefined
    const loaded = loadList<T>(saved)
    this.lists.set(key, loaded)
    return loaded
  }

  get(): T[] {
    const key = this.keyNow()
    const out: T[] = []
    for (const cell of this.list(key) ?? []) if (this.visible(key, cell)) out.push(cell.v)
    return out
  }

  add(value: T): void {
    const key = this.keyNow()
    let list = this.list(key)
    if (list === undefined) this.lists.set(key, (list = []))
    list.push(this.newCell(key, value))
    this.changed(key)
  }

  update(values: readonly T[]): void {
    const key = this.keyNow()
    if (values.length === 0) {
      this.lists.delete(key)
      this.removed(key)
      return
    }
    this.changed(key)
    this.lists.set(
      key,
      values.map((v) => this.newCell(key, v)),
    )
  }

  clear(): void {
    const key = this.keyNow()
    this.lists.delete(key)
    this.removed(key)
  }

  cleanup(key: StoreKey, now: number): void {
    this.beforeChange(key)
    const list = this.list(key)
    if (list === undefined) return
    const kept: Array<Cell<T>> = []
    for (const cell of list) {
      if (this.isExpired(cell, now)) this.report(key, cell, now)
      else kept.push(cell)
    }
    if (kept.length === list.length) return
    if (kept.length > 0) {
      this.lists.set(key, kept)
      this.changed(key)
    } else {
      this.lists.delete(key)
      this.removed(key)
    }
  }

  snapshotKey(key: StoreKey): unknown {
    const l = this.lists.get(key)
    return l === undefined ? undefined : l.map((c) => ({ v: c.v, a: c.a }))
  }

  protected memory(): ShardedMap<StoreKey, unknown> {
    return this.lists
  }

  restore(entries: ReadonlyArray<[StoreKey, unknown]>): void {
    for (const [k, saved] of entries) this.lists.set(k, loadList<T>(saved))
  }
}

function loadList<T>(saved: unknown): Array<Cell<T>> {
  return (saved as Array<Cell<T>>).map((c) => ({ v: c.v, a: c.a }))
}
