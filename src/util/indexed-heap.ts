/** An element that knows its own slot, so removal is O(log n) without a search. -1: not in a heap. */
export interface HeapElement {
  heapIndex: number
}

/** Reads and writes an element's slot; lets one element sit in two heaps (a min and a max heap). */
export interface SlotAccess<T> {
  get(item: T): number
  set(item: T, index: number): void
}

/**
 * A binary heap whose elements store their slot (through `slot`), so removal is O(log n) without a
 * search, as in Flink's HeapPriorityQueue. `add` and `remove` report whether the head changed: that is
 * how owners know to re-arm their one real timer.
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

  /** Adds an element that is not in the heap; returns true when it became the head. */
  add(item: T): boolean {
    this.items.push(item)
    this.up(this.items.length - 1, item)
    return this.slot.get(item) === 0
  }

  /** Removes an element if present; returns true when the head changed. */
  remove(item: T): boolean {
    const i = this.slot.get(item)
    if (i < 0 || this.items[i] !== item) return false
    const last = this.items.pop() as T
    this.slot.set(item, -1)
    if (last !== item) {
      this.down(i, last)
      this.up(this.slot.get(last), last)
    }
    return i === 0
  }

  poll(): T | undefined {
    const head = this.items[0]
    if (head !== undefined) this.remove(head)
    return head
  }

  /** Elements in heap order (not sorted): for inspection and snapshots only. */
  toArray(): readonly T[] {
    return this.items.slice()
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

const HEAP_INDEX: SlotAccess<HeapElement> = {
  get: (e) => e.heapIndex,
  set: (e, i) => {
    e.heapIndex = i
  },
}

/** A min-heap of elements that keep their slot in `heapIndex`. */
export class IndexedMinHeap<T extends HeapElement> extends SlottedHeap<T> {
  constructor(less: (a: T, b: T) => boolean) {
    super(less, HEAP_INDEX as SlotAccess<T>)
  }
}
