import type { StoreKey } from '../processor/api.js'
import type { ChangeSet } from '../state/change-set.js'
import type { StoreDisk } from '../state/persistent-store.js'
import { forgetDurableRemovals, InFlightCommits } from '../state/in-flight-commits.js'

/**
 * An entry in memory. When it leaves, its value is let go (undefined) at once; the order array drops
 * the node itself lazily.
 */
interface Node<T> {
  readonly id: string
  value: T | undefined
}

/**
 * The entries of a join buffer by id, in id order (time first, so the order they leave in): the body of
 * a stream-table join's grace buffer and of a stream-stream join's outer-join store. Its store's change
 * log notes changes; this keeps the entries.
 *
 * In a durable run it lives on disk (`attach`): the committed entries are in the state directory by id.
 * After a durable commit, entries beyond `cacheEntries` leave memory, those with the largest ids first
 * (they leave the buffer last), save those changed since the last take. Every entry on disk and not in
 * memory then has an id at or above `boundary`; a scan that reaches it reads the next entries from disk
 * (half the cache's worth), and a lookup of an id at or above it reads the disk. Entries removed while
 * the disk may still hold them are `gone` until the removal is durable.
 */
export class TimeOrderedBuffer<T> {
  private readonly byId = new Map<string, Node<T>>()
  /** Entries in id order from `head` on; removed ones stay until passed. */
  private order: Array<Node<T>> = []
  private head = 0
  private sorted = true
  private disk: StoreDisk | undefined
  /** On disk: every entry on disk and not in memory has an id at or above this; undefined when none is. */
  private boundary: string | undefined
  /** On disk: ids removed while the disk may still hold them, with the change epoch of their removal. */
  private readonly gone = new Map<string, number>()
  /** On disk: commits that took changes and are not durable yet. */
  private readonly commits = new InFlightCommits(() => this.disk !== undefined, () => this.settle())

  constructor(
    /** The store's changes since the last take (undefined while it does not track them). */
    private readonly changes: () => ChangeSet<string> | undefined,
    /** An entry from its saved form, read from disk. */
    private readonly load: (id: string, saved: unknown) => T,
    /** How many entries memory keeps on disk, beyond those changed since the last durable commit. */
    private readonly cacheEntries: number,
  ) {}

  /** From now on, committed entries are on `disk` (a restart reads none of them up front). */
  attach(disk: StoreDisk): void {
    this.disk = disk
    for (const [key] of disk.entries('')) {
      if (typeof key === 'string') this.boundary = ''
      break
    }
  }

  /** The entry, read back from disk when memory lacks it (and the disk may hold it). */
  get(id: string): T | undefined {
    const node = this.byId.get(id)
    if (node !== undefined) return node.value
    if (this.boundary === undefined || id < this.boundary || this.gone.has(id)) return undefined
    const saved = (this.disk as StoreDisk).get(id)
    if (saved === undefined) return undefined
    const value = this.load(id, saved)
    this.insert({ id, value })
    return value
  }

  /** Whether memory holds the entry (the change log's view: every changed entry is in memory). */
  inMemory(id: string): T | undefined {
    return this.byId.get(id)?.value
  }

  /** Adds an entry (an id memory lacks: `get` it first when the disk may hold it). */
  add(id: string, value: T): void {
    this.insert({ id, value })
  }

  /** Loads a saved entry (restore without a disk). */
  restore(id: string, value: T): void {
    const before = this.byId.get(id)
    if (before !== undefined) before.value = undefined
    const node = { id, value }
    this.byId.set(id, node)
    this.order.push(node)
    this.sorted = false
  }

  delete(id: string): void {
    const node = this.byId.get(id)
    if (node === undefined) return
    node.value = undefined
    this.byId.delete(id)
    if (this.disk !== undefined) this.gone.set(id, this.changes()?.epoch ?? 0)
  }

