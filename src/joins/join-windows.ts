import { invalidConfig } from '../errors.js'
import type { Serde } from '../processor/serdes.js'
import { ms } from '../windows/windows.js'

/**
 * The window of a stream-stream join (Kafka Streams' `JoinWindows`): a left record at time t joins the
 * right records of its key with timestamps in [t - before, t + after]; a right record at t' joins the
 * left records in [t' - after, t' + before]. The grace period says how long an unmatched record of a
 * left or outer join waits for a partner before it is emitted with none (SEMANTICS 8). Times in ms.
 */
export class JoinWindows {
  private constructor(
    /** How much earlier than a left record a right record may be. */
    readonly beforeMs: number,
    /** How much later than a left record a right record may be. */
    readonly afterMs: number,
    /** How long after its window an unmatched record of a left or outer join waits for a partner. */
    readonly graceMs: number,
  ) {}

  /** Records join when their timestamps differ by at most `timeDifferenceMs`; unmatched ones wait `graceMs` more. */
  static ofTimeDifferenceAndGrace(timeDifferenceMs: number, graceMs: number): JoinWindows {
    const d = ms('JoinWindows.ofTimeDifferenceAndGrace timeDifference', timeDifferenceMs, 0)
    return new JoinWindows(d, d, ms('JoinWindows.ofTimeDifferenceAndGrace grace', graceMs, 0))
  }

  /** Records join when their timestamps differ by at most `timeDifferenceMs`; no grace period. */
  static ofTimeDifferenceWithNoGrace(timeDifferenceMs: number): JoinWindows {
    const d = ms('JoinWindows.ofTimeDifferenceWithNoGrace timeDifference', timeDifferenceMs, 0)
    return new JoinWindows(d, d, 0)
  }

  /** Sets how much earlier a right record may be (negative: it must be that much later); before + after >= 0. */
  before(timeDifferenceMs: number): JoinWindows {
    const before = ms('JoinWindows.before', timeDifferenceMs, -Number.MAX_SAFE_INTEGER)
    if (before + this.afterMs < 0) throw invalidConfig('JoinWindows.before', `before ${before} + after ${this.afterMs} must not be negative`)
    return new JoinWindows(before, this.afterMs, this.graceMs)
  }

  /** Sets how much later a right record may be (negative: it must be that much earlier); before + after >= 0. */
  after(timeDifferenceMs: number): JoinWindows {
    const after = ms('JoinWindows.after', timeDifferenceMs, -Number.MAX_SAFE_INTEGER)
    if (this.beforeMs + after < 0) throw invalidConfig('JoinWindows.after', `before ${this.beforeMs} + after ${after} must not be negative`)
    return new JoinWindows(this.beforeMs, after, this.graceMs)
  }

  /** before + after. */
  size(): number {
    return this.beforeMs + this.afterMs
  }

  /** How long each side's store keeps a record, against that side's largest timestamp: size + grace. */
  retentionMs(): number {
    return this.size() + this.graceMs
  }
}

/**
 * Combines the values of a join result (Kafka Streams' `ValueJoinerWithKey`, key last so that a
 * two-argument function is a `ValueJoiner`). In left and outer joins, a missing partner is null.
 */
export type ValueJoiner<V1, V2, VR, K = unknown> = (value1: V1, value2: V2, key: K) => VR

/** Names and serdes of a stream-stream join (Kafka Streams' `StreamJoined`). */
export interface StreamJoined<K = unknown, V1 = unknown, V2 = unknown> {
  /** Base name of the join's processors (`<name>-this-join`, `<name>-other-join`, ...). */
  readonly name?: string
  /** Base name of its stores (`<storeName>-this-join-store`, ...). */
  readonly storeName?: string
  /**
   * Serde of the keys on the repartition topic of a re-keyed stream. Default: that stream's key serde,
   * else the other stream's (both sides must serialize a key alike to land in the same partition).
   */
  readonly keySerde?: Serde<K>
  /** Serde of this stream's values on its repartition topic. */
  readonly valueSerde?: Serde<V1>
  /** Serde of the other stream's values on its repartition topic. */
  readonly otherValueSerde?: Serde<V2>
  /**
   * Where the join's two window stores live, as `Materialized.storeType` says for an aggregation (Kafka
   * Streams sets it with `StreamJoined.withDslStoreSuppliers`): `'persistent'` is on disk in a durable
   * run (the records within the join's retention may outgrow memory); `'inMemory'` is always in memory.
   * @default 'persistent'
   */
  readonly storeType?: 'persistent' | 'inMemory'
  /**
   * A window store on disk: how many keys memory keeps after they were read or written, besides those
   * changed since the last commit. Lower it when a key holds many records and the heap is small.
   * @default 10 000
   */
  readonly cacheEntries?: number
}

/** Options of a stream-table join (Kafka Streams' `Joined`). */
export interface Joined<K = unknown, V = unknown> {
  /** Name of the join's processor (and base of its repartition topic). */
  readonly name?: string
  /**
   * Serde of the keys on the repartition topic of a re-keyed stream. Default: the stream's key serde,
   * else the table's, so the stream's records land in the partitions of the table's keys.
   */
  readonly keySerde?: Serde<K>
  /** Serde of the stream's values on its repartition topic. */
  readonly valueSerde?: Serde<V>
  /**
   * How long stream records wait for late table updates before they are joined (Kafka Streams'
   * `Joined.withGracePeriod`, KIP-923): a record at t is joined once the stream's largest timestamp
   * reaches t + grace, with the table's version valid at t. Needs a versioned table whose history
   * retention is at least the grace period.
   */
  readonly gracePeriodMs?: number
}

