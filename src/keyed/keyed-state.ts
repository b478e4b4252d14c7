import type { StoreKey } from '../processor/api.js'
import type { ExpiredEntry, ListState, MapState, StateKind, ValueState } from './api.js'
import type { TtlPolicy } from './ttl.js'

/** A stored value with its last access time (used only when the state has a TTL). */
interface Cell<T> {
  v: T
  a: number
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

  trackChanges(): void {
    this.changedKeys ??= new Set()
  }

  protected changed(key: StoreKey): void {
    this.changedKeys?.add(key)
  }

  /** The keys changed since the last call; the set starts empty again. */
  takeChanged(): StoreKey[] {
    const keys = this.changedKeys
    if (keys === undefined || keys.size === 0) return []
    const out = [...keys]
    keys.clear()
    return out
  }

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
  protected touch(key: StoreKey, cell: Cell<unknown>, now = this.host.ttlNow()): void {
    const ttl = this.ttl
    if (ttl === undefined) return
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
  abstract snapshot(): Array<[StoreKey, unknown]>
  abstract restore(entries: ReadonlyArray<[StoreKey, unknown]>): void
  abstract keyCount(): number

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
  private readonly cells = new Map<StoreKey, Cell<T>>()

  value(): T | undefined {
    const key = this.host.currentKey()
    const cell = this.cells.get(key)
    return cell !== undefined && this.visible(key, cell) ? cell.v : undefined
  }

  update(value: T): void {
    const key = this.host.currentKey()
    const cell = this.cells.get(key)
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
    const key = this.host.currentKey()
    const cell = this.cells.get(key)
    if (cell === undefined) return
    if (this.ttl !== undefined) this.host.deleteTtlTimer(key, cell.a + this.ttl.ttlMs)
    this.cells.delete(key)
    this.changed(key)
  }

  cleanup(key: StoreKey, now: number): void {
    const cell = this.cells.get(key)
    if (cell === undefined || !this.isExpired(cell, now)) return
    this.cells.delete(key)
    this.changed(key)
    this.report(key, cell, now)
  }

  snapshotKey(key: StoreKey): unknown {
    const c = this.cells.get(key)
    return c === undefined ? undefined : { v: c.v, a: c.a }
  }

  keyCount(): number {
    return this.cells.size
  }

  snapshot(): Array<[StoreKey, unknown]> {
    return [...this.cells].map(([k, c]) => [k, { v: c.v, a: c.a }])
  }

  restore(entries: ReadonlyArray<[StoreKey, unknown]>): void {
    for (const [k, c] of entries) {
      const saved = c as Cell<T>
      this.cells.set(k, { v: saved.v, a: saved.a })
    }
  }
}

export class MapStateTable<UK extends StoreKey, UV> extends StateTable implements MapState<UK, UV> {
  private readonly maps = new Map<StoreKey, Map<UK, Cell<UV>>>()

  get(mapKey: UK): UV | undefined {
    const key = this.host.currentKey()
    const cell = this.maps.get(key)?.get(mapKey)
    return cell !== undefined && this.visible(key, cell) ? cell.v : undefined
  }

  contains(mapKey: UK): boolean {
    const key = this.host.currentKey()
    const cell = this.maps.get(key)?.get(mapKey)
    return cell !== undefined && this.visible(key, cell)
  }

  put(mapKey: UK, value: UV): void {
    const key = this.host.currentKey()
    let m = this.maps.get(key)
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
    const key = this.host.currentKey()
    const m = this.maps.get(key)
    if (m === undefined) return
    m.delete(mapKey)
    if (m.size === 0) this.maps.delete(key)
    this.changed(key)
  }

  entries(): Array<[UK, UV]> {
    const key = this.host.currentKey()
    const out: Array<[UK, UV]> = []
    for (const [k, cell] of this.maps.get(key) ?? []) if (this.visible(key, cell)) out.push([k, cell.v])
    return out
  }

  isEmpty(): boolean {
    return this.entries().length === 0
  }

  clear(): void {
    const key = this.host.currentKey()
    this.maps.delete(key)
    this.changed(key)
  }

  cleanup(key: StoreKey, now: number): void {
    const m = this.maps.get(key)
    if (m === undefined) return
    for (const [mk, cell] of m) {
      if (!this.isExpired(cell, now)) continue
      m.delete(mk)
      this.changed(key)
      this.report(key, cell, now, mk)
    }
    if (m.size === 0) this.maps.delete(key)
  }

  snapshotKey(key: StoreKey): unknown {
    const m = this.maps.get(key)
    return m === undefined ? undefined : [...m].map(([mk, c]) => [mk, { v: c.v, a: c.a }])
  }

  keyCount(): number {
    return this.maps.size
  }

  snapshot(): Array<[StoreKey, unknown]> {
    return [...this.maps].map(([k, m]) => [k, [...m].map(([mk, c]) => [mk, { v: c.v, a: c.a }])])
  }

  restore(entries: ReadonlyArray<[StoreKey, unknown]>): void {
    for (const [k, list] of entries) this.maps.set(k, new Map((list as Array<[UK, Cell<UV>]>).map(([mk, c]) => [mk, { v: c.v, a: c.a }])))
  }
}

export class ListStateTable<T> extends StateTable implements ListState<T> {
  private readonly lists = new Map<StoreKey, Array<Cell<T>>>()

  get(): T[] {
    const key = this.host.currentKey()
    const out: T[] = []
    for (const cell of this.lists.get(key) ?? []) if (this.visible(key, cell)) out.push(cell.v)
    return out
  }

  add(value: T): void {
    const key = this.host.currentKey()
    let list = this.lists.get(key)
    if (list === undefined) this.lists.set(key, (list = []))
    list.push(this.newCell(key, value))
    this.changed(key)
  }

  update(values: readonly T[]): void {
    const key = this.host.currentKey()
    this.changed(key)
    if (values.length === 0) {
      this.lists.delete(key)
      return
    }
    this.lists.set(
      key,
      values.map((v) => this.newCell(key, v)),
    )
  }

  clear(): void {
    const key = this.host.currentKey()
    this.lists.delete(key)
    this.changed(key)
  }

  cleanup(key: StoreKey, now: number): void {
    const list = this.lists.get(key)
    if (list === undefined) return
    const kept: Array<Cell<T>> = []
    for (const cell of list) {
      if (this.isExpired(cell, now)) this.report(key, cell, now)
      else kept.push(cell)
    }
    if (kept.length === list.length) return
    if (kept.length === 0) this.lists.delete(key)
    else this.lists.set(key, kept)
    this.changed(key)
  }

  snapshotKey(key: StoreKey): unknown {
    const l = this.lists.get(key)
    return l === undefined ? undefined : l.map((c) => ({ v: c.v, a: c.a }))
  }

  keyCount(): number {
    return this.lists.size
  }

  snapshot(): Array<[StoreKey, unknown]> {
    return [...this.lists].map(([k, l]) => [k, l.map((c) => ({ v: c.v, a: c.a }))])
  }

  restore(entries: ReadonlyArray<[StoreKey, unknown]>): void {
    for (const [k, l] of entries) this.lists.set(k, (l as Array<Cell<T>>).map((c) => ({ v: c.v, a: c.a })))
  }
}
