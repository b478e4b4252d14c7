import { DEFAULT_CACHE_ENTRIES, DURABLE } from '../state/stores.js'
import type { DurableStore } from '../state/stores.js'
import { ChangeLog, LoggedField } from '../state/change-log.js'
import { PERSISTENT } from '../state/persistent-store.js'
import { InFlightCommits, leavingMemory } from '../state/in-flight-commits.js'
import type { PersistentCapability, StoreDisk } from '../state/persistent-store.js'
import type { StoreKey } from '../processor/api.js'

/**
 * One key's stored records: timestamps and values in parallel arrays, in timestamp order (equal
 * timestamps in arrival order), live in [head, end). Parallel arrays with moving ends: a record costs
 * no object of its own, and the arrays are reused in place (live records move to the front when the
 * arrays are full and at least half dead), so a key in steady use allocates nothing per record.
 */
interface KeyEntries<K, V> {
  key: K
  ts: number[]
  values: Array<V | undefined>
  head: number
  end: number
}

/** The store key of the side's largest timestamp (key ids are strings, so it cannot clash). */
const SIDE_TIME_KEY = -1
/**
 * A sweep of every key comes after this many puts, or as many as there are keys if more: a put costs
 * about one key visited. Emptied key entries leave the map in a sweep when there are more than this many
 * and more than live ones.
 */
const MIN_SWEEP = 1024
/**
 * Lists on disk a put visits in a pass over the disk (`sweepDiskStep`): the pass is spread over puts, so
 * no record waits for a read of the whole disk.
 */
const DISK_SWEEP_STEP = 16

/**
 * One side of a stream-stream join: every record of the side by key, kept while the side's largest
 * timestamp is less than the retention (before + after + grace) past it, as Kafka Streams' join window
 * stores keep them (a fetch sees only records newer than `sideTime - retention`). A put drops its own
 * key's expired records, as a hand-written join would, and a sweep every so many puts drops those of
 * the keys no record came for: no timer, queue or index per record, and records out of reach stay in
 * memory at most until the next sweep. As a task store it records the keys whose records changed, so
 * commits write those lists.
 *
 * In a durable run it lives on disk (`attach`): the committed lists are in the state directory by key
 * id, memory holds the keys changed since the last durable commit and up to `cacheEntries` others, and
 * a key memory lacks is read back when a record of it comes or a fetch asks for it. Expiry needs no
 * bookkeeping per key on disk: a list read back drops its expired records then, and once per retention
 * of the side's time a pass over the disk, a few lists per put, deletes the lists whose records have
 * all expired (the keys no record came for). Records read back out of reach are harmless: a fetch
 * never sees them.
 */
export class JoinWindowStore<K, V> {
  private readonly byKey = new Map<string, KeyEntries<K, V>>()
  private readonly sideTime = new LoggedField(SIDE_TIME_KEY, -1)
  private putsSinceSweep = 0
  /** On disk: the committed lists. */
  private disk: StoreDisk | undefined
  /** On disk: whether it may hold a key memory does not (it held keys when attached, or a key left memory). */
  private diskHoldsOthers = false
  /** On disk: commits that took changes and are not durable yet. */
  private readonly commits = new InFlightCommits(() => this.disk !== undefined, () => this.settle())
  /** On disk: the side's time when the last pass over the disk for lists all expired started. */
  private diskSweptAt = -1
  /** On disk: where the pass in progress reads next (undefined: none in progress). */
  private diskSweepFrom: string | undefined
  /**
   * Keys whose records all expired stay in `byKey`, empty, until they outnumber the others: a key that
   * comes back reuses its entry and arrays. In a join whose window is short next to the gaps between a
   * key's records (most airports in the flights join), nearly every record finds its key emptied, and a
   * new entry, two arrays and a map insertion and deletion per record were most of the join's allocation.
   */
  private emptied = 0
  private readonly log = new ChangeLog<string>(
    {
      saved: (id) => this.saved(id),
      savedEntries: () => {
        const out: Array<[StoreKey, unknown]> = []
        for (const id of this.byKey.keys()) if (this.holds(id)) out.push([id, this.saved(id)])
        for (const [id, saved] of this.diskOnly()) out.push([id, saved])
        return out
      },
      load: (id, saved) => {
        const before = this.byKey.get(id)
        if (before !== undefined && before.head === before.end) this.emptied--
        this.byKey.set(id, loaded(saved))
      },
      taken: () => this.commits.taken(),
      committed: () => this.commits.committed(),
    },
    [this.sideTime] as Array<LoggedField<unknown>>,
  )

  readonly [DURABLE]: DurableStore = this.log

  constructor(
    readonly name: string,
    private readonly retentionMs: number,
    /** On disk: how many keys memory keeps beyond those changed since the last durable commit. */
    private readonly cacheEntries = DEFAULT_CACHE_ENTRIES,
  ) {}

