import type { StoreKey } from '../processor/api.js'
import { ChangeSet } from './change-set.js'
import type { DurableStore } from './durable.js'

/**
 * What a store type implements to be logged: its entries in saved form (plain data its changelog codec
 * writes), by store key. A store holds its entries its own way (a map, window cells, a heap, a spill
 * file); the change log asks for the saved form only of the keys that changed, at commit time.
 */
export interface StoreContents<K extends StoreKey> {
  /** The saved form of the entry at `key` now; undefined when there is none. */
  saved(key: K): unknown
  /** Every entry in saved form (a full snapshot). */
  savedEntries(): Iterable<[StoreKey, unknown]>
  /** Puts one saved entry back (restore); the change log forgets what this notes as changes. */
  load(key: K, saved: unknown): void
  /**
   * The changes a store tracks itself, by entry object rather than by key (an entry carries the epoch it
   * was noted in), as [key, saved form now or undefined: deleted], one entry per key (a commit may write
   * its entries in any order); the store forgets them. The change
   * set then holds none of its entries: a store with many short-lived entries (window cells created and
   * closed between two commits) builds no key for those that come and go.
   */
  takeTracked?(): Array<[StoreKey, unknown]>
  /** The changes were just taken for a commit, perhaps none (a write-back store moves them aside until it is durable). */
  taken?(): void
  /** The changes last taken are durable (a store that reads its committed entries from disk may rely on them). */
  committed?(): void
}

/**
 * A single value a store keeps besides its entries (a stream time, a flag), logged under a store key of
 * its own: negative numbers, which no entry of such a store uses (their keys are strings). Setting it
 * marks it changed, so a per-record write costs a flag, not a change-set lookup.
 */
export class LoggedField<T> {
  /** Changed since the last commit. */
  dirty = false

  constructor(
    readonly key: number,
    private current: T,
    /** The saved form; undefined writes a tombstone (and leaves the field out of a snapshot). */
    private readonly save: (value: T) => unknown = (v) => v,
    private readonly load: (saved: unknown) => T = (s) => s as T,
  ) {}

  get value(): T {
    return this.current
  }

  set value(v: T) {
    this.current = v
    this.dirty = true
  }

  /** Call after changing the value in place (an array). */
  touch(): void {
    this.dirty = true
  }

  saved(): unknown {
    return this.save(this.current)
  }

  restore(saved: unknown): void {
    this.current = this.load(saved)
  }
}

/**
 * The logging layer every store is built with: the one implementation of change tracking, snapshots and
 * restore (the `DURABLE` capability). The store notes the first change of a key since the last commit in
 * `changes` (with whether the key held a value then, so a key created and removed between two commits is
 * neither written nor deleted); the commit takes the saved form of each changed key and of each changed
 * field. Until tracking starts, `changes` is undefined and logging costs the store one check.
 */
export class ChangeLog<K extends StoreKey> implements DurableStore {
  /** Keys changed since the last commit; undefined while changes are not tracked. */
  changes: ChangeSet<K> | undefined

  constructor(
    private readonly contents: StoreContents<K>,
    private readonly fields: ReadonlyArray<LoggedField<unknown>> = [],
  ) {}

  trackChanges(): void {
    this.changes ??= new ChangeSet()
  }

  takeChanges(): Array<[StoreKey, unknown]> {
    const changes = this.changes
    let out: Array<[StoreKey, unknown]> = []
    if (changes !== undefined) {
      // Every take, an empty one too, starts a new change epoch.
      out = changes.take((k) => this.contents.saved(k))
      const tracked = this.contents.takeTracked?.()
      if (tracked !== undefined && tracked.length > 0) out = out.length === 0 ? tracked : out.concat(tracked)
      // Every take, an empty one too: a store counting commits in flight pairs each with its `committed`.
      this.contents.taken?.()
    }
    for (const field of this.fields) {
      if (!field.dirty) continue
      field.dirty = false
      out.push([field.key, field.saved()])
    }
    return out
  }

  committed(): void {
    this.contents.committed?.()
  }

  entries(): Array<[StoreKey, unknown]> {
    const out = [...this.contents.savedEntries()]
    for (const field of this.fields) {
      const saved = field.saved()
      if (saved !== undefined) out.push([field.key, saved])
    }
    return out
  }

  restore(entries: ReadonlyArray<readonly [StoreKey, unknown]>): void {
    for (const [k, v] of entries) {
      const field = this.fields.length === 0 ? undefined : this.fields.find((f) => f.key === k)
      if (field !== undefined) field.restore(v)
      else this.contents.load(k as K, v)
    }
    this.changes?.clear()
  }
}
