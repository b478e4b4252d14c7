import type { StoreKey } from '../processor/api.js'
import { RegistrationBatch } from './registration-batch.js'
import { SlotHeap, keepSlots } from './slot-heap.js'
import { DuplicateSampler, killDuplicates } from './timer-duplicates.js'
import { TimerIndex, timerHash } from './timer-index.js'
import { DEAD, LIVE, TimerRecords } from './timer-records.js'

/** A pending timer's data, as `entries()` and `list()` return it. */
export interface TimerEntry {
  readonly timestamp: number
  readonly seq: number
  readonly key: StoreKey
  readonly owner: number
}

/** The largest heap order; past it orders are renumbered. */
const MAX_ORDER = 0xffffffff
/** A heap at least this large is sorted into a run, rather than popped, when all of it is due. */
const DRAIN_MIN = 16_384
/** Dead slots are compacted away once there are more of them than this and than live ones. */
const COMPACT_MIN = 1024
/** Run entries whose records are read ahead of polling at a time. */
const TOUCH_AHEAD = 64
/**
 * Registrations `enqueue` holds before it indexes them together. Large enough that a flush's passes
 * overlap many cache misses, small enough that what the first passes bring into the cache (the keys'
 * strings, the index lines) is still there for the last one: 512 keys and 512 index lines are 64 KB.
 */
const BATCH = 512
/** An unindexed heap is first sampled for duplicates at this size, then each time it has doubled. */
const DUPLICATE_CHECK_MIN = 16_384

/** Told of each registration that `enqueue` accepted (not a duplicate), in registration order. */
export type AddedListener = (owner: number, key: StoreKey, timestamp: number, seq: number) => void

/**
 * A set-semantic priority queue of timers (Flink's HeapPriorityQueueSet), laid out for the cache.
 *
 * - Heap (`SlotHeap`): 4-ary over 16-byte slots of (timestamp, order, id). The order is a 32-bit
 *   registration counter local to the queue (ties fire in registration order); when it would overflow,
 *   the pending timers are renumbered in the order they have, which keeps the heap valid.
 * - Records (`TimerRecords`): each timer has an integer id (reused once it leaves the heap) with its
 *   key, timestamp, full registration sequence (for snapshots and changes), owner and state.
 * - Index (`TimerIndex`): a hash table on (owner, key, timestamp) for deduplication and deletion.
 * - Run: when an advance makes every timer of a large heap due (a jump in time, the end of input), the
 *   heap is radix-sorted into a run (`SlotHeap.drainSorted`) and polled from its front, instead of a sift
 *   through every level per timer. Timers registered meanwhile go into a new heap; a poll takes
 *   whichever of the two heads fires first.
 *
 * - Unindexed registrations: a queue that is empty (and has no listener) stops indexing. Registrations
 *   are appended with no lookup, duplicates included, until something needs the index: a delete, a
 *   count, a listener, or a poll from the heap. Then `indexAll` indexes every pending timer, oldest first,
 *   and marks each duplicate DEAD. A heap that is sorted into a run drops its duplicates there instead
 *   (they share a timestamp, so the sort puts them side by side), and needs no index at all: a burst of
 *   registrations that an advance then fires (a jump in time, the end of input) never hashes a key. A
 *   sample of the heap is checked for duplicates each time it doubles, and a queue that finds some is
 *   indexed, so that registering the same timer again and again (once per record, say) does not keep a
 *   slot per registration.
 *
 * Deletion is lazy in the heap too: a deleted timer is marked DEAD and dropped when it reaches the top, or
 * in a compaction when dead slots outnumber live ones. `owner` is a small non-negative integer: the keyed
 * node (user timers) or the state (TTL timers).
 */
export class TimerQueue {
  /** The pending timers' slots, DEAD ones included (dropped at the head, or by a compaction). */
  private readonly heap = new SlotHeap()
  /** DEAD timers in the heap and the run. */
  private dead = 0
  /**
   * The run: timers taken out of the heap in firing order (same slot layout), when an advance made every
   * timer of a large heap due. Polls take from it and from the heap, whichever is earlier; [runStart,
   * runEnd) are pending.
   */
  private runTime = new Float64Array(0)
  private runWord = new Uint32Array(0)
  private runStart = 0
  /** Run positions below this have had their records touched ahead of polling (see `touchAhead`). */
  private touchedTo = 0
  /** Where `touchAhead`'s reads go, so that the compiler keeps them. */
  private touchSink = 0
  private runEnd = 0
  private nextOrder = 0
  private readonly records = new TimerRecords()
  private readonly index = new TimerIndex(this.records)
  private readonly polled = new PolledTimer(this.records)
  /** Registrations `enqueue` has not indexed yet (made on the first one). */
  private pending: RegistrationBatch | undefined
  private onAdded: AddedListener | undefined
  /**
   * Whether every pending timer is in the index. While not, registrations are appended unindexed (see the
   * class comment): `pending` is empty, no slot is DEAD, and the heap has not been heaped since it was
   * empty, so its slots are in registration order.
   */
  private indexed = false
  /** While unindexed: the heap size at which a sample of it is next checked for duplicates. */
  private duplicateCheckAt: number
  private readonly sampler = new DuplicateSampler()

