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
 * sessions merged away are retracted with a tombstone (none when the merged session is the record's own
 * point [ts, ts], an update of the one session there, as in Kafka Streams). A record is late when the merged session ends before `observed stream
 * time - grace - gap` (as in Kafka Streams: a session stays open for its gap, then for its grace); it is
 * dropped and counted. In a cogroup (Kafka Streams' CogroupedStreamAggregateBuilder: a
 * KStreamSessionWindowAggregate per input over one session store), each input judges lateness by its
 * own stream time, while sessions leave the shared store by the store's time (the largest of all inputs').
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
    /** This processor's input in a cogroup (see above). */
    private readonly cogroupInput?: number,
  ) {}

  init(ctx: ProcessorContext<Windowed<K>, VA | null>): void {
    this.ctx = ctx
    this.store = this.storeName === undefined ? sessionStore<K, VA>('sessions') : ctx.getStateStore<KeyedListStore<K, Session<VA>>>(this.storeName)
  }

  process(record: StreamRecord<K, V>): void {
    const ts = record.timestamp
    const store = this.store
    // Sessions ending at or before this are gone, as in Kafka Streams' session store, which keeps those
    // ending after its stream time - gap - grace, its stream time not yet counting this record.
    const goneUntil = store.streamTime - this.spec.graceMs - this.spec.gapMs
    if (ts > store.streamTime) store.streamTime = ts
    const closeTime = store.streamTime - this.spec.graceMs - this.spec.gapMs
    const input = this.cogroupInput
    if (input !== undefined && ts > store.inputTime(input)) store.setInputTime(input, ts)
    const lateBefore = input === undefined ? closeTime : store.inputTime(input) - this.spec.graceMs - this.spec.gapMs
    const id = this.keyId(record.key)
    const existing = store.get(id)
    const gap = this.spec.gapMs
    const overlapping: Array<Session<VA>> = []
    let start = ts
    let end = ts
    for (const s of existing?.list ?? []) {
      // A gone session is not reopened: a record near it starts a new session (which may be late).
      if (s.end > goneUntil && s.end + gap >= ts && s.start - gap <= ts) {
        overlapping.push(s)
        if (s.start < start) start = s.start
        if (s.end > end) end = s.end
      }
    }
    if (end < lateBefore) {
      this.ctx.droppedRecord('late')
      return
    }
    let agg = this.aggregation.initializer()
    // Merged-away sessions are retracted before the merged one is sent, unless the result is the record's
    // own point window (then it only updates the session already there).
    const retract = start !== ts || end !== ts
    for (const s of overlapping) {
      agg = this.aggregation.merger(record.key, agg, s.agg)
      if (retract) this.ctx.forward({ key: { key: record.key, window: { start: s.start, end: s.end } }, value: null, timestamp: s.end, headers: record.headers })
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

  /** Drops this key's sessions ending at or before `closeTime`: no record merges into them any more. */
  private expire(entry: { list: Array<Session<VA>> }, closeTime: number): void {
    const list = entry.list
    let firstKept = list.length
    for (let i = 0; i < list.length; i++) {
      if ((list[i] as Session<VA>).end > closeTime) {
        firstKept = i
        break
      }
    }
    if (firstKept > 0) entry.list = list.slice(firstKept)
  }
}

/** The store of a session aggregation (sessions are plain data: saved as they are). */
export function sessionStore<K, VA>(name: string, cacheEntries?: number): KeyedListStore<K, Session<VA>> {
  return new KeyedListStore<K, Session<VA>>(
    name,
    (s) => ({ start: s.start, end: s.end, agg: s.agg }),
    (_key, saved) => ({ ...(saved as Session<VA>) }),
    cacheEntries,
  )
}
