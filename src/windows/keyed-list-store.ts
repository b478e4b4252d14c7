import type { StoreKey } from '../processor/api.js'
import { DURABLE } from '../state/stores.js'
import type { DurableStore } from '../state/stores.js'
import { ChangeSet } from '../state/change-set.js'

/** One key's windows (sessions, sliding windows) in a `KeyedListStore`. */
export interface KeyedList<K, T> {
  readonly key: K
  list: T[]
}

/** The store key of the observed stream time (key ids are strings, so it cannot clash). */
const STREAM_TIME_KEY = -1
/** The store key of the largest window start stored (sliding windows' retention counts from it). */
const MAX_START_KEY = -2

/**
 * The store of a session or sliding-window aggregation: per key id, the key's windows, plus the
 * aggregation's observed stream time. As a task store it records the keys whose windows changed, so
 * commits write those lists, and a restart restores them (`save`/`load` convert windows to plain data).
 */
export class KeyedListStore<K, T> {
  private readonly byKey = new Map<string, KeyedList<K, T>>()
  private observed = -1
  private changed: ChangeSet<string> | undefined
  private observedChanged = false
  private maxStart = -1
  private maxStartChanged = false

  constructor(
    readonly name: string,
    private readonly save: (item: T) => unknown,
    private readonly load: (key: K, saved: unknown) => T,
  ) {}

  get streamTime(): number {
    return this.observed
  }

  set streamTime(t: number) {
    this.observed = t
    this.observedChanged = true
  }

  /** The largest window start stored so far (-1: none). */
  get maxWindowStart(): number {
    return this.maxStart
  }

  set maxWindowStart(t: number) {
    this.maxStart = t
    this.maxStartChanged = true
  }

  get(id: string): KeyedList<K, T> | undefined {
    return this.byKey.get(id)
  }

  getOrCreate(id: string, key: K): KeyedList<K, T> {
    let entry = this.byKey.get(id)
    if (entry === undefined) {
      // A key that is created is not on disk (a key emptied earlier in this interval was noted then).
      const c = this.changed
      if (c !== undefined && !c.has(id)) c.first(id, false)
      this.byKey.set(id, (entry = { key, list: [] }))
    }
    return entry
  }

  /** Records that a key's windows changed; drops the key when it has none left. */
  touched(id: string): void {
    const entry = this.byKey.get(id)
    const c = this.changed
    if (c !== undefined && !c.has(id)) c.first(id, entry !== undefined)
    if (entry !== undefined && entry.list.length === 0) this.byKey.delete(id)
  }

  readonly [DURABLE]: DurableStore = {
    trackChanges: () => {
      this.changed ??= new ChangeSet()
    },
    takeChanges: () => {
      const out = this.changed?.take((id) => this.saved(id as string)) ?? []
      if (this.observedChanged) out.push([STREAM_TIME_KEY, this.observed])
      if (this.maxStartChanged) out.push([MAX_START_KEY, this.maxStart])
      this.observedChanged = false
      this.maxStartChanged = false
      return out
    },
    entries: () => [...[...this.byKey.keys()].map((id): [StoreKey, unknown] => [id, this.saved(id)]), [STREAM_TIME_KEY, this.observed], [MAX_START_KEY, this.maxStart]],
    restore: (entries) => {
      for (const [k, v] of entries) {
        if (k === STREAM_TIME_KEY) this.observed = v as number
        else if (k === MAX_START_KEY) this.maxStart = v as number
        else {
          const s = v as { key: K; list: unknown[] }
          this.byKey.set(k as string, { key: s.key, list: s.list.map((item) => this.load(s.key, item)) })
        }
      }
      this.changed?.clear()
    },
  }

  close(): void {}

  private saved(id: string): { key: K; list: unknown[] } | undefined {
    const entry = this.byKey.get(id)
    return entry === undefined ? undefined : { key: entry.key, list: entry.list.map(this.save) }
  }
}
