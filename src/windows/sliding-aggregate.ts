import type { Processor, ProcessorContext, StreamRecord } from '../processor/api.js'
import type { Aggregation } from './window-aggregate.js'
import { KeyedListStore } from './keyed-list-store.js'
import type { SlidingWindows, Windowed } from './windows.js'

/** One sliding window of a key: [start, start + difference], its aggregate and largest timestamp. */
export interface SlidingWindow<K, VA> {
  readonly start: number
  readonly key: Windowed<K>
  agg: VA
  maxTs: number
}

/** A window's aggregate as it was before the current record touched it. */
interface Snapshot<VA> {
  readonly agg: VA
  readonly maxTs: number
}

/**
 * Sliding-window aggregation as Kafka Streams defines it (KIP-450). A window exists where records make it
 * non-empty: each record's left window [ts - D, ts], and its right window [ts + 1, ts + 1 + D] once a
 * later record lies within reach. A record updates every existing window containing it, creates its left
 * window (seeded with the aggregate of the records just before it), the right window of the record before
 * it, and its own right window (seeded with the aggregate of the records just after it). New aggregates
 * come from neighbouring windows, never from stored records. Updates are sent newest window first, then
 * created windows. A record is dropped as late when even its right window is closed
 * (`ts + 1 + D <= stream time - grace`); a closed window is not updated (counted as a dropped update).
 * Records before D (whose left window would start before 0) share the window [0, D].
 */
export class SlidingAggregateProcessor<K, V, VA> implements Processor<K, V, Windowed<K>, VA> {
  private ctx!: ProcessorContext<Windowed<K>, VA>
  /** Per key id: windows sorted by start; and the observed stream time (a task store when `storeName` is given: durable). */
  private store!: KeyedListStore<K, SlidingWindow<K, VA>>

  constructor(
    private readonly spec: SlidingWindows,
    private readonly aggregation: Aggregation<K, V, VA>,
    private readonly keyId: (key: K) => string,
    private readonly storeName?: string,
    /**
     * This processor's input in a cogroup (Kafka Streams' CogroupedStreamAggregateBuilder: a
     * KStreamSlidingWindowAggregate per input over one window store). Each input then judges lateness by
     * its own stream time, and windows leave the shared store only by its retention (2D + grace behind
     * the largest window start), since a slower input may still reach them.
     */
    private readonly cogroupInput?: number,
  ) {}

  init(ctx: ProcessorContext<Windowed<K>, VA>): void {
    this.ctx = ctx
    this.store = this.storeName === undefined ? slidingStore<K, VA>('sliding', this.spec.timeDifferenceMs) : ctx.getStateStore<KeyedListStore<K, SlidingWindow<K, VA>>>(this.storeName)
  }

  process(record: StreamRecord<K, V>): void {
    if (record.key === null || record.value === null) return
    const ts = record.timestamp
    const store = this.store
    if (ts > store.streamTime) store.streamTime = ts
    const input = this.cogroupInput
    if (input !== undefined && ts > store.inputTime(input)) store.setInputTime(input, ts)
    const closeTime = (input === undefined ? store.streamTime : store.inputTime(input)) - this.spec.graceMs
    const d = this.spec.timeDifferenceMs
    if (ts + 1 + d <= closeTime) {
      this.ctx.droppedRecord('late')
      return
    }
    const id = this.keyId(record.key)
    const entry = store.getOrCreate(id, record.key)
    // Kafka Streams' window store keeps windows starting after (the largest start stored) - 2D - grace;
    // older ones are gone for every record from then on, also ones that are not closed yet.
    this.forget(entry, store.maxWindowStart - 2 * d - this.spec.graceMs)
    if (ts < d) this.processEarly(entry, record, closeTime)
    else this.processRegular(entry, record, closeTime)
    if (input === undefined) this.expire(entry, closeTime)
    store.touched(id)
  }

