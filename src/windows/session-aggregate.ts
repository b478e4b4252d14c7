import type { Processor, ProcessorContext, StreamRecord } from '../processor/api.js'
import type { SessionWindows, Windowed } from './windows.js'

interface Session<VA> {
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
  private observedStreamTime = -1
  private readonly sessions = new Map<string, { key: K; list: Array<Session<VA>> }>()

  constructor(
    private readonly spec: SessionWindows,
    private readonly aggregation: SessionAggregation<K, V, VA>,
    private readonly keyId: (key: K) => string,
  ) {}

  init(ctx: ProcessorContext<Windowed<K>, VA | null>): void {
    this.ctx = ctx
  }

  process(record: StreamRecord<K, V>): void {
    const ts = record.timestamp
    if (ts > this.observedStreamTime) this.observedStreamTime = ts
    const closeTime = this.observedStreamTime - this.spec.graceMs
    const id = this.keyId(record.key)
    let entry = this.sessions.get(id)
    const gap = this.spec.gapMs
    const overlapping: Array<Session<VA>> = []
    let start = ts
    let end = ts
    for (const s of entry?.list ?? []) {
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
    if (entry === undefined) this.sessions.set(id, (entry = { key: record.key, list: [] }))
    entry.list = entry.list.filter((s) => !overlapping.includes(s))
    // Kept sorted by start: the expiry walk relies on it.
    let at = entry.list.length
    while (at > 0 && (entry.list[at - 1] as Session<VA>).start > start) at--
    entry.list.splice(at, 0, { start, end, agg })
    this.ctx.forward({ key: { key: record.key, window: { start, end } }, value: agg, timestamp: end, headers: record.headers })
    this.expire(entry, id, closeTime)
  }

  /**
   * Drops this key's sessions that no accepted record can reach any more. An accepted record ends up in
   * a session ending at or after `closeTime`, and one record bridges at most one gap, so it can reach
   * the sessions ending at or after `closeTime - gap`, and the one session just before those.
   */
  private expire(entry: { list: Array<Session<VA>> }, id: string, closeTime: number): void {
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
    if (from === 0) return
    entry.list = list.slice(from)
    if (entry.list.length === 0) this.sessions.delete(id)
  }
}
