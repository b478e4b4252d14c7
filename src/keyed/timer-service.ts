import type { PendingTimers } from '../metrics.js'
import type { StoreKey } from '../processor/api.js'
import type { TimeDomain } from './api.js'
import { TimerQueue } from './timer-queue.js'
import type { TimerEntry } from './timer-queue.js'

/** Where fired timers go: the task routes user timers to their node, TTL timers to their state. */
export interface TimerTargets {
  onUserTimer(owner: number, key: StoreKey, timestamp: number, domain: TimeDomain): void
  onTtlTimer(owner: number, key: StoreKey, timestamp: number, domain: TimeDomain, now: number): void
}

/** A pending timer as a snapshot holds it; `owner` is a stable name (node, or node/state). */
export interface TimerRecord {
  readonly kind: 'user' | 'ttl'
  readonly domain: TimeDomain
  readonly timestamp: number
  readonly seq: number
  readonly owner: string
  readonly key: StoreKey
}

/** A change to the pending timers since the last `takeChanges()`: what a durable store writes. */
export interface TimerChange {
  readonly added: boolean
  readonly kind: 'user' | 'ttl'
  readonly domain: TimeDomain
  readonly owner: number
  readonly key: StoreKey
  readonly timestamp: number
  readonly seq: number
}

interface Queues {
  readonly event: TimerQueue
  readonly processing: TimerQueue
}

/**
 * The timers of one task (Flink's timer service): per time domain, a queue of user timers and a
 * separate queue of TTL timers. When a domain's time advances, every due user timer fires first (also
 * those registered by callbacks and already due), then due TTL timers; a user timer made due by a TTL
 * callback still goes before the next TTL timer. TTL timers never change how user timers are kept.
 */
export class TimerService {
  private readonly user: Queues = { event: new TimerQueue(), processing: new TimerQueue() }
  private readonly ttl: Queues = { event: new TimerQueue(), processing: new TimerQueue() }
  private seq = 0
  /** Recorded only in durable mode (an allocation per change otherwise not made). */
  private changes: TimerChange[] | undefined

  /** The processing-time head last handed to the alarm (`nextProcessingDueToArm`); Infinity: none. */
  private armedHead = Infinity

  constructor(
    private readonly targets: TimerTargets,
    /** Told when a processing-time timer is earlier than the head the alarm was armed for (re-arm it). */
    private readonly onProcessingTimerAdded: () => void,
  ) {}

  /** Durable mode: from now on, record every change to the pending timers for `takeChanges`. */
  trackChanges(): void {
    this.changes ??= []
  }

  /** The changes since the last call (durable mode), oldest first. */
  takeChanges(): TimerChange[] {
    const c = this.changes
    if (c === undefined || c.length === 0) return []
    this.changes = []
    return c
  }

  registerUser(domain: TimeDomain, owner: number, key: StoreKey, timestamp: number): void {
    this.register('user', domain, owner, key, timestamp)
  }

  deleteUser(domain: TimeDomain, owner: number, key: StoreKey, timestamp: number): void {
    const seq = this.user[domain].remove(owner, key, timestamp)
    if (seq >= 0) this.changes?.push({ added: false, kind: 'user', domain, owner, key, timestamp, seq })
  }

  registerTtl(domain: TimeDomain, owner: number, key: StoreKey, timestamp: number): void {
    this.register('ttl', domain, owner, key, timestamp)
  }

  deleteTtl(domain: TimeDomain, owner: number, key: StoreKey, timestamp: number): void {
    const seq = this.ttl[domain].remove(owner, key, timestamp)
    if (seq >= 0) this.changes?.push({ added: false, kind: 'ttl', domain, owner, key, timestamp, seq })
  }

  private register(kind: 'user' | 'ttl', domain: TimeDomain, owner: number, key: StoreKey, timestamp: number): void {
    const seq = this.seq++
    if (!(kind === 'user' ? this.user : this.ttl)[domain].add(owner, key, timestamp, seq)) return
    this.changes?.push({ added: true, kind, domain, owner, key, timestamp, seq })
    // Only a timer earlier than the head the alarm was armed for can move the alarm (as Flink re-arms
    // only when the head gets earlier): the alarm fires for that head at the latest, and re-arms then.
    if (domain === 'processing' && timestamp < this.armedHead) {
      this.armedHead = timestamp
      this.onProcessingTimerAdded()
    }
  }