  private readonly maxOrder: number
  private readonly drainMin: number
  private readonly compactMin: number
  private readonly batch: number
  private readonly duplicateCheckMin: number

  /**
   * The options exist for tests, to reach the renumbering, the run, full batches and the duplicate
   * sampling with few timers.
   */
  constructor(
    options: { readonly maxOrder?: number; readonly drainMin?: number; readonly compactMin?: number; readonly batch?: number; readonly duplicateCheckMin?: number } = {},
  ) {
    this.maxOrder = options.maxOrder ?? MAX_ORDER
    this.drainMin = options.drainMin ?? DRAIN_MIN
    this.compactMin = options.compactMin ?? COMPACT_MIN
    this.batch = options.batch ?? BATCH
    this.duplicateCheckMin = options.duplicateCheckMin ?? DUPLICATE_CHECK_MIN
    this.duplicateCheckAt = this.duplicateCheckMin
  }

  /** Pending timers. */
  get size(): number {
    this.flush()
    return this.liveCount()
  }

  /**
   * Slots in the heap and the run: the pending timers, plus DEAD ones not dropped yet and, while
   * unindexed, duplicates. What the queue's memory follows. Reads, never indexes.
   */
  get slots(): number {
    return this.heap.size + this.runEnd - this.runStart
  }

  private liveCount(): number {
    return this.heap.size + this.runEnd - this.runStart - this.dead
  }

  /**
   * Earliest pending timestamp, or Infinity. Registrations not indexed yet count without a flush: a
   * duplicate among them has the timestamp of the timer it duplicates, so the minimum is the same.
   */
  peekTime(): number {
    // A deleted timer may be the earliest appended one: then the heap is built, and its head dropped.
    if (this.dead > 0) this.heap.ensureHeap()
    this.dropDeadHead()
    const heap = this.heap.earliest()
    const run = this.runStart === this.runEnd ? Infinity : (this.runTime[2 * this.runStart] as number)
    const indexed = heap < run ? heap : run
    const held = this.pending === undefined ? Infinity : this.pending.earliest
    return held < indexed ? held : indexed
  }

  /**
   * Where `enqueue` reports the registrations it accepted (one listener; undefined stops it). A queue
   * with a listener stays indexed: whether a registration was accepted is known as it is indexed.
   */
  listen(onAdded: AddedListener | undefined): void {
    if (onAdded !== undefined) this.indexAll()
    this.onAdded = onAdded
  }

  /**
   * Registers a timer unless (owner, key, timestamp) is pending, like `add`, but may hold it to index
   * it later with others (why: see `RegistrationBatch`), or, while the queue is unindexed, append it
   * unindexed (see the class comment). Every other method indexes what is held first and a duplicate
   * never fires, so nothing can tell the difference, except that whether it was a duplicate is not known
   * at the call (the listener is told of accepted ones when they are indexed).
   */
  /** Makes room for `count` more timers at once (a restore knows how many it enqueues). */
  reserve(count: number): void {
    this.records.reserve(count)
    this.heap.reserve(count)
  }

  enqueue(owner: number, key: StoreKey, timestamp: number, seq: number): void {
    if (this.indexed && this.heap.size === 0 && this.isEmptyAndUnheard()) this.dropIndex()
    if (!this.indexed) {
      if (this.heap.size >= this.duplicateCheckAt || this.nextOrder > this.maxOrder) this.checkUnindexed()
      if (!this.indexed) {
        this.heap.append(timestamp, this.nextOrder++, this.records.add(owner, key, timestamp, seq, 0))
        return
      }
    }
    const batch = (this.pending ??= new RegistrationBatch(this.batch))
    if (batch.count === batch.size) this.flush()
    batch.push(owner, key, timestamp, seq)
  }

