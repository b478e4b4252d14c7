import type { StoreKey } from '../processor/api.js'

/**
 * The keys a store changed since the last commit, each with whether it held a value at that commit (so
 * is on disk). A key created and removed between two commits is then neither written nor deleted: with
 * windows and suppression buffers that come and go between commits, those deletes were most of the
 * commit's lmdb work.
 */
export class ChangeSet<K extends StoreKey> {
  private readonly keys = new Map<K, boolean>()
  private generation = 1

  /**
   * Changes with each take or clear: an entry that stores the epoch it was noted in can skip the map
   * lookup on its next change before the commit.
   */
  get epoch(): number {
    return this.generation
  }

  has(key: K): boolean {
    return this.keys.has(key)
  }

  /** Call before the first change of `key` since the last commit, with whether it holds a value now. */
  first(key: K, exists: boolean): void {
    this.keys.set(key, exists)
  }

  get size(): number {
    return this.keys.size
  }

  /**
   * The changes as [key, value now], undefined meaning deleted (only for keys that were on disk), and
   * forgets them.
   */
  take(valueOf: (key: K) => unknown): Array<[StoreKey, unknown]> {
    if (this.keys.size === 0) {
      // A new epoch all the same: a store that tracks its own changes (`StoreContents.takeTracked`) notes them by epoch.
      this.generation++
      return []
    }
    const out: Array<[StoreKey, unknown]> = []
    for (const [key, onDisk] of this.keys) {
      const value = valueOf(key)
      if (value !== undefined || onDisk) out.push([key, value])
    }
    this.keys.clear()
    this.generation++
    return out
  }

  clear(): void {
    this.keys.clear()
    this.generation++
  }
}

/**
 * The changes with one entry per key, the last (a change log's contract: a commit may write its entries
 * in any order), for a store that tracks its changes itself and may note a key twice (a window cell
 * removed and started afresh before the commit: its removal first).
 */
export function lastPerKey(changes: Array<[StoreKey, unknown]>): Array<[StoreKey, unknown]> {
  const seen = new Set<StoreKey>()
  const out: Array<[StoreKey, unknown]> = []
  for (let i = changes.length - 1; i >= 0; i--) {
    const change = changes[i] as [StoreKey, unknown]
    if (seen.has(change[0])) continue
    seen.add(change[0])
    out.push(change)
  }
  return out.reverse()
}
