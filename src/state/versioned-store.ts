import { PunctualError } from '../errors.js'
import type { StoreKey, VersionedKeyValueStore, VersionedRecord } from '../processor/api.js'
import { DURABLE } from './durable.js'
import type { DurableStore } from './durable.js'
import { PERSISTENT, PersistentKeyValueStore } from './persistent-store.js'
import type { PersistentCapability } from './persistent-store.js'

/** What `put` returns for a write older than the grace period (Kafka Streams returns Long.MIN_VALUE). */
export const PUT_RETURN_CODE_NOT_PUT = Number.MIN_SAFE_INTEGER
/** What `put` returns when the version put is the key's latest. */
export const PUT_RETURN_CODE_VALID_TO_UNDEFINED = -1

/** A key's versions as stored: [timestamp, value] pairs by timestamp ascending (value null: a tombstone). */
type Versions<V> = ReadonlyArray<readonly [number, V | null]>

/**
 * The store key of the largest timestamp put. A boolean: the keys of versioned tables are their key
 * ids (strings), and a store of your own may not use booleans (`put` refuses them).
 */
const OBSERVED_KEY = true

/**
 * A versioned key-value store (Kafka Streams' RocksDBVersionedStore, KIP-889): each key keeps its
 * versions in timestamp order; versions that stopped being valid more than the history retention
 * before the store's largest timestamp are dropped as the key is written, and no read can reach them
 * (the latest version is always kept). The history retention is the grace period for writes and the
 * horizon for reads. A key's versions are one entry of a `PersistentKeyValueStore`: on disk in a durable
 * run (a restart reads nothing up front, and state may outgrow memory), in memory otherwise; commits
 * write the keys that changed, with the largest timestamp as an entry of its own.
 */
export class PersistentVersionedKeyValueStore<K extends StoreKey, V> implements VersionedKeyValueStore<K, V> {
  private readonly entries: PersistentKeyValueStore<StoreKey, unknown>

  readonly [DURABLE]: DurableStore
  readonly [PERSISTENT]: PersistentCapability

  constructor(
    readonly name: string,
    readonly historyRetentionMs: number,
    cacheEntries = 10_000,
  ) {
    this.entries = new PersistentKeyValueStore<StoreKey, unknown>(name, cacheEntries)
    this[DURABLE] = this.entries[DURABLE]
    this[PERSISTENT] = this.entries[PERSISTENT]
  }

  /** The largest timestamp put (-1: none). */
  private get observed(): number {
    return (this.entries.get(OBSERVED_KEY) as number | undefined) ?? -1
  }

  put(key: K, value: V | null, timestamp: number): number {
    if (typeof key === 'boolean') throw new PunctualError('INVALID_ARGUMENT', `versioned store "${this.name}": keys may not be booleans, got ${String(key)}`)
    const observed = this.observed
    if (timestamp < observed - this.historyRetentionMs) return PUT_RETURN_CODE_NOT_PUT
    if (timestamp > observed) this.entries.put(OBSERVED_KEY, timestamp)
    // A new list each time: the one stored may be in a commit on its way to disk.
    const versions = [...((this.entries.get(key) as Versions<V> | undefined) ?? [])]
    let i = versions.length
    while (i > 0 && (versions[i - 1] as readonly [number, V | null])[0] > timestamp) i--
    if (i > 0 && (versions[i - 1] as readonly [number, V | null])[0] === timestamp) versions[i - 1] = [timestamp, value]
    else {
      versions.splice(i, 0, [timestamp, value])
      i++
    }
    // i is now the index after the version put.
    const validTo = i < versions.length ? (versions[i] as readonly [number, V | null])[0] : PUT_RETURN_CODE_VALID_TO_UNDEFINED
    this.entries.put(key, this.withoutExpired(versions))
    return validTo
  }

  delete(key: K, timestamp: number): VersionedRecord<V> | undefined {
    if (timestamp < this.observed - this.historyRetentionMs) return undefined
    const existing = this.get(key, timestamp)
    this.put(key, null, timestamp)
    return existing
  }

  get(key: K, asOfTimestamp?: number): VersionedRecord<V> | undefined {
    if (typeof key === 'boolean') return undefined
    const versions = this.entries.get(key) as Versions<V> | undefined
    if (versions === undefined || versions.length === 0) return undefined
    const last = versions.length - 1
    const [lastTs, lastValue] = versions[last] as readonly [number, V | null]
    if (asOfTimestamp === undefined) return lastValue === null ? undefined : { value: lastValue, timestamp: lastTs }
    if (asOfTimestamp < this.observed - this.historyRetentionMs) {
      // Beyond history only the latest version answers, when it is old enough.
      return lastValue !== null && lastTs <= asOfTimestamp ? { value: lastValue, timestamp: lastTs } : undefined
    }
    let i = last
    while (i >= 0 && (versions[i] as readonly [number, V | null])[0] > asOfTimestamp) i--
    if (i < 0) return undefined
    const [ts, v] = versions[i] as readonly [number, V | null]
    if (v === null) return undefined
    return i === last ? { value: v, timestamp: ts } : { value: v, timestamp: ts, validTo: (versions[i + 1] as readonly [number, V | null])[0] }
  }

  /** Number of keys with a version (tombstones included). */
  approximateNumEntries(): number {
    return Math.max(0, this.entries.approximateNumEntries() - (this.entries.get(OBSERVED_KEY) === undefined ? 0 : 1))
  }

  close(): void {
    this.entries.close()
  }

  /**
   * The versions a read can still reach: version n is valid until the next one's timestamp; once that is
   * at or before the horizon, reads (at the horizon or later) find the next one or a later one. The
   * latest is always kept.
   */
  private withoutExpired(versions: Array<readonly [number, V | null]>): Array<readonly [number, V | null]> {
    const horizon = this.observed - this.historyRetentionMs
    let n = 0
    while (n < versions.length - 1 && (versions[n + 1] as readonly [number, V | null])[0] <= horizon) n++
    return n === 0 ? versions : versions.slice(n)
  }
}