  /** No timer, held or in a slot, and no listener: the index can go. */
  private isEmptyAndUnheard(): boolean {
    return this.heap.size === 0 && this.runStart === this.runEnd && this.onAdded === undefined && (this.pending === undefined || this.pending.count === 0)
  }

  private dropIndex(): void {
    this.index.clear()
    this.indexed = false
    this.duplicateCheckAt = this.duplicateCheckMin
  }

  /**
   * Unindexed, before an append: indexes everything if the orders ran out (renumbering needs a heap) or a
   * sample of the heap has duplicates; else the next check is when the heap has doubled.
   */
  private checkUnindexed(): void {
    if (this.nextOrder > this.maxOrder || this.sampler.hasDuplicates(this.heap.word, this.heap.size, this.records)) this.indexAll()
    else this.duplicateCheckAt = 2 * this.heap.size
  }

  /**
   * Indexes every pending timer, oldest first, marking each duplicate DEAD: the later one, registered
   * while the first was pending (the run's timers were all registered before the heap's, and an
   * unindexed heap is in registration order). From then on the queue is indexed.
   */
  private indexAll(): void {
    if (this.indexed) return
    this.indexed = true
    const total = this.heap.size + this.runEnd - this.runStart
    if (total === 0) return
    this.index.presize(total)
    const batch = (this.pending ??= new RegistrationBatch(this.batch))
    const records = this.records
    let live = 0
    const hold = (id: number): void => {
      if (batch.count === batch.size) live = this.indexHeld(batch, live)
      batch.pushIndexing(id, records.owner(id), records.key(id), records.timestamp(id))
    }
    for (let r = this.runStart; r < this.runEnd; r++) hold(this.runWord[4 * r + 3] as number)
    const word = this.heap.word
    for (let s = 0; s < this.heap.size; s++) hold(word[4 * s + 3] as number)
    live = this.indexHeld(batch, live)
    this.dead = total - live
    if (this.dead > this.compactMin && this.dead * 2 > total) this.compact()
  }

  /** Indexes the timers `indexAll` holds in `batch` (`live` of them indexed before); returns the new count. */
  private indexHeld(batch: RegistrationBatch, live: number): number {
    batch.prepare(this.index, live)
    const n = batch.take()
    const { owner, keys, time, hash, id } = batch
    for (let i = 0; i < n; i++) {
      const h = hash[i] as number
      const found = this.index.findOrReserve(h, owner[i] as number, keys[i] as StoreKey, time[i] as number, live)
      if (found >= 0) this.records.kill(id[i] as number)
      else {
        this.records.setHash(id[i] as number, h)
        this.index.fill(found, h, id[i] as number)
        live++
      }
    }
    batch.release(n)
    return live
  }

  /** Indexes the registrations `enqueue` held, in the order they were made (or, unindexed, every timer). */
  flush(): void {
    if (!this.indexed) {
      this.indexAll()
      return
    }
    const batch = this.pending
    if (batch === undefined || batch.count === 0) return
    batch.prepare(this.index, this.liveCount())
    const n = batch.take()
    const { owner, keys, time, seq, hash } = batch
    const onAdded = this.onAdded
    for (let i = 0; i < n; i++) {
      const k = keys[i] as StoreKey
      if (this.insert(hash[i] as number, owner[i] as number, k, time[i] as number, seq[i] as number) && onAdded !== undefined) {
        onAdded(owner[i] as number, k, time[i] as number, seq[i] as number)
      }
    }
    batch.release(n)
  }

  /** Adds a timer unless (owner, key, timestamp) is already pending; returns whether it was added. */
  add(owner: number, key: StoreKey, timestamp: number, seq: number): boolean {
    this.flush()
    return this.insert(timerHash(owner, key, timestamp), owner, key, timestamp, seq)
  }

  private insert(h: number, owner: number, key: StoreKey, timestamp: number, seq: number): boolean {
    const found = this.index.findOrReserve(h, owner, key, timestamp, this.liveCount())
    if (found >= 0) return false
    const id = this.records.add(owner, key, timestamp, seq, h)
    this.index.fill(found, h, id)
    if (this.nextOrder > this.maxOrder) this.renumber()
    // Appended, not sifted: the heap heaps the appended slots when the head is needed.
    this.heap.append(timestamp, this.nextOrder++, id)
    return true
  }