  readonly [PERSISTENT]: PersistentCapability = {
    attach: (disk) => {
      this.disk = disk
      // The side's time is small: read it now. Lists are read when their key's records come.
      const time = disk.get(SIDE_TIME_KEY)
      if (time !== undefined) this.sideTime.restore(time)
      this.diskSweptAt = this.sideTime.value
      for (const [key] of disk.entries('')) {
        this.diskHoldsOthers = typeof key === 'string'
        break
      }
    },
  }

  /** The largest timestamp put so far (-1: none). */
  get time(): number {
    return this.sideTime.value
  }

  /** Stores a record (Kafka Streams puts every record with a key and a value, late ones too). */
  put(id: string, key: K, ts: number, value: V): void {
    if (ts > this.sideTime.value) this.sideTime.value = ts
    const cutoff = this.sideTime.value - this.retentionMs
    // A record no fetch can see any more is not kept.
    if (ts <= cutoff) return
    let entries = this.entriesOf(id)
    this.noteChange(id)
    if (entries === undefined) this.byKey.set(id, (entries = { key, ts: [], values: [], head: 0, end: 0 }))
    else if (entries.head === entries.end) this.emptied--
    else dropExpired(entries, cutoff)
    const { ts: times, values } = entries
    if (entries.end === times.length && entries.head * 2 >= times.length && entries.head > 0) compact(entries)
    const end = entries.end
    let i = end
    while (i > entries.head && (times[i - 1] as number) > ts) i--
    if (end === times.length) {
      // Grows the arrays (geometrically, as push does); the slot is written below.
      times.push(ts)
      values.push(value)
    }
    for (let k = end; k > i; k--) {
      times[k] = times[k - 1] as number
      values[k] = values[k - 1]
    }
    times[i] = ts
    values[i] = value
    entries.end = end + 1
    if (++this.putsSinceSweep >= this.byKey.size && this.putsSinceSweep >= MIN_SWEEP) this.sweep(cutoff)
    if (this.diskHoldsOthers) {
      if (this.diskSweepFrom === undefined && this.sideTime.value - this.diskSweptAt >= this.retentionMs) {
        this.diskSweepFrom = ''
        this.diskSweptAt = this.sideTime.value
      }
      if (this.diskSweepFrom !== undefined) this.sweepDiskStep(this.diskSweepFrom, cutoff)
    }
  }

  /**
   * Calls `visit` for each record of the key with `from <= ts <= to` that is still kept, oldest first;
   * returns how many.
   */
  fetch(id: string, from: number, to: number, visit: (ts: number, value: V) => void): number {
    const entries = this.entriesOf(id)
    if (entries === undefined) return 0
    const lowest = Math.max(from, this.sideTime.value - this.retentionMs + 1)
    if (to < lowest) return 0
    const { ts: times, values } = entries
    let n = 0
    for (let i = entries.head, end = entries.end; i < end; i++) {
      const t = times[i] as number
      if (t > to) break
      if (t < lowest) continue
      n++
      visit(t, values[i] as V)
    }
    return n
  }

  /** Number of keys with records a fetch can still see (tests; on disk, every key is read). */
  keyCount(): number {
    const cutoff = this.cutoff()
    let n = 0
    for (const e of this.everyKey()) if (e.end > e.head && (e.ts[e.end - 1] as number) > cutoff) n++
    return n
  }

  /** Number of records a fetch can still see (tests; on disk, every key is read); some out of reach may wait for a sweep. */
  size(): number {
    const cutoff = this.cutoff()
    let n = 0
    for (const e of this.everyKey()) for (let i = e.head; i < e.end; i++) if ((e.ts[i] as number) > cutoff) n++
    return n
  }

  /** Number of keys in memory (tests: the cache's bound). */
  keysInMemory(): number {
    return this.byKey.size
  }

  private *everyKey(): Generator<KeyEntries<K, V>> {
    yield* this.byKey.values()
    for (const [, saved] of this.diskOnly()) yield loaded(saved)
  }

  /** The lists on disk whose key is not in memory (memory's are newer). */
  private *diskOnly(): Generator<[string, unknown]> {
    if (this.disk === undefined || !this.diskHoldsOthers) return
    const changes = this.log.changes
    for (const [id, saved] of this.disk.entries('')) {
      // A key noted changed but not in memory was deleted since the commit.
      if (typeof id === 'string' && !this.byKey.has(id) && changes?.has(id) !== true) yield [id, saved]
    }
  }

  /**
   * The key's entry, read back from disk when memory lacks it; records read back that expired are
   * dropped then, and the change noted, so the next commit trims the list on disk.
   */
  private entriesOf(id: string): KeyEntries<K, V> | undefined {
    const inMemory = this.byKey.get(id)
    if (inMemory !== undefined || !this.diskHoldsOthers) return inMemory
    const c = this.log.changes
    // Noted changed and not in memory: deleted since the last commit (`sweepDiskStep`).
    if (c?.has(id) === true) return undefined
    const saved = (this.disk as StoreDisk).get(id)
    if (saved === undefined) return undefined
    const entries = loaded<K, V>(saved)
    const cutoff = this.cutoff()
    if (entries.end > entries.head && (entries.ts[entries.head] as number) <= cutoff) {
      if (c !== undefined) c.first(id, true)
      dropExpired(entries, cutoff)
    }
    if (entries.head === entries.end) this.emptied++
    this.byKey.set(id, entries)
    return entries
  }

