/**
 * A bounded cache of entries read from disk, first in, first out: each new key takes the ring slot of
 * the oldest, which leaves the cache. A key deleted and cached again holds two slots, and leaves when the
 * older comes round: it is a cache, so leaving early costs a read, never a wrong value.
 *
 * Not a `Map` evicting its first key (`keys().next()`): V8 leaves a hole where a `Map` entry was deleted
 * and a new iterator walks every hole before the first live entry, so with the oldest evicted on each
 * insert that lookup costs as many steps as entries were evicted since the table last grew (5.4 s per
 * million inserts at 10,000 entries on the benchmark machine, against milliseconds with the ring).
 */
export class ReadCache<K, V> {
  private readonly entries = new Map<K, V>()
  private readonly ring: K[] = []
  private next = 0

  constructor(private readonly capacity: number) {}

  get(key: K): V | undefined {
    return this.entries.get(key)
  }

  set(key: K, value: V): void {
    if (this.capacity === 0) return
    if (this.entries.has(key)) {
      this.entries.set(key, value)
      return
    }
    if (this.ring.length < this.capacity) this.ring.push(key)
    else {
      this.entries.delete(this.ring[this.next] as K)
      this.ring[this.next] = key
      this.next = (this.next + 1) % this.capacity
    }
    this.entries.set(key, value)
  }

  delete(key: K): void {
    this.entries.delete(key)
  }

  get size(): number {
    return this.entries.size
  }

  clear(): void {
    this.entries.clear()
    this.ring.length = 0
    this.next = 0
  }
}
