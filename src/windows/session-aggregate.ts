import type { Processor, ProcessorContext, StreamRecord } from '../processor/api.js'
import { KeyedListStore } from './keyed-list-store.js'
import type { SessionWindows, Windowed } from './windows.js'

export interface Session<VA> {
  start: number
  end: number
  agg: VA
}

export interface SessionAggregation<K, V, VA> {
  readonly initializer: () => VA
  readonly aggregator: (key: K, value: V, aggregate: VA) => VA
  /** Combines the aggregates of two sessions that a record bridges. */
  readonly merger: (key: K, left: VA, right: VA) => VA
}

/**
 * Session windows as Kafka Streams computes them: a record joins every session of its key within the
 * inactivity gap (`end + gap >= ts` and `start - gap <= ts`), merging them into one [min start, max end];
 * sessions merged away are retracted with a tombstone. A record is late when the merged session ends
 * before `observed stream time - grace`; it is dropped and counted.
 */
export class SessionAggregateProcessor<K, V, VA> implements Processor<K, V, Windowed<K>, VA | null> {
  private ctx!: ProcessorContext<Windowed<K>, VA | null>
  /** Sessions per key id and the observed stream time (a task store when `storeName` is given: durable). */
  private store!: KeyedListStore<K, Session<VA>>

  constructor(
    private readonly spec: SessionWindows,
    private readonly aggregation: SessionAggregation<K, V, VA>,
    private readonly keyId: (key: K) => string,
    private readonly storeName?: string,
  ) {}

  init(ctx: ProcessorContext<Windowed<K>, VA | null>): void {
    this.ctx = ctx
    this.store = this.storeName === undefined ? sessionStore<K, VA>('sessions') : ctx.getStateStore<KeyedListStore<K, Session<VA>>>(this.storeName)
  }

  process(record: StreamRecord<K, V>): void {
    const ts = record.timestamp
    const store = this.store
    if (ts > store.streamTime) store.streamTime = ts
    const closeTime = store.streamTime - this.spec.graceMs
    const id = this.keyId(record.key)
    const existing = store.get(id)
    const gap = this.spec.gapMs
    const overlapping: Array<Session<VA>> = []
    let start = ts
    let end = ts
    for (const s of existing?.list ?? []) {
      if (s.end + gap >= ts && s.start - gap <= ts) {
        overlapping.push(s)
        if (s.start < start) start = s.start
        if (s.end > end) end = s.end
      }
    }
    if (end < closeTime) {
      this.ctx.droppedRecord('late')
      return
    }
    let agg = this.aggregation.initializer()
    for (const s of overlapping) {
      agg = this.aggregation.merger(record.key, agg, s.agg)
      // The merged-away session is retracted before the merged one is sent.
      this.ctx.forward({ key: { key: record.key, window: { start: s.start, end: s.end } }, value: null, timestamp: s.end, headers: record.headers })
    }
    agg = this.aggregation.aggregator(record.key, record.value, agg)
    const entry = store.getOrCreate(id, record.key)
    entry.list = entry.list.filter((s) => !overlapping.includes(s))
    // Kept sorted by start: the expiry walk relies on it.
    let at = entry.list.length
    while (at > 0 && (entry.list[at - 1] as Session<VA>).start > start) at--
    entry.list.splice(at, 0, { start, end, agg })
    this.ctx.forward({ key: { key: record.key, window: { start, end } }, value: agg, timestamp: end, headers: record.headers })
    this.expire(entry, closeTime)
    store.touched(id)
  }

  /**
   * Drops this key's sessions that no accepted record can reach any more. An accepted record ends up in
   * a session ending at or after `closeTime`, and one record bridges at most one gap, so it can reach
   * the sessions ending at or after `closeTime - gap`, and the one session just before those.
   */
  private expire(entry: { list: Array<Session<VA>> }, closeTime: number): void {
    const list = entry.list
    const reachable = closeTime - this.spec.gapMs
    let firstKept = list.length
    for (let i = 0; i < list.length; i++) {
      if ((list[i] as Session<VA>).end >= reachable) {
        firstKept = i
        break
      }
    }
    const from = Math.max(0, firstKept - 1)
    if (from > 0) entry.list = list.slice(from)
  }
}

/** The store of a session aggregation (sessions are plain data: saved as they are). */
export function sessionStore<K, VA>(name: string): KeyedListStore<K, Session<VA>> {
  return new KeyedListStore<K, Session<VA>>(
    name,
    (s) => ({ start: s.start, end: s.end, agg: s.agg }),
    (_key, saved) => ({ ...(saved as Session<VA>) }),
  )
}
