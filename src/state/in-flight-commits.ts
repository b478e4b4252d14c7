/**
 * The commits of a store on disk that took its changes and are not durable yet. A store trims its
 * memory only once none is in flight: the disk then holds every change but those since the last take,
 * so an entry memory lets go of can be read back as it was.
 */
export class InFlightCommits {
  private count = 0

  constructor(
    /** Whether the store is on disk now (it is attached after it is built). */
    private readonly onDisk: () => boolean,
    /** Called once no commit is in flight. */
    private readonly settle: () => void,
  ) {}

  /** A commit took the store's changes (`StoreContents.taken`). */
  taken(): void {
    if (this.onDisk()) this.count++
  }

  /** The oldest commit in flight is durable (`StoreContents.committed`). */
  committed(): void {
    if (!this.onDisk()) return
    this.count = Math.max(0, this.count - 1)
    if (this.count === 0) this.settle()
  }
}

/**
 * The ids of entries that leave memory once no commit is in flight: the oldest (a map's order) beyond
 * `cacheEntries`, save those `stays` keeps (changed since the last take).
 */
export function leavingMemory<V>(entries: ReadonlyMap<string, V>, cacheEntries: number, stays: (id: string, entry: V) => boolean): string[] {
  let excess = entries.size - cacheEntries
  const leaving: string[] = []
  if (excess <= 0) return leaving
  for (const [id, entry] of entries) {
    if (stays(id, entry)) continue
    leaving.push(id)
    if (--excess === 0) break
  }
  return leaving
}

/** Forgets the removals (id to the change epoch it was noted in) that a durable commit took: the disk no longer holds them. */
export function forgetDurableRemovals(gone: Map<string, number>, epoch: number): void {
  for (const [id, noted] of gone) if (noted < epoch) gone.delete(id)
}
