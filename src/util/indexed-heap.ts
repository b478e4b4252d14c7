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
 * A binary min-heap whose elements store their index (as Flink's HeapPriorityQueue does). `add` and
 * `remove` report whether the head changed: that is how owners know to re-arm their one real timer.
 */
export class IndexedMinHeap<T extends HeapElement> {
  private readonly items: T[] = []

  constructor(private readonly less: (a: T, b: T) => boolean) {}

  get size(): number {
    return this.items.length
  }

  peek(): T | undefined {
    return this.items[0]
  }

  /** Adds an element that is not in the heap; returns true when it became the head. */
  add(item: T): boolean {
    const i = this.items.length
    this.items.push(item)
    item.heapIndex = i
    this.siftUp(i)
    return item.heapIndex === 0
  }

  /** Removes an element if present; returns true when the head changed. */
  remove(item: T): boolean {
    const i = item.heapIndex
    if (i < 0 || this.items[i] !== item) return false
    const last = this.items.pop() as T
    item.heapIndex = -1
    if (last !== item) {
      this.items[i] = last
      last.heapIndex = i
      this.siftDown(i)
      this.siftUp(last.heapIndex)
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

  private siftUp(start: number): void {
    const items = this.items
    let i = start
    const item = items[i] as T
    while (i > 0) {
      const parentIndex = (i - 1) >> 1
      const parent = items[parentIndex] as T
      if (!this.less(item, parent)) break
      items[i] = parent
      parent.heapIndex = i
      i = parentIndex
    }
    items[i] = item
    item.heapIndex = i
  }

  private siftDown(start: number): void {
    const items = this.items
    const n = items.length
    let i = start
    const item = items[i] as T
    for (;;) {
      const left = 2 * i + 1
      if (left >= n) break
      const right = left + 1
      let child = left
      if (right < n && this.less(items[right] as T, items[left] as T)) child = right
      const c = items[child] as T
      if (!this.less(c, item)) break
      items[i] = c
      c.heapIndex = i
      i = child
    }
    items[i] = item
    item.heapIndex = i
  }
}