  /**
   * Visits the entries in id order until `visit` returns false; `visit` may `delete` the entry it is
   * given. Reads entries on disk as the scan reaches them.
   */
  scan(visit: (id: string, value: T) => boolean): void {
    this.sort()
    let i = this.head
    /** The last entry visited: a refill re-sorts memory, and the scan goes on after it. */
    let last: string | undefined
    for (;;) {
      const order = this.order
      const node = order[i]
      if (node === undefined || (this.boundary !== undefined && node.id >= this.boundary)) {
        if (this.boundary === undefined) break
        this.refill()
        i = last === undefined ? this.head : this.after(last)
        continue
      }
      i++
      const value = node.value
      if (value === undefined) continue
      last = node.id
      if (!visit(node.id, value)) break
    }
    // Entries before the first live one are gone: step over them, and compact now and then.
    const order = this.order
    while (this.head < order.length && (order[this.head] as Node<T>).value === undefined) this.head++
    if (this.head > 1024 && this.head * 2 > order.length) {
      this.order = order.slice(this.head)
      this.head = 0
    }
  }

  /** Number of entries (on disk, those memory lacks are counted by reading their ids). */
  size(): number {
    let n = this.byId.size
    const disk = this.diskOnly()
    while (disk.next().done !== true) n++
    return n
  }

  /** Number of entries in memory (tests: the cache's bound). */
  entriesInMemory(): number {
    return this.byId.size
  }

  /** Every entry: memory's, then the disk's that memory lacks (saved forms: `save` converts memory's). */
  savedEntries(save: (value: T) => unknown): Array<[StoreKey, unknown]> {
    const out: Array<[StoreKey, unknown]> = []
    for (const node of this.byId.values()) out.push([node.id, save(node.value as T)])
    for (const entry of this.diskOnly()) out.push(entry)
    return out
  }

  /** The changes were taken for a commit. */
  taken(): void {
    this.commits.taken()
  }

  /** The changes last taken are durable: once none is in flight, removals are on disk and memory sheds entries. */
  committed(): void {
    this.commits.committed()
  }

  private *diskOnly(): Generator<[string, unknown]> {
    if (this.disk === undefined || this.boundary === undefined) return
    for (const [id, saved] of this.disk.entries(this.boundary)) {
      if (typeof id === 'string' && !this.byId.has(id) && !this.gone.has(id)) yield [id, saved]
    }
  }

  /** The index of the first entry whose id is above `id` (memory sorted). */
  private after(id: string): number {
    const order = this.order
    let lo = this.head
    let hi = order.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if ((order[mid] as Node<T>).id <= id) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  private insert(node: Node<T>): void {
    this.byId.set(node.id, node)
    const order = this.order
    let i = order.length
    if (this.sorted) while (i > this.head && (order[i - 1] as Node<T>).id > node.id) i--
    if (i === order.length) order.push(node)
    else order.splice(i, 0, node)
  }

  private sort(): void {
    if (this.sorted) return
    this.order = this.order.slice(this.head).filter((n) => n.value !== undefined)
    this.order.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    this.head = 0
    this.sorted = true
  }

  /** Reads the next entries on disk from the boundary into memory (none: the disk holds no other). */
  private refill(): void {
    const disk = this.disk as StoreDisk
    const want = Math.max(1, Math.ceil(this.cacheEntries / 2))
    let read = 0
    let next: string | undefined
    for (const [id, saved] of disk.entries(this.boundary)) {
      if (typeof id !== 'string') continue
      if (read === want) {
        next = id
        break
      }
      if (this.byId.has(id) || this.gone.has(id)) continue
      const node = { id, value: this.load(id, saved) }
      this.byId.set(id, node)
      this.order.push(node)
      read++
    }
    this.boundary = next
    this.sorted = false
    this.sort()
  }

  /**
   * Once no commit is in flight: removals taken by a commit are on disk, and entries beyond
   * `cacheEntries` leave memory, the largest ids first, save those changed since the take.
   */
  private settle(): void {
    const changes = this.changes()
    if (changes === undefined) return
    forgetDurableRemovals(this.gone, changes.epoch)
    let excess = this.byId.size - this.cacheEntries
    if (excess <= 0) return
    this.sort()
    const order = this.order
    for (let i = order.length - 1; i >= this.head && excess > 0; i--) {
      const node = order[i] as Node<T>
      if (node.value === undefined || changes.has(node.id)) continue
      node.value = undefined
      this.byId.delete(node.id)
      if (this.boundary === undefined || node.id < this.boundary) this.boundary = node.id
      excess--
    }
    // The nodes that left go now (still in order).
    this.order = order.slice(this.head).filter((n) => n.value !== undefined)
    this.head = 0
  }
}
