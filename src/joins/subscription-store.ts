import { ChangeLog } from '../state/change-log.js'
import { DEFAULT_CACHE_ENTRIES, DURABLE } from '../state/stores.js'
import type { DurableStore } from '../state/stores.js'
import { PERSISTENT } from '../state/persistent-store.js'
import { forgetDurableRemovals, InFlightCommits, leavingMemory } from '../state/in-flight-commits.js'
import type { PersistentCapability, StoreDisk } from '../state/persistent-store.js'

/** A stored subscription: what answers to it need, and when it came. */
export interface Subscriber<K> {
  readonly hash: Uint8Array | null
  readonly primaryKey: K
  readonly primaryPartition: number
  readonly ts: number
}

/** A subscriber's store key: the foreign key id's length, a colon, the foreign key id, the primary key id. */
function subscriptionId(fkId: string, pkId: string): string {
  return `${fkId.length}:${fkId}${pkId}`
}

/** A foreign key's subscribers in memory: by primary key id, and those ids in order. */
interface ForeignKeyEntry<K> {
  readonly subscribers: Map<string, Subscriber<K>>
  readonly order: string[]
  /** The change epoch of its last change (on disk: a key changed since the last take stays in memory). */
  epoch: number
}

/**
 * The subscriptions of a foreign-key join, next to the right table (Kafka Streams' subscription store):
 * by foreign key, each key's subscribers in the order of their primary keys' bytes (the order Kafka
 * Streams' prefix scan answers in). A task store: commits write what changed.
 *
 * In a durable run it lives on disk (`attach`), one entry per subscription, so that a foreign key's
 * subscribers are one range of the disk: memory holds the foreign keys changed since the last durable
 * commit and up to `cacheEntries` others, and a foreign key memory lacks is read back whole (every
 * subscriber of it) when a subscription or an update of the right table names it.
 */
export class SubscriptionStore<K> {
  private readonly byForeignKey = new Map<string, ForeignKeyEntry<K>>()
  /** On disk: the committed subscriptions. */
  private disk: StoreDisk | undefined
  /** On disk: whether it may hold a foreign key memory does not (it held some when attached, or one left memory). */
  private diskHoldsOthers = false
  /** On disk: foreign keys whose last subscriber left while the disk may still hold them, with the change epoch of that. */
  private readonly gone = new Map<string, number>()
  /** On disk: commits that took changes and are not durable yet. */
  private readonly commits = new InFlightCommits(() => this.disk !== undefined, () => this.settle())
  private readonly log = new ChangeLog<string>({
    saved: (id) => {
      const [fkId, pkId] = parseId(id)
      return this.byForeignKey.get(fkId)?.subscribers.get(pkId)
    },
    savedEntries: () => {
      const out: Array<[string, unknown]> = []
      for (const [fkId, { subscribers }] of this.byForeignKey) for (const [pkId, s] of subscribers) out.push([subscriptionId(fkId, pkId), s])
      if (this.disk !== undefined && this.diskHoldsOthers) {
        for (const [id, saved] of this.disk.entries('')) {
          if (typeof id !== 'string') continue
          const fkId = parseId(id)[0]
          if (!this.byForeignKey.has(fkId) && !this.gone.has(fkId)) out.push([id, saved])
        }
      }
      return out
    },
    load: (id, saved) => {
      const [fkId, pkId] = parseId(id)
      this.set(fkId, pkId, saved as Subscriber<K>)
    },
    taken: () => this.commits.taken(),
    committed: () => this.commits.committed(),
  })

  readonly [DURABLE]: DurableStore = this.log

  constructor(
    readonly name: string,
    /** On disk: how many foreign keys memory keeps beyond those changed since the last durable commit. */
    private readonly cacheEntries = DEFAULT_CACHE_ENTRIES,
  ) {}

  readonly [PERSISTENT]: PersistentCapability = {
    attach: (disk) => {
      this.disk = disk
      for (const [key] of disk.entries('')) {
        this.diskHoldsOthers = typeof key === 'string'
        break
      }
    },
  }

  get(fkId: string, pkId: string): Subscriber<K> | undefined {
    return this.entryOf(fkId)?.subscribers.get(pkId)
  }

  put(fkId: string, pkId: string, subscriber: Subscriber<K>): void {
    this.noteChange(fkId, pkId)
    this.set(fkId, pkId, subscriber)
  }