  private processRegular(entry: { key: K; list: Array<SlidingWindow<K, VA>> }, record: StreamRecord<K, V>, closeTime: number): void {
    const ts = record.timestamp
    const d = this.spec.timeDifferenceMs
    const list = entry.list
    let leftExists = false
    let rightExists = false
    let leftSeed: Snapshot<VA> | undefined
    let rightSeed: Snapshot<VA> | undefined
    let previousTs: number | undefined
    const starts = new Set<number>()
    // Newest first, over the windows that can matter: starts in [ts - 2D, ts + 1].
    for (let i = this.upperIndex(list, ts + 1); i >= 0; i--) {
      const w = list[i] as SlidingWindow<K, VA>
      if (w.start < ts - 2 * d) break
      starts.add(w.start)
      const end = w.start + d
      if (w.start === ts + 1) {
        rightExists = true
      } else if (end > ts) {
        rightSeed ??= { agg: w.agg, maxTs: w.maxTs }
        this.update(w, record, closeTime)
      } else if (end === ts) {
        leftExists = true
        const before = w.maxTs
        this.update(w, record, closeTime)
        // A record at this very timestamp came before: every window it needs exists already.
        if (before >= ts) return
        previousTs = before
      } else {
        leftSeed = { agg: w.agg, maxTs: w.maxTs }
        previousTs = w.maxTs
        break
      }
    }
    if (previousTs !== undefined) {
      const start = previousTs + 1
      if (!starts.has(start) && start + d >= ts) this.create(entry, start, this.aggregation.initializer(), record, closeTime)
    }
    if (!leftExists) {
      const seed = previousTs !== undefined && ts - d <= previousTs && leftSeed !== undefined ? leftSeed.agg : this.aggregation.initializer()
      this.create(entry, ts - d, seed, record, closeTime)
    }
    if (!rightExists && rightSeed !== undefined && rightSeed.maxTs > ts) this.createRight(entry, ts + 1, rightSeed)
  }

  private processEarly(entry: { key: K; list: Array<SlidingWindow<K, VA>> }, record: StreamRecord<K, V>, closeTime: number): void {
    const ts = record.timestamp
    const list = entry.list
    let combined: SlidingWindow<K, VA> | undefined
    let combinedBefore: Snapshot<VA> | undefined
    let rightSeed: Snapshot<VA> | undefined
    let rightExists = false
    let previousTs: number | undefined
    const starts = new Set<number>()
    // Oldest first over starts in [0, ts + 1].
    for (const w of list) {
      if (w.start > ts + 1) break
      starts.add(w.start)
      if (w.start === 0) {
        combined = w
        combinedBefore = { agg: w.agg, maxTs: w.maxTs }
        if (w.maxTs < ts) previousTs = w.maxTs
      } else if (w.start <= ts) {
        rightSeed = { agg: w.agg, maxTs: w.maxTs }
        this.update(w, record, closeTime)
      } else {
        rightExists = true
      }
    }
    // Without a window starting after 0, the combined window holds the records after this one.
    if (rightSeed === undefined && combinedBefore !== undefined && combinedBefore.maxTs > ts) rightSeed = combinedBefore
    if (!rightExists && rightSeed !== undefined && rightSeed.maxTs > ts) this.createRight(entry, ts + 1, rightSeed)
    if (previousTs !== undefined && !starts.has(previousTs + 1)) this.create(entry, previousTs + 1, this.aggregation.initializer(), record, closeTime)
    if (combined === undefined) this.create(entry, 0, this.aggregation.initializer(), record, closeTime)
    else this.update(combined, record, closeTime)
  }

  /** Adds the record to a window and sends the new aggregate, unless the window is closed. */
  private update(w: SlidingWindow<K, VA>, record: StreamRecord<K, V>, closeTime: number): void {
    if (w.start + this.spec.timeDifferenceMs < closeTime) {
      this.ctx.droppedRecord('late')
      return
    }
    w.agg = this.aggregation.aggregator(record.key, record.value, w.agg)
    if (record.timestamp > w.maxTs) w.maxTs = record.timestamp
    this.ctx.forward({ key: w.key, value: w.agg, timestamp: w.maxTs, headers: record.headers })
  }

