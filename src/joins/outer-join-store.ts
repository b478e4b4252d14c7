import { DEFAULT_CACHE_ENTRIES, DURABLE } from '../state/stores.js'
import type { DurableStore } from '../state/stores.js'
import { ChangeLog, LoggedField } from '../state/change-log.js'
import { PERSISTENT } from '../state/persistent-store.js'
import type { PersistentCapability } from '../state/persistent-store.js'
import { bigEndian64 } from '../windows/key-id.js'
import { TimeOrderedBuffer } from './time-ordered-buffer.js'

/** Records of one key, side and timestamp that found no partner yet. */
export interface Parked<K> {
  readonly id: string
  readonly ts: number
  readonly left: boolean
  readonly key: K
  readonly values: unknown[]
}

/** Store keys of the join's time tracker (entry ids are strings, so they cannot clash). */
const STREAM_TIME_KEY = -1
const MIN_TIME_KEY = -2

/** A parked entry's saved form. */
const savedParked = <K>(p: Parked<K>): unknown => ({ ts: p.ts, left: p.left, key: p.key, values: p.values })

function loadedParked<K>(id: string, saved: unknown): Parked<K> {
  const s = saved as { ts: number; left: boolean; key: K; values: unknown[] }
  return { id, ts: s.ts, left: s.left, key: s.key, values: s.values }
}

/**
 * The records of a left or outer stream-stream join that wait for a partner (Kafka Streams' shared
 * outer-join store): by (timestamp, side, key), in that order, which is also the order Kafka Streams
 * emits them in (its store key is the timestamp's 8 bytes, a side byte, right 0 before left 1, then the
 * key's bytes). The id is exactly those bytes as a latin1 string, so string order is that order. It
 * also keeps the join's time tracker, shared by both sides: the largest timestamp either side saw, and
 * the smallest timestamp parked since the last emission pass. In a durable run it lives on disk, memory
 * holding the entries changed since the last durable commit and up to `cacheEntries` others, the next
 * to leave (`TimeOrderedBuffer`); a partner that finds its entry beyond them reads the disk.
 */
export class OuterJoinStore<K> {
  private readonly streamTimeField = new LoggedField(STREAM_TIME_KEY, -1)
  private readonly minTimeField = new LoggedField(
    MIN_TIME_KEY,
    Infinity,
    (t) => (t === Infinity ? undefined : t),
    (s) => s as number,
  )
  private readonly log: ChangeLog<string> = new ChangeLog<string>(
    {
      saved: (id) => {
        const p = this.parked.inMemory(id)
        return p === undefined ? undefined : savedParked(p)
      },
      savedEntries: () => this.parked.savedEntries(savedParked),
      load: (id, saved) => this.parked.restore(id, loadedParked<K>(id, saved)),
      taken: () => this.parked.taken(),
      committed: () => this.parked.committed(),
    },
    [this.streamTimeField, this.minTimeField] as Array<LoggedField<unknown>>,
  )
  private readonly parked: TimeOrderedBuffer<Parked<K>>

  readonly [DURABLE]: DurableStore = this.log

  constructor(
    readonly name: string,
    cacheEntries = DEFAULT_CACHE_ENTRIES,
  ) {
    this.parked = new TimeOrderedBuffer<Parked<K>>(() => this.log.changes, loadedParked, cacheEntries)
  }

  readonly [PERSISTENT]: PersistentCapability = {
    attach: (disk) => {
      for (const field of [this.streamTimeField, this.minTimeField] as Array<LoggedField<unknown>>) {
        const saved = disk.get(field.key)
        if (saved !== undefined) field.restore(saved)
      }
      this.parked.attach(disk)
    },
  }

  /** The largest timestamp either side of the join saw (Kafka Streams' shared stream time). */
  get streamTime(): number {
    return this.streamTimeField.value
  }

  advance(ts: number): void {
    if (ts > this.streamTimeField.value) this.streamTimeField.value = ts
  }

  /** The smallest parked timestamp since the last emission pass (Infinity: none). */
  get minTime(): number {
    return this.minTimeField.value
  }

  set minTime(t: number) {
    if (t !== this.minTimeField.value) this.minTimeField.value = t
  }

  /** Parks a record with no partner. */
  park(keyId: string, key: K, ts: number, left: boolean, value: unknown): void {
    const id = parkedId(keyId, ts, left)
    const existing = this.parked.get(id)
    this.noteChange(id, existing !== undefined)
    if (existing !== undefined) existing.values.push(value)
    else this.parked.add(id, { id, ts, left, key, values: [value] })
  }

  /** Removes the parked records of this key, side and timestamp, if any (a partner came). */
  unpark(keyId: string, ts: number, left: boolean): void {
    const id = parkedId(keyId, ts, left)
    if (this.parked.get(id) === undefined) return
    this.noteChange(id, true)
    this.parked.delete(id)
  }

  /** The parked entries in order; `remove` the ones emitted. Stops when `visit` returns false. */
  scan(visit: (p: Parked<K>) => boolean): void {
    this.parked.scan((_id, p) => visit(p))
  }

  remove(p: Parked<K>): void {
    if (this.parked.inMemory(p.id) !== p) return
    this.noteChange(p.id, true)
    this.parked.delete(p.id)
  }

  /** Number of parked entries (key, side and timestamp; on disk, every id is read). */
  size(): number {
    return this.parked.size()
  }

  /** Number of parked entries in memory (tests: the cache's bound). */
  entriesInMemory(): number {
    return this.parked.entriesInMemory()
  }

  close(): void {}

  private noteChange(id: string, exists: boolean): void {
    const c = this.log.changes
    if (c !== undefined && !c.has(id)) c.first(id, exists)
  }
}

/** The timestamp's 8 bytes, the side (right 0, left 1), then the key's bytes: Kafka Streams' order. */
function parkedId(keyId: string, ts: number, left: boolean): string {
  return bigEndian64(ts) + (left ? '\u0001' : '\u0000') + keyId
}
