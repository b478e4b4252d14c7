import type { SlotAccess } from './indexed-heap.js'

/**
 * A binary heap whose elements store their slot through `slot`, so the same elements can be in two heaps
 * at once (oldest-first and newest-first). Used where both ends are needed, such as a buffer that
 * evicts its oldest entries and spills its newest.
 */
export class SlottedHeap<T> {
  private readonly items: T[] = []

  constructor(
    private readonly before: (a: T, b: T) => boolean,
    private readonly slot: SlotAccess<T>,
  ) {}

  get size(): number {
    return this.items.length
  }

  peek(): T | undefined {
    return this.items[0]
  }

  add(item: T): void {
    this.items.push(item)
    this.up(this.items.length - 1, item)
  }

  remove(item: T): void {
    const i = this.slot.get(item)
    if (i < 0 || this.items[i] !== item) return
    const last = this.items.pop() as T
    this.slot.set(item, -1)
    if (last === item) return
    this.down(i, last)
    this.up(this.slot.get(last), last)
  }

  private up(start: number, item: T): void {
    let i = start
    while (i > 0) {
      const p = (i - 1) >> 1
      const parent = this.items[p] as T
      if (!this.before(item, parent)) break
      this.items[i] = parent
      this.slot.set(parent, i)
      i = p
    }
    this.items[i] = item
    this.slot.set(item, i)
  }

  private down(start: number, item: T): void {
    const n = this.items.length
    let i = start
    for (;;) {
      const l = 2 * i + 1
      if (l >= n) break
      const r = l + 1
      let c = l
      if (r < n && this.before(this.items[r] as T, this.items[l] as T)) c = r
      const child = this.items[c] as T
      if (!this.before(child, item)) break
      this.items[i] = child
      this.slot.set(child, i)
      i = c
    }
    this.items[i] = item
    this.slot.set(item, i)
  }
}