  /** Removes the timer if pending; returns its registration sequence number, or -1 when none was. */
  remove(owner: number, key: StoreKey, timestamp: number): number {
    this.flush()
    const id = this.index.find(timerHash(owner, key, timestamp), owner, key, timestamp)
    if (id < 0) return -1
    const seq = this.records.seq(id)
    // Its index entry goes stale with the state change; the heap drops the DEAD slot later.
    this.records.kill(id)
    this.dead++
    if (this.dead > this.compactMin && this.dead * 2 > this.heap.size + this.runEnd - this.runStart) this.compact()
    return seq
  }

  /**
   * Removes the head if its timestamp is <= `time` and returns it, or undefined. The returned object is
   * reused by the next call, and its `seq` is read from the freed record: read it before polling or
   * registering again.
   */
  pollDue(time: number): TimerEntry | undefined {
    if (this.pending !== undefined && this.pending.earliest <= time) this.flush()
    const heap = this.heap
    if (heap.allDueBy(time) && heap.size >= this.drainMin && this.runStart === this.runEnd) this.sortIntoRun()
    // Unindexed, the heap is only an array: it is indexed (which drops duplicates) before it is heaped.
    if (!this.indexed && heap.size > 0 && heap.earliest() <= time) this.indexAll()
    if (this.indexed) {
      heap.ensureHeap()
      this.dropDeadHead()
    }
    const heapDue = this.indexed && heap.size > 0 && (heap.time[0] as number) <= time
    const r = this.runStart
    if (r < this.runEnd && (this.runTime[2 * r] as number) <= time) {
      if (r >= this.touchedTo) this.touchAhead(r)
      const rt = this.runTime[2 * r] as number
      const ht = heap.time[0] as number
      if (!heapDue || rt < ht || (rt === ht && (this.runWord[4 * r + 2] as number) < (heap.word[2] as number))) {
        const id = this.runWord[4 * r + 3] as number
        if (++this.runStart === this.runEnd) this.clearRun()
        return this.polledOf(id, rt)
      }
    }
    if (!heapDue) return undefined
    const id = heap.word[3] as number
    const polled = this.polledOf(id, heap.time[0] as number)
    this.removeHead()
    return polled
  }

  /**
   * Removes the heap's head, then reads the new head's record: the next poll reads it, and it is a cache
   * miss (the heap is in firing order, ids in registration order); read now, the miss overlaps whatever
   * runs before that poll.
   */
  private removeHead(): void {
    const heap = this.heap
    heap.removeHead()
    if (heap.size > 0) this.touchSink += this.records.touch(heap.word[3] as number)
  }

  /**
   * Reads the records (and key slots) of the next TOUCH_AHEAD run entries in one loop. The run is in
   * firing order and the ids in registration order, so each poll's record is a cache miss; misses in a
   * loop of independent reads overlap, the same misses one poll at a time do not. (JavaScript has no
   * prefetch instruction; this is one.)
   */
  private touchAhead(from: number): void {
    const end = Math.min(this.runEnd, from + TOUCH_AHEAD)
    const word = this.runWord
    let sink = 0
    for (let r = from; r < end; r++) sink += this.records.touch(word[4 * r + 3] as number)
    this.touchSink = sink
    this.touchedTo = end
  }

  /** Fills the reused poll result with timer `id` and frees the id. */
  private polledOf(id: number, timestamp: number): TimerEntry {
    const polled = this.polled
    const records = this.records
    polled.timestamp = timestamp
    polled.key = records.key(id)
    polled.owner = records.owner(id)
    polled.id = id
    records.release(id)
    return polled
  }

  /**
   * Moves the whole heap into the run, sorted (all of it is due: the heap's maximum is at most the poll
   * time). An advance that fires a large heap to the end then costs a few sequential passes instead of a
   * sift through every level per timer. Timers registered meanwhile go to a new heap.
   */
  private sortIntoRun(): void {
    const n = this.heap.size
    const sorted = this.heap.drainSorted()
    if (sorted === undefined) return
    this.runTime = new Float64Array(sorted)
    this.runWord = new Uint32Array(sorted)
    this.runStart = this.touchedTo = 0
    this.runEnd = n
    if (!this.indexed) this.dropRunDuplicates()
  }

  /**
   * Unindexed: drops duplicates from the new run. Duplicates share a timestamp, so they are among the
   * slots of one timestamp, where registration order puts the timer before its duplicates.
   */
  private dropRunDuplicates(): void {
    const time = this.runTime
    const end = this.runEnd
    let killed = 0
    for (let r = this.runStart; r < end; ) {
      const t = time[2 * r] as number
      let e = r + 1
      while (e < end && time[2 * e] === t) e++
      if (e - r > 1) killed += killDuplicates(this.runWord, r, e, t, this.records)
      r = e
    }
    if (killed === 0) return
    this.runEnd = keepSlots(this.runTime, this.runWord, this.runStart, end, this.runStart, this.dropDead)
    if (this.runStart === this.runEnd) this.clearRun()
  }