  delete(fkId: string, pkId: string): void {
    const entry = this.entryOf(fkId)
    if (entry === undefined || !entry.subscribers.has(pkId)) return
    this.noteChange(fkId, pkId)
    entry.epoch = this.log.changes?.epoch ?? 0
    entry.subscribers.delete(pkId)
    entry.order.splice(lowerBound(entry.order, pkId), 1)
    if (entry.subscribers.size === 0) {
      this.byForeignKey.delete(fkId)
      if (this.disk !== undefined) this.gone.set(fkId, this.log.changes?.epoch ?? 0)
    }
  }

  /** The subscribers of a foreign key, in primary key order. */
  *subscribers(fkId: string): IterableIterator<Subscriber<K>> {
    const entry = this.entryOf(fkId)
    if (entry === undefined) return
    // Answers go to the response topic: nothing changes the subscriptions while they are read.
    for (const pkId of entry.order) yield entry.subscribers.get(pkId) as Subscriber<K>
  }

  /** The subscriptions in memory, or on disk when it holds more (approximate: those changed since the commit may count twice). */
  approximateNumEntries(): number {
    let n = 0
    for (const e of this.byForeignKey.values()) n += e.subscribers.size
    return this.disk !== undefined && this.diskHoldsOthers ? Math.max(n, this.disk.count()) : n
  }

  /** Number of foreign keys in memory (tests: the cache's bound). */
  foreignKeysInMemory(): number {
    return this.byForeignKey.size
  }

  close(): void {}

  /** A foreign key's subscribers, read back whole from disk when memory lacks them. */
  private entryOf(fkId: string): ForeignKeyEntry<K> | undefined {
    const inMemory = this.byForeignKey.get(fkId)
    if (inMemory !== undefined || !this.diskHoldsOthers || this.gone.has(fkId)) return inMemory
    const prefix = `${fkId.length}:${fkId}`
    let entry: ForeignKeyEntry<K> | undefined
    for (const [id, saved] of (this.disk as StoreDisk).entries(prefix)) {
      if (typeof id !== 'string' || !id.startsWith(prefix)) break
      entry ??= { subscribers: new Map(), order: [], epoch: 0 }
      const pkId = id.slice(prefix.length)
      entry.subscribers.set(pkId, saved as Subscriber<K>)
      // The disk's order is the primary key ids' order.
      entry.order.push(pkId)
    }
    if (entry !== undefined) this.byForeignKey.set(fkId, entry)
    return entry
  }

  private noteChange(fkId: string, pkId: string): void {
    const c = this.log.changes
    if (c === undefined) return
    const id = subscriptionId(fkId, pkId)
    if (!c.has(id)) c.first(id, this.get(fkId, pkId) !== undefined)
  }

  private set(fkId: string, pkId: string, subscriber: Subscriber<K>): void {
    let entry = this.entryOf(fkId)
    if (entry === undefined) {
      entry = { subscribers: new Map(), order: [], epoch: 0 }
      this.byForeignKey.set(fkId, entry)
    }
    entry.epoch = this.log.changes?.epoch ?? 0
    if (!entry.subscribers.has(pkId)) entry.order.splice(lowerBound(entry.order, pkId), 0, pkId)
    entry.subscribers.set(pkId, subscriber)
  }

  /**
   * On disk, once no commit is in flight: removals taken by a commit are on disk, and foreign keys
   * beyond `cacheEntries` leave memory, oldest first, save those changed since the take.
   */
  private settle(): void {
    const changes = this.log.changes
    if (changes === undefined) return
    forgetDurableRemovals(this.gone, changes.epoch)
    const leaving = leavingMemory(this.byForeignKey, this.cacheEntries, (_fkId, entry) => entry.epoch === changes.epoch)
    for (const fkId of leaving) this.byForeignKey.delete(fkId)
    if (leaving.length > 0) this.diskHoldsOthers = true
  }
}

function parseId(id: string): [fkId: string, pkId: string] {
  const colon = id.indexOf(':')
  const length = Number(id.slice(0, colon))
  return [id.slice(colon + 1, colon + 1 + length), id.slice(colon + 1 + length)]
}

/** The first index whose id is not below `id` (ids compare as their bytes: latin1 key ids). */
function lowerBound(ids: readonly string[], id: string): number {
  let lo = 0
  let hi = ids.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if ((ids[mid] as string) < id) lo = mid + 1
    else hi = mid
  }
  return lo
}