  /**
   * The earliest processing-time due time, for arming the wall-clock alarm: registrations after this
   * call tell `onProcessingTimerAdded` only when they are earlier.
   */
  nextProcessingDueToArm(): number {
    this.armedHead = this.nextDue('processing')
    return this.armedHead
  }

  /** Earliest due time of a domain, user or TTL; Infinity when none. */
  nextDue(domain: TimeDomain): number {
    return Math.min(this.user[domain].peekTime(), this.ttl[domain].peekTime())
  }

  /** Fires what is due at `now` in a domain: all due user timers first, then TTL timers. */
  advance(domain: TimeDomain, now: number): number {
    const user = this.user[domain]
    const ttl = this.ttl[domain]
    let fired = 0
    for (;;) {
      const u = user.pollDue(now)
      if (u !== undefined) {
        this.changes?.push({ added: false, kind: 'user', domain, owner: u.owner, key: u.key, timestamp: u.timestamp, seq: u.seq })
        this.targets.onUserTimer(u.owner, u.key, u.timestamp, domain)
        fired++
        continue
      }
      const t = ttl.pollDue(now)
      if (t === undefined) return fired
      this.changes?.push({ added: false, kind: 'ttl', domain, owner: t.owner, key: t.key, timestamp: t.timestamp, seq: t.seq })
      this.targets.onTtlTimer(t.owner, t.key, t.timestamp, domain, now)
      fired++
    }
  }

  userTimers(domain: TimeDomain, owner: number, key: StoreKey): number[] {
    return this.user[domain].list(owner, key).map((e) => e.timestamp)
  }

  userTimerCount(domain: TimeDomain, owner: number): number {
    return this.user[domain].countOwner(owner)
  }

  ttlTimerCount(domain: TimeDomain): number {
    return this.ttl[domain].size
  }

  /** Pending timers by kind and domain. */
  pending(): PendingTimers {
    return {
      user: { event: this.user.event.size, processing: this.user.processing.size },
      ttl: { event: this.ttl.event.size, processing: this.ttl.processing.size },
    }
  }

  /** Every pending timer, in firing order (`compareTimers`). */
  snapshot(userOwners: readonly string[], ttlOwners: readonly string[]): TimerRecord[] {
    const out: TimerRecord[] = []
    const add = (kind: 'user' | 'ttl', domain: TimeDomain, entries: readonly TimerEntry[], names: readonly string[]): void => {
      for (const e of entries) out.push({ kind, domain, timestamp: e.timestamp, seq: e.seq, owner: names[e.owner] as string, key: e.key })
    }
    for (const domain of ['event', 'processing'] as const) {
      add('user', domain, this.user[domain].entries(), userOwners)
      add('ttl', domain, this.ttl[domain].entries(), ttlOwners)
    }
    return out.sort(compareTimers)
  }

  /**
   * Puts back committed timers (owners matched by name), with their sequences: registration order is
   * kept. They are not changes. Records in firing order, as snapshots and restores give them, each land
   * at the bottom of the heap, with no sift.
   */
  restore(records: readonly TimerRecord[], userOwner: (name: string) => number, ttlOwner: (name: string) => number): void {
    for (const r of records) {
      const queue = (r.kind === 'user' ? this.user : this.ttl)[r.domain]
      queue.add(r.kind === 'user' ? userOwner(r.owner) : ttlOwner(r.owner), r.key, r.timestamp, r.seq)
      if (r.seq >= this.seq) this.seq = r.seq + 1
    }
  }
}

/**
 * Firing order within a domain, domains apart: event time first, then user timers before TTL timers,
 * then timestamp, then registration order (sequence numbers are unique, so nothing else is needed).
 */
export function compareTimers(a: TimerRecord, b: TimerRecord): number {
  if (a.domain !== b.domain) return a.domain === 'event' ? -1 : 1
  if (a.kind !== b.kind) return a.kind === 'user' ? -1 : 1
  return a.timestamp - b.timestamp || a.seq - b.seq
}
