import type { StoreKey } from '../processor/api.js'
import { IndexedMinHeap } from '../util/indexed-heap.js'
import type { HeapElement } from '../util/indexed-heap.js'

/** One pending timer. `owner` is a small integer: the keyed node (user timers) or the state (TTL timers). */
export class TimerEntry implements HeapElement {
  heapIndex = -1

  constructor(
    readonly timestamp: number,
    readonly seq: number,
    readonly key: StoreKey,
    readonly owner: number,
  ) {}
}

const fireBefore = (a: TimerEntry, b: TimerEntry): boolean => a.timestamp < b.timestamp || (a.timestamp === b.timestamp && a.seq < b.seq)

/**
 * A set-semantic priority queue of timers (Flink's HeapPriorityQueueSet): a heap ordered by
 * (timestamp, registration order) plus an index by (owner, key) for deduplication and O(log n) delete.
 * Most keys have one timer, so the index holds a bare entry until a key has two.
 */
export class TimerQueue {
  private readonly heap = new IndexedMinHeap<TimerEntry>(fireBefore)
  private readonly index: Array<Map<StoreKey, TimerEntry | TimerEntry[]>> = []

  get size(): number {
    return this.heap.size
  }

  /** Earliest timestamp, or Infinity. */
  peekTime(): number {
    const head = this.heap.peek()
    return head === undefined ? Infinity : head.timestamp
  }

  peek(): TimerEntry | undefined {
    return this.heap.peek()
  }

  /** Adds a timer unless (owner, key, timestamp) is already pending; returns whether it was added. */
  add(owner: number, key: StoreKey, timestamp: number, seq: number): boolean {
    const byKey = this.ownerIndex(owner)
    const existing = byKey.get(key)
    if (existing !== undefined) {
      if (Array.isArray(existing)) {
        for (const e of existing) if (e.timestamp === timestamp) return false
      } else if (existing.timestamp === timestamp) return false
    }
    const entry = new TimerEntry(timestamp, seq, key, owner)
    if (existing === undefined) byKey.set(key, entry)
    else if (Array.isArray(existing)) existing.push(entry)
    else byKey.set(key, [existing, entry])
    this.heap.add(entry)
    return true
  }

  /** Removes the timer if pending; returns whether it was. */
  remove(owner: number, key: StoreKey, timestamp: number): boolean {
    const entry = this.find(owner, key, timestamp)
    if (entry === undefined) return false
    this.unindex(entry)
    this.heap.remove(entry)
    return true
  }

  /** Removes and returns the head if its timestamp is <= `time`. */
  pollDue(time: number): TimerEntry | undefined {
    const head = this.heap.peek()
    if (head === undefined || head.timestamp > time) return undefined
    this.heap.poll()
    this.unindex(head)
    return head
  }

  find(owner: number, key: StoreKey, timestamp: number): TimerEntry | undefined {
    const existing = this.index[owner]?.get(key)
    if (existing === undefined) return undefined
    if (!Array.isArray(existing)) return existing.timestamp === timestamp ? existing : undefined
    for (const e of existing) if (e.timestamp === timestamp) return e
    return undefined
  }

  /** Pending timers of one owner and key, in firing order. */
  list(owner: number, key: StoreKey): TimerEntry[] {
    const existing = this.index[owner]?.get(key)
    if (existing === undefined) return []
    const all = Array.isArray(existing) ? [...existing] : [existing]
    return all.sort((a, b) => (fireBefore(a, b) ? -1 : 1))
  }

  countOwner(owner: number): number {
    let n = 0
    for (const v of this.index[owner]?.values() ?? []) n += Array.isArray(v) ? v.length : 1
    return n
  }

  /** All pending timers in heap order (for snapshots). */
  entries(): readonly TimerEntry[] {
    return this.heap.toArray()
  }

  private ownerIndex(owner: number): Map<StoreKey, TimerEntry | TimerEntry[]> {
    let m = this.index[owner]
    if (m === undefined) this.index[owner] = m = new Map()
    return m
  }

  private unindex(entry: TimerEntry): void {
    const byKey = this.index[entry.owner] as Map<StoreKey, TimerEntry | TimerEntry[]>
    const existing = byKey.get(entry.key)
    if (existing === entry) {
      byKey.delete(entry.key)
    } else if (Array.isArray(existing)) {
      const i = existing.indexOf(entry)
      if (i >= 0) existing.splice(i, 1)
      if (existing.length === 1) byKey.set(entry.key, existing[0] as TimerEntry)
    }
  }
}
