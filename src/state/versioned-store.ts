import type { StoreKey, VersionedKeyValueStore, VersionedRecord } from '../processor/api.js'
import { ChangeLog } from './change-log.js'
import { DURABLE } from './durable.js'
import type { DurableStore } from './durable.js'

/** What `put` returns for a write older than the grace period (Kafka Streams returns Long.MIN_VALUE). */
export const PUT_RETURN_CODE_NOT_PUT = Number.MIN_SAFE_INTEGER
/** What `put` returns when the version put is the key's latest. */
export const PUT_RETURN_CODE_VALID_TO_UNDEFINED = -1

/** A key's versions: timestamps ascending, values beside them (null: a tombstone). */
interface Versions<V> {
  ts: number[]
  values: Array<V | null>
}

/**
 * A versioned key-value store held in memory, committed like every task store (a restart loads it
 * back whole). Each key keeps its versions in timestamp order; versions that stopped being valid more
 * than the history retention before the store's largest timestamp are dropped as the key is written,
 * and no read can reach them (the latest version is always kept). Follows Kafka Streams'
 * RocksDBVersionedStore: the history retention is the grace period for writes and the horizon for reads.
 */
export class InMemoryVersionedKeyValueStore<K extends StoreKey, V> implements VersionedKeyValueStore<K, V> {
  private readonly byKey = new Map<K, Versions<V>>()
  /**
   * The largest timestamp put. It is always some key's latest version (which is never dropped), so a
   * restore finds it again: no field of its own in the change log, whose keys are all the user's.
   */
  private observed = -1
  private readonly log = new ChangeLog<K>({
    saved: (k) => this.saved(k),
    savedEntries: () => [...this.byKey.keys()].map((k) => [k, this.saved(k)]),
    load: (k, saved) => {
      const list = saved as Array<[number, V | null]>
      this.byKey.set(k, { ts: list.map((e) => e[0]), values: list.map((e) => e[1]) })
      const latest = list[list.length - 1]?.[0] ?? -1
      if (latest > this.observed) this.observed = latest
    },
  })

  readonly [DURABLE]: DurableStore = this.log

  constructor(
    readonly name: string,
    readonly historyRetentionMs: number,
  ) {}

  put(key: K, value: V | null, timestamp: number): number {
    if (timestamp < this.observed - this.historyRetentionMs) return PUT_RETURN_CODE_NOT_PUT
    if (timestamp > this.observed) this.observed = timestamp
    const c = this.log.changes
    if (c !== undefined && !c.has(key)) c.first(key, this.byKey.has(key))
    let versions = this.byKey.get(key)
    if (versions === undefined) this.byKey.set(key, (versions = { ts: [], values: [] }))
    const { ts, values } = versions
    let i = ts.length
    while (i > 0 && (ts[i - 1] as number) > timestamp) i--
    if (i > 0 && ts[i - 1] === timestamp) values[i - 1] = value
    else {
      ts.splice(i, 0, timestamp)
      values.splice(i, 0, value)
      i++
    }
    // i is now the index after the version put.
    const validTo = i < ts.length ? (ts[i] as number) : PUT_RETURN_CODE_VALID_TO_UNDEFINED
    this.dropExpired(versions)
    return validTo
  }

  delete(key: K, timestamp: number): VersionedRecord<V> | null {
    if (timestamp < this.observed - this.historyRetentionMs) return null
    const existing = this.get(key, timestamp)
    this.put(key, null, timestamp)
    return existing
  }

  get(key: K, asOfTimestamp?: number): VersionedRecord<V> | null {
    const versions = this.byKey.get(key)
    if (versions === undefined) return null
    const { ts, values } = versions
    const last = ts.length - 1
    if (asOfTimestamp === undefined) {
      const v = values[last] as V | null
      return v === null ? null : { value: v, timestamp: ts[last] as number }
    }
    if (asOfTimestamp < this.observed - this.historyRetentionMs) {
      // Beyond history only the latest version answers, when it is old enough.
      const v = values[last] as V | null
      return v !== null && (ts[last] as number) <= asOfTimestamp ? { value: v, timestamp: ts[last] as number } : null
    }
    let i = last
    while (i >= 0 && (ts[i] as number) > asOfTimestamp) i--
    if (i < 0) return null
    const v = values[i] as V | null
    if (v === null) return null
    return i === last ? { value: v, timestamp: ts[i] as number } : { value: v, timestamp: ts[i] as number, validTo: ts[i + 1] as number }
  }

  /** Number of keys with a version (tombstones included). */
  approximateNumEntries(): number {
    return this.byKey.size
  }

  close(): void {
    this.byKey.clear()
  }

  /** Drops versions no read can reach any more: valid only until before the history horizon. */
  private dropExpired(versions: Versions<V>): void {
    const horizon = this.observed - this.historyRetentionMs
    let n = 0
    // Version n is valid until the next one's timestamp: once that is at or before the horizon, reads
    // (at the horizon or later) find the next one or a later one. The latest is always kept.
    while (n < versions.ts.length - 1 && (versions.ts[n + 1] as number) <= horizon) n++
    if (n > 0) {
      versions.ts.splice(0, n)
      versions.values.splice(0, n)
    }
  }

  private saved(key: K): Array<[number, V | null]> | undefined {
    const versions = this.byKey.get(key)
    if (versions === undefined) return undefined
    return versions.ts.map((t, i) => [t, versions.values[i] as V | null])
  }
}
