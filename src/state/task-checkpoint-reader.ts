import type { Database } from 'lmdb'
import type { KeyedSnapshot } from '../keyed/keyed-task-state.js'
import type { TimerRecord } from '../keyed/timer-service.js'
import type { StoreKey } from '../processor/api.js'
import type { DurableTaskState } from './checkpoint-store.js'
import { fromKeyPart } from './key-part.js'

type KeyPart = string | number | boolean

/** A range of the keyed database's keys. */
export type Range = { readonly start: KeyPart[]; readonly end: KeyPart[] }

/** A timer from its entry's key (`timerEntryKey` in checkpoint-store.ts: the whole timer is in the key). */
function timerFromEntryKey(key: KeyPart[]): TimerRecord {
  const group = key[2] as number
  return { kind: (group & 1) === 1 ? 'ttl' : 'user', domain: (group & 2) === 2 ? 'processing' : 'event', timestamp: key[3] as number, seq: key[4] as number, owner: key[5] as string, key: fromKeyPart(key[6] as KeyPart) }
}

/**
 * A task's last commit, read a bounded number of entries at a time, so that a task restoring from the
 * state directory does not hold the event loop: its timers, then the entries of its in-memory stores
 * (keyed state stays on disk until used). Each range is read through one lmdb iterator, a snapshot of the commit it started
 * in (later commits of other tasks do not touch this task's entries).
 */
export class TaskCheckpointReader {
  private readonly timers: TimerRecord[] = []
  private readonly storeEntries: Record<string, Array<[StoreKey, unknown]>> = {}
  private range = 0
  private iterator: Iterator<{ key: KeyPart[]; value: unknown }> | Iterator<KeyPart[]> | undefined
  private count = 0

  constructor(
    private readonly db: Database<unknown, KeyPart[]>,
    private readonly ranges: readonly Range[],
    /** The task's commit record (stream time, last fire times, positions). */
    readonly state: DurableTaskState | undefined,
    /** Counts the entries in the ranges (about 6% of the time reading them takes: done only when asked). */
    private readonly countAll: () => number,
  ) {}

  private total: number | undefined

  /** Entries read so far. */
  get read(): number {
    return this.count
  }

  remaining(): number {
    this.total ??= this.countAll()
    return Math.max(0, this.total - this.count)
  }

  get done(): boolean {
    return this.range >= this.ranges.length
  }

  /** Reads up to `max` entries; returns how many it read. */
  readSome(max: number): number {
    let n = 0
    while (n < max && this.range < this.ranges.length) {
      const range = this.ranges[this.range] as Range
      // Timers are all key (`timerEntryKey`); store entries are keys and values.
      const timers = range.start[0] === 'T'
      this.iterator ??= timers ? this.db.getKeys(range)[Symbol.iterator]() : this.db.getRange(range)[Symbol.iterator]()
      const next = this.iterator.next()
      if (next.done === true) {
        this.iterator = undefined
        this.range++
        continue
      }
      if (timers) this.timers.push(timerFromEntryKey(next.value as KeyPart[]))
      else {
        const { key, value } = next.value as { key: KeyPart[]; value: unknown }
        const [k, v] = value as [StoreKey, unknown]
        ;(this.storeEntries[key[2] as string] ??= []).push([k, v])
      }
      n++
    }
    this.count += n
    return n
  }

  /**
   * The timers as read (keyed state stays on disk); undefined when there are none. Each queue's
   * timers come in its firing order (the order of their entries).
   */
  keyed(): KeyedSnapshot | undefined {
    if (this.timers.length === 0) return undefined
    return { timers: this.timers, states: {} }
  }

  /** The in-memory stores' entries as read; undefined when there are none. */
  stores(): Record<string, Array<[StoreKey, unknown]>> | undefined {
    return Object.keys(this.storeEntries).length === 0 ? undefined : this.storeEntries
  }
}