  /** Creates a window from a seed aggregate, then adds the record to it. */
  private create(entry: { key: K; list: Array<SlidingWindow<K, VA>> }, start: number, seed: VA, record: StreamRecord<K, V>, closeTime: number): void {
    if (start + this.spec.timeDifferenceMs < closeTime) {
      this.ctx.droppedRecord('late')
      return
    }
    const w = this.insert(entry, start, seed, record.timestamp)
    w.agg = this.aggregation.aggregator(record.key, record.value, w.agg)
    this.ctx.forward({ key: w.key, value: w.agg, timestamp: w.maxTs, headers: record.headers })
  }

  /** Creates the current record's right window from the aggregate of the records after it (not itself). */
  private createRight(entry: { key: K; list: Array<SlidingWindow<K, VA>> }, start: number, seed: Snapshot<VA>): void {
    const w = this.insert(entry, start, seed.agg, seed.maxTs)
    this.ctx.forward({ key: w.key, value: w.agg, timestamp: w.maxTs, headers: [] })
  }

  /** Puts a window, replacing one with the same start (the previous record's right window can be the new left window). */
  private insert(entry: { key: K; list: Array<SlidingWindow<K, VA>> }, start: number, agg: VA, maxTs: number): SlidingWindow<K, VA> {
    const list = entry.list
    const last = this.upperIndex(list, start)
    const existing = list[last]
    if (existing !== undefined && existing.start === start) {
      existing.agg = agg
      existing.maxTs = maxTs
      return existing
    }
    const w: SlidingWindow<K, VA> = { start, key: { key: entry.key, window: { start, end: start + this.spec.timeDifferenceMs } }, agg, maxTs }
    list.splice(last + 1, 0, w)
    if (start > this.store.maxWindowStart) this.store.maxWindowStart = start
    return w
  }

  /** Index of the last window with start <= `start`, or -1. */
  private upperIndex(list: ReadonlyArray<SlidingWindow<K, VA>>, start: number): number {
    let lo = 0
    let hi = list.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if ((list[mid] as SlidingWindow<K, VA>).start <= start) lo = mid + 1
      else hi = mid
    }
    return lo - 1
  }

  /** Forgets this key's windows starting at or before `until`. */
  private forget(entry: { list: Array<SlidingWindow<K, VA>> }, until: number): void {
    let n = 0
    while (n < entry.list.length && (entry.list[n] as SlidingWindow<K, VA>).start <= until) n++
    if (n > 0) entry.list.splice(0, n)
  }

  /** Forgets windows no record can reach: a record that is not late scans starts from closeTime - 3D - 1. */
  private expire(entry: { list: Array<SlidingWindow<K, VA>> }, closeTime: number): void {
    const keepFrom = closeTime - 3 * this.spec.timeDifferenceMs - 1
    let n = 0
    while (n < entry.list.length && (entry.list[n] as SlidingWindow<K, VA>).start < keepFrom) n++
    if (n > 0) entry.list.splice(0, n)
  }
}

/** The store of a sliding-window aggregation: windows are saved without their windowed key objects. */
export function slidingStore<K, VA>(name: string, timeDifferenceMs: number, cacheEntries?: number): KeyedListStore<K, SlidingWindow<K, VA>> {
  return new KeyedListStore<K, SlidingWindow<K, VA>>(
    name,
    (w) => ({ start: w.start, agg: w.agg, maxTs: w.maxTs }),
    (key, saved) => {
      const w = saved as { start: number; agg: VA; maxTs: number }
      return { start: w.start, key: { key, window: { start: w.start, end: w.start + timeDifferenceMs } }, agg: w.agg, maxTs: w.maxTs }
    },
    cacheEntries,
  )
}
