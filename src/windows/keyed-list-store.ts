import { DURABLE } from '../state/stores.js'
import type { DurableStore } from '../state/stores.js'
import { ChangeLog, LoggedField } from '../state/change-log.js'
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
 */
export class KeyedListStore<K, T> {
  private readonly byKey = new Map<string, KeyedList<K, T>>()
  private readonly observed = new LoggedField(STREAM_TIME_KEY, -1)
  private readonly maxStart = new LoggedField(MAX_START_KEY, -1)
  private readonly inputTimes = new InputTimes(INPUT_TIMES_KEY)
  private readonly log = new ChangeLog<string>(
    {
      saved: (id) => this.saved(id),
      savedEntries: () => [...this.byKey.keys()].map((id) => [id, this.saved(id)]),
      load: (id, saved) => {
        const s = saved as { key: K; list: unknown[] }
        this.byKey.set(id, { key: s.key, list: s.list.map((item) => this.load(s.key, item)) })
      },
    },
    [this.observed, this.maxStart, this.inputTimes] as Array<LoggedField<unknown>>,
  )

  constructor(
    readonly name: string,
    private readonly save: (item: T) => unknown,
    private readonly load: (key: K, saved: unknown) => T,
  ) {}

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

  /** Every key's windows, in key id order (for interactive queries: a sort per call). */
  inKeyIdOrder(): Array<KeyedList<K, T>> {
    return [...this.byKey.keys()].sort().map((id) => this.byKey.get(id) as KeyedList<K, T>)
  }

  get(id: string): KeyedList<K, T> | undefined {
    return this.byKey.get(id)
  }

  getOrCreate(id: string, key: K): KeyedList<K, T> {
    let entry = this.byKey.get(id)
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
    if (entry !== undefined && entry.list.length === 0) this.byKey.delete(id)
  }

  readonly [DURABLE]: DurableStore = this.log

  close(): void {}

  private saved(id: string): { key: K; list: unknown[] } | undefined {
    const entry = this.byKey.get(id)
    return entry === undefined ? undefined : { key: entry.key, list: entry.list.map(this.save) }
  }
}