/** `StreamJoined` with Kafka Streams' chainable setters. */
export interface StreamJoinedBuilder<K, V1, V2> extends StreamJoined<K, V1, V2> {
  /** A copy with the join's processors named after `name`. */
  withName(name: string): StreamJoinedBuilder<K, V1, V2>
  /** A copy with the join's stores named after `storeName`. */
  withStoreName(storeName: string): StreamJoinedBuilder<K, V1, V2>
  /** A copy with keys written by `keySerde` on a repartition topic. */
  withKeySerde<K2>(keySerde: Serde<K2>): StreamJoinedBuilder<K2, V1, V2>
  /** A copy with this stream's values written by `valueSerde` on its repartition topic. */
  withValueSerde<W>(valueSerde: Serde<W>): StreamJoinedBuilder<K, W, V2>
  /** A copy with the other stream's values written by `otherValueSerde` on its repartition topic. */
  withOtherValueSerde<W>(otherValueSerde: Serde<W>): StreamJoinedBuilder<K, V1, W>
  /** A copy with the window stores where `storeType` says (see `StreamJoined.storeType`). */
  withStoreType(storeType: 'persistent' | 'inMemory'): StreamJoinedBuilder<K, V1, V2>
  /** A copy whose window stores on disk keep `cacheEntries` keys in memory (see `StreamJoined.cacheEntries`). */
  withCacheEntries(cacheEntries: number): StreamJoinedBuilder<K, V1, V2>
}

/** `Joined` with Kafka Streams' chainable setters. */
export interface JoinedBuilder<K, V> extends Joined<K, V> {
  /** A copy that names the join's processor `name`. */
  withName(name: string): JoinedBuilder<K, V>
  /** A copy with keys written by `keySerde` on the stream's repartition topic. */
  withKeySerde<K2>(keySerde: Serde<K2>): JoinedBuilder<K2, V>
  /** A copy with the stream's values written by `valueSerde` on its repartition topic. */
  withValueSerde<W>(valueSerde: Serde<W>): JoinedBuilder<K, W>
  /** Kafka Streams' `withGracePeriod(Duration)`, in milliseconds: see `Joined.gracePeriodMs`. */
  withGracePeriod(gracePeriodMs: number): JoinedBuilder<K, V>
}

/** An immutable option object whose `with...` methods (not enumerable) return a copy with one field set. */
function optionBuilder<B>(fields: object, setters: Readonly<Record<string, string>>): B {
  const out = { ...fields }
  for (const [method, field] of Object.entries(setters)) {
    Object.defineProperty(out, method, { value: (value: unknown) => optionBuilder<B>({ ...fields, [field]: value }, setters), enumerable: false })
  }
  return out as B
}

const STREAM_JOINED = { withName: 'name', withStoreName: 'storeName', withKeySerde: 'keySerde', withValueSerde: 'valueSerde', withOtherValueSerde: 'otherValueSerde', withStoreType: 'storeType', withCacheEntries: 'cacheEntries' }
const JOINED = { withName: 'name', withKeySerde: 'keySerde', withValueSerde: 'valueSerde', withGracePeriod: 'gracePeriodMs' }

/** Kafka Streams' `StreamJoined` factories (a plain `StreamJoined` object says the same). */
export const StreamJoined = {
  /** The serdes of the key, this stream's values and the other stream's values (for repartition topics). */
  with<K, V1, V2>(keySerde: Serde<K> | undefined, valueSerde: Serde<V1> | undefined, otherValueSerde: Serde<V2> | undefined): StreamJoinedBuilder<K, V1, V2> {
    const fields = { ...(keySerde === undefined ? {} : { keySerde }), ...(valueSerde === undefined ? {} : { valueSerde }), ...(otherValueSerde === undefined ? {} : { otherValueSerde }) }
    return optionBuilder<StreamJoinedBuilder<K, V1, V2>>(fields, STREAM_JOINED)
  },
  /**
   * Names the join's stores (`<storeName>-this-join-store`, ...), and so their changelog topics, as Kafka
   * Streams' `StreamJoined.as(storeName)` does; `withName` names the processors.
   */
  as<K = never, V1 = never, V2 = never>(storeName: string): StreamJoinedBuilder<K, V1, V2> {
    return optionBuilder<StreamJoinedBuilder<K, V1, V2>>({ storeName }, STREAM_JOINED)
  },
} as const

/** Kafka Streams' `Joined` factories (a plain `Joined` object says the same). */
export const Joined = {
  /** The serdes of the key and the stream's values (for a re-keyed stream's repartition topic). */
  with<K, V>(keySerde: Serde<K> | undefined, valueSerde: Serde<V> | undefined): JoinedBuilder<K, V> {
    return optionBuilder<JoinedBuilder<K, V>>({ ...(keySerde === undefined ? {} : { keySerde }), ...(valueSerde === undefined ? {} : { valueSerde }) }, JOINED)
  },
  /** Names the join's processor. */
  as<K = never, V = never>(name: string): JoinedBuilder<K, V> {
    return optionBuilder<JoinedBuilder<K, V>>({ name }, JOINED)
  },
} as const