  /** Lets go of a drained run's buffer (it can be as large as the heap was). */
  private clearRun(): void {
    this.runTime = new Float64Array(0)
    this.runWord = new Uint32Array(0)
    this.runStart = this.runEnd = this.touchedTo = 0
  }

  /** Calls `f` with the id of every slot, heap then run, DEAD ones included. */
  private forEachSlotId(f: (id: number) => void): void {
    this.flush()
    const word = this.heap.word
    for (let s = 0; s < this.heap.size; s++) f(word[4 * s + 3] as number)
    for (let r = this.runStart; r < this.runEnd; r++) f(this.runWord[4 * r + 3] as number)
  }

  /** Pending timers of one owner and key, in firing order (a scan: for inspection, not the hot path). */
  list(owner: number, key: StoreKey): TimerEntry[] {
    const out: TimerEntry[] = []
    this.forEachSlotId((id) => {
      if (this.records.isLiveOf(id, owner) && this.records.key(id) === key) out.push(this.entry(id))
    })
    return out.sort((a, b) => a.timestamp - b.timestamp || a.seq - b.seq)
  }

  countOwner(owner: number): number {
    let n = 0
    this.forEachSlotId((id) => {
      if (this.records.isLiveOf(id, owner)) n++
    })
    return n
  }

  /** All pending timers, in no particular order (for snapshots). */
  entries(): TimerEntry[] {
    const out: TimerEntry[] = []
    this.forEachSlotId((id) => {
      if (this.records.state(id) === LIVE) out.push(this.entry(id))
    })
    return out
  }

  private entry(id: number): TimerEntry {
    const r = this.records
    return { timestamp: r.timestamp(id), seq: r.seq(id), key: r.key(id), owner: r.owner(id) }
  }

  /** Drops DEAD timers from the head of the heap (which `ensureHeap` has built) and of the run. */
  private dropDeadHead(): void {
    if (this.dead === 0) return
    const heap = this.heap
    while (heap.size > 0) {
      const id = heap.word[3] as number
      if (this.records.state(id) !== DEAD) break
      this.dead--
      heap.removeHead()
      this.records.release(id)
    }
    while (this.runStart < this.runEnd) {
      const id = this.runWord[4 * this.runStart + 3] as number
      if (this.records.state(id) !== DEAD) break
      this.dead--
      if (++this.runStart === this.runEnd) this.clearRun()
      this.records.release(id)
    }
  }

  /** Drops dead slots: rebuilds the heap (Floyd's heapify, O(n)) and closes the run's gaps (keeping its order). */
  private compact(): void {
    this.heap.compact(this.dropDead)
    this.runEnd = keepSlots(this.runTime, this.runWord, this.runStart, this.runEnd, this.runStart, this.dropDead)
    if (this.runStart === this.runEnd) this.clearRun()
    this.dead = 0
  }

  /** Whether a slot's timer is DEAD, freeing its id if so (for compaction). */
  private readonly dropDead = (id: number): boolean => {
    if (this.records.state(id) !== DEAD) return false
    this.records.release(id)
    return true
  }

  /**
   * Gives the pending timers orders 0..n-1 in the order they already have (timestamp, then order), so
   * orders can keep growing: every comparison comes out as before.
   */
  private renumber(): void {
    // The run goes back into the heap first (a rare path: once per four billion registrations).
    const heap = this.heap
    heap.ensureHeap()
    for (let r = this.runStart; r < this.runEnd; r++) heap.push(this.runTime[2 * r] as number, this.runWord[4 * r + 2] as number, this.runWord[4 * r + 3] as number)
    this.clearRun()
    this.nextOrder = heap.renumber()
  }
}

/**
 * The reused result of `pollDue`. The sequence is read from the record only when asked for (only durable
 * mode needs it): firing then reads no record at all. The id was freed by the poll, and its record is
 * unchanged until a registration reuses it.
 */
class PolledTimer implements TimerEntry {
  timestamp = 0
  key: StoreKey = ''
  owner = 0
  id = 0

  constructor(private readonly records: TimerRecords) {}

  get seq(): number {
    return this.records.seq(this.id)
  }
}