  /**
   * A step of the pass over the disk that starts once per retention of the side's time: of the next
   * DISK_SWEEP_STEP lists from `from`, deletes those of keys not in memory whose records have all expired
   * (a key no record came for since it left memory). Each step is a read of its own, from the key after
   * the last one read, so the pass holds nothing open between puts.
   */
  private sweepDiskStep(from: string, cutoff: number): void {
    const c = this.log.changes
    let last: string | undefined
    let visited = 0
    for (const [id, saved] of (this.disk as StoreDisk).entries(from)) {
      if (typeof id !== 'string') continue
      if (visited++ === DISK_SWEEP_STEP) break
      last = id
      if (c === undefined || this.byKey.has(id) || c.has(id)) continue
      const list = (saved as { list: Array<[number, V]> }).list
      if (list.length === 0 || (list[list.length - 1] as [number, V])[0] <= cutoff) c.first(id, true)
    }
    // The pass ends when a step reads fewer lists than it may.
    this.diskSweepFrom = visited > DISK_SWEEP_STEP && last !== undefined ? `${last}\u0000` : undefined
  }

  /**
   * On disk, once no commit is in flight (the disk then holds every change but those since the last
   * take): keys beyond `cacheEntries` leave memory, oldest first, save those changed since the take.
   */
  private settle(): void {
    const changes = this.log.changes
    if (changes === undefined) return
    for (const id of leavingMemory(this.byKey, this.cacheEntries, (id) => changes.has(id))) {
      const entries = this.byKey.get(id) as KeyEntries<K, V>
      if (entries.head === entries.end) this.emptied--
      else this.diskHoldsOthers = true
      this.byKey.delete(id)
    }
  }

  private cutoff(): number {
    return this.sideTime.value - this.retentionMs
  }

  close(): void {}

  /**
   * Drops the expired records of every key, and forgets emptied keys once they outnumber the live ones.
   * A key's own put drops its expired records first; this catches the keys no record came for since.
   */
  private sweep(cutoff: number): void {
    this.putsSinceSweep = 0
    // forEach, not for-of: for-of allocates an [id, entries] pair per key, which was a sweep's whole allocation.
    this.byKey.forEach((entries, id) => {
      if (entries.head === entries.end || (entries.ts[entries.head] as number) > cutoff) return
      this.noteChange(id)
      dropExpired(entries, cutoff)
      if (entries.head === entries.end) this.emptied++
    })
    if (this.emptied > MIN_SWEEP && this.emptied * 2 > this.byKey.size) {
      this.byKey.forEach((entries, id) => {
        if (entries.head === entries.end) this.byKey.delete(id)
      })
      this.emptied = 0
    }
  }

  private noteChange(id: string): void {
    const c = this.log.changes
    if (c !== undefined && !c.has(id)) c.first(id, this.holds(id))
  }

  /** The key has records (an emptied entry stays in the map a while: see `emptied`). */
  private holds(id: string): boolean {
    const entries = this.byKey.get(id)
    return entries !== undefined && entries.head < entries.end
  }

  private saved(id: string): { key: K; list: Array<[number, V]> } | undefined {
    const entries = this.byKey.get(id)
    if (entries === undefined || entries.head === entries.end) return undefined
    const list: Array<[number, V]> = []
    for (let i = entries.head; i < entries.end; i++) list.push([entries.ts[i] as number, entries.values[i] as V])
    return { key: entries.key, list }
  }
}

/** A key's entry from its saved form (`{ key, list: [[ts, value], ...] }`). */
function loaded<K, V>(saved: unknown): KeyEntries<K, V> {
  const s = saved as { key: K; list: Array<[number, V]> }
  return { key: s.key, ts: s.list.map((e) => e[0]), values: s.list.map((e) => e[1]), head: 0, end: s.list.length }
}

/** Drops a key's records at or before `cutoff` (an emptied key keeps its arrays unless they are long). */
function dropExpired<K, V>(entries: KeyEntries<K, V>, cutoff: number): void {
  const { ts: times, values, end } = entries
  let head = entries.head
  // Dropped values are let go (the slots are reused later).
  while (head < end && (times[head] as number) <= cutoff) values[head++] = undefined
  if (head < end) {
    entries.head = head
    return
  }
  if (times.length > 64) {
    entries.ts = []
    entries.values = []
  }
  entries.head = entries.end = 0
}

/** Moves a key's live records to the front of its arrays. */
function compact<K, V>(entries: KeyEntries<K, V>): void {
  const { ts: times, values, head, end } = entries
  for (let k = head; k < end; k++) {
    times[k - head] = times[k] as number
    values[k - head] = values[k]
    values[k] = undefined
  }
  entries.head = 0
  entries.end = end - head
}
