import type { StoreKey } from '../processor/api.js'
import { DEFAULT_CACHE_ENTRIES, DURABLE } from '../state/stores.js'
import type { DurableStore } from '../state/stores.js'
import { ChangeLog, LoggedField } from '../state/change-log.js'
import { PERSISTENT } from '../state/persistent-store.js'
import { forgetDurableRemovals, InFlightCommits, leavingMemory } from '../state/in-flight-commits.js'
import type { PersistentCapability, StoreDisk } from '../state/persistent-store.js'
import { InputTimes } from './input-times.js'

/** One key's windows (sessions, sliding windows) in a `KeyedListStore`. */
export interface KeyedList<K, T> {
  readonly key: K
  list: T[]
}

/** The store key of the observed stream time (key ids are strings, so it cannot clash). */
const STREAM_TIME_KEY = -1
/** The store key of the largest window start stored (sliding windows' retention counts from it). */
const MAX_START_KEY = -2
/** The store key of a cogroup's stream time per input. */
const INPUT_TIMES_KEY = -3

/**
 * The store of a session or sliding-window aggregation: per key id, the key's windows, plus the
 * aggregation's observed stream time. As a task store it records the keys whose windows changed, so
 * commits write those lists, and a restart restores them (`save`/`load` convert windows to plain data).
 *
 * In a durable run it lives on disk (`attach`): the committed lists are in the state directory by key
 * id, memory holds the keys changed since the last durable commit and up to `cacheEntries` others, and
 * a key memory lacks is read back when a record of it comes. Without a disk every key is in memory.
 */
export class KeyedListStore<K, T> {
  private readonly byKey = new Map<string, KeyedList<K, T>>()
  private readonly observed = new LoggedField(STREAM_TIME_KEY, -1)
  private readonly maxStart = new LoggedField(MAX_START_KEY, -1)
  private readonly inputTimes = new InputTimes(INPUT_TIMES_KEY)
  /** On disk: the committed lists. */
  private disk: StoreDisk | undefined
  /** On disk: whether it may hold a key memory does not (it held keys when attached, or a key left memory). */
  private diskHoldsOthers = false
  /** On disk: keys removed while the disk may still hold them, with the change epoch of their removal. */
  private readonly gone = new Map<string, number>()
  /** On disk: commits that took changes and are not durable yet. */
  private readonly commits = new InFlightCommits(() => this.disk !== undefined, () => this.settle())
  private readonly log = new ChangeLog<string>(
    {
      saved: (id) => this.saved(id),
      savedEntries: () => {
        const out: Array<[StoreKey, unknown]> = []
        for (const id of this.byKey.keys()) out.push([id, this.saved(id)])
        if (this.disk !== undefined && this.diskHoldsOthers) {
          for (const [id, saved] of this.disk.entries('')) if (typeof id === 'string' && !this.byKey.has(id) && !this.gone.has(id)) out.push([id, saved])
        }
        return out
      },
      load: (id, saved) => {
        this.byKey.set(id, this.loaded(saved))
      },
      taken: () => this.commits.taken(),
      committed: () => this.commits.committed(),
    },
    [this.observed, this.maxStart, this.inputTimes] as Array<LoggedField<unknown>>,
  )

  constructor(
    readonly name: string,
    private readonly save: (item: T) => unknown,
    private readonly load: (key: K, saved: unknown) => T,
    /** On disk: how many keys memory keeps beyond those changed since the last durable commit. */
    private readonly cacheEntries = DEFAULT_CACHE_ENTRIES,
  ) {}

  readonly [PERSISTENT]: PersistentCapability = {
    attach: (disk) => {
      this.disk = disk
      // The store's fields are small: read them now. Lists are read when their key's records come.
      for (const field of [this.observed, this.maxStart, this.inputTimes] as Array<LoggedField<unknown>>) {
        const saved = disk.get(field.key)
        if (saved !== undefined) field.restore(saved)
      }
      for (const [key] of disk.entries('')) {
        this.diskHoldsOthers = typeof key === 'string'
        break
      }
    },
  }

  get streamTime(): number {
    return this.observed.value
  }

  set streamTime(t: number) {
    this.observed.value = t
  }

  /** A cogroup input's stream time (-1 before its first record). */
  inputTime(input: number): number {
    return this.inputTimes.of(input)
  }

  setInputTime(input: number, t: number): void {
    this.inputTimes.setTime(input, t)
  }

  /** The largest window start stored so far (-1: none). */
  get maxWindowStart(): number {
    return this.maxStart.value
  }

  set maxWindowStart(t: number) {
    this.maxStart.value = t
  }

  /** Every key's windows, in key id order (for interactive queries: a sort per call; on disk, every key read). */
  inKeyIdOrder(): Array<KeyedList<K, T>> {
    const ids = new Set(this.byKey.keys())
    const fromDisk = new Map<string, KeyedList<K, T>>()
    if (this.disk !== undefined && this.diskHoldsOthers) {
      for (const [id, saved] of this.disk.entries('')) {
        if (typeof id !== 'string' || ids.has(id) || this.gone.has(id)) continue
        ids.add(id)
        fromDisk.set(id, this.loaded(saved))
      }
    }
    return [...ids].sort().map((id) => this.byKey.get(id) ?? (fromDisk.get(id) as KeyedList<K, T>))
  }

  get(id: string): KeyedList<K, T> | undefined {
    const entry = this.byKey.get(id)
    if (entry !== undefined || !this.diskHoldsOthers || this.gone.has(id)) return entry
    const saved = (this.disk as StoreDisk).get(id)
    if (saved === undefined) return undefined
    const read = this.loaded(saved)
    this.byKey.set(id, read)
    return read
  }

  getOrCreate(id: string, key: K): KeyedList<K, T> {
    let entry = this.get(id)
    if (entry === undefined) {
      // A key that is created is not on disk (a key emptied earlier in this interval was noted then).
      const c = this.log.changes
      if (c !== undefined && !c.has(id)) c.first(id, false)
      this.byKey.set(id, (entry = { key, list: [] }))
    }
    return entry
  }

  /** Records that a key's windows changed; drops the key when it has none left. */
  touched(id: string): void {
    const entry = this.byKey.get(id)
    const c = this.log.changes
    if (c !== undefined && !c.has(id)) c.first(id, entry !== undefined)
    if (entry !== undefined && entry.list.length === 0) {
      this.byKey.delete(id)
      if (this.disk !== undefined) this.gone.set(id, c?.epoch ?? 0)
    }
  }

  readonly [DURABLE]: DurableStore = this.log

  close(): void {}

  /**
   * On disk, once no commit is in flight: removals taken by a commit are on disk, and keys beyond
   * `cacheEntries` leave memory, oldest first, save those changed since the take.
   */
  private settle(): void {
    const changes = this.log.changes
    if (changes === undefined) return
    forgetDurableRemovals(this.gone, changes.epoch)
    const leaving = leavingMemory(this.byKey, this.cacheEntries, (id) => changes.has(id))
    for (const id of leaving) this.byKey.delete(id)
    if (leaving.length > 0) this.diskHoldsOthers = true
  }

  private loaded(saved: unknown): KeyedList<K, T> {
    const s = saved as { key: K; list: unknown[] }
    return { key: s.key, list: s.list.map((item) => this.load(s.key, item)) }
  }

  private saved(id: string): { key: K; list: unknown[] } | undefined {
    const entry = this.byKey.get(id)
    return entry === undefined ? undefined : { key: entry.key, list: entry.list.map(this.save) }
  }
}
