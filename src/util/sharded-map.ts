import { HASH_SEED, fmix32, mixKey } from './hash.js'

/** Keys a `ShardedMap` can hash (a store's keys). */
export type ShardableKey = string | number | bigint | boolean

/** Past this many entries the map splits into shards. */
const SPLIT_AT = 1 << 16
/** 256 shards: at a million keys, a shard's growth copies about 4,000 entries. */
const SHARD_BITS = 8

/**
 * A Map that becomes 256 Maps, chosen by a hash of the key, once it holds more than 65,536 entries.
 *
 * A JavaScript Map grows by copying every entry into a table twice as large, in one go. At a million
 * keys that holds the event loop for about 150 ms on a 2-core VM (most of it the first writes to the new
 * table's memory), delaying wall-clock punctuations and timers by as much. A shard grows alone, with a
 * 256th of the entries, and the shards reach their sizes at different moments. Below the split a key
 * costs nothing more than a Map lookup; above it, a hash of the key too.
 *
 * Iteration visits every entry once; after the split, in no particular order.
 */
export class ShardedMap<K extends ShardableKey, V> implements Iterable<[K, V]> {
  private single: Map<K, V> | undefined = new Map()
  private shards: Array<Map<K, V>> | undefined

  get size(): number {
    const single = this.single
    if (single !== undefined) return single.size
    let n = 0
    for (const shard of this.shards as Array<Map<K, V>>) n += shard.size
    return n
  }

  get(key: K): V | undefined {
    const single = this.single
    return single !== undefined ? single.get(key) : this.shard(key).get(key)
  }

  has(key: K): boolean {
    const single = this.single
    return single !== undefined ? single.has(key) : this.shard(key).has(key)
  }

  set(key: K, value: V): this {
    const single = this.single
    if (single === undefined) this.shard(key).set(key, value)
    else if (single.set(key, value).size > SPLIT_AT) this.split(single)
    return this
  }

  delete(key: K): boolean {
    const single = this.single
    return single !== undefined ? single.delete(key) : this.shard(key).delete(key)
  }

  clear(): void {
    this.single = new Map()
    this.shards = undefined
    this.lastKey = this.lastShard = undefined
  }

  *keys(): IterableIterator<K> {
    if (this.single !== undefined) yield* this.single.keys()
    else for (const shard of this.shards as Array<Map<K, V>>) yield* shard.keys()
  }

  *[Symbol.iterator](): IterableIterator<[K, V]> {
    if (this.single !== undefined) yield* this.single
    else for (const shard of this.shards as Array<Map<K, V>>) yield* shard
  }

  /** The shard of the last key asked for: a record's key is usually read, then written. */
  private lastKey: K | undefined
  private lastShard: Map<K, V> | undefined

  private shard(key: K): Map<K, V> {
    if (key === this.lastKey) return this.lastShard as Map<K, V>
    const shard = (this.shards as Array<Map<K, V>>)[keyHash(key) >>> (32 - SHARD_BITS)] as Map<K, V>
    this.lastKey = key
    this.lastShard = shard
    return shard
  }

  private split(single: Map<K, V>): void {
    this.shards = Array.from({ length: 1 << SHARD_BITS }, () => new Map<K, V>())
    this.single = undefined
    for (const [k, v] of single) this.shard(k).set(k, v)
  }
}

/** A hash of a key whose top bits spread well. */
function keyHash(key: ShardableKey): number {
  return fmix32(mixKey(HASH_SEED, key))
}
