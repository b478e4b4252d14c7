/**
 * A FIFO of (bucket, key id) pairs in a ring that doubles when full: pushing and popping allocate
 * nothing in the steady state. A join window store pushes one pair per key and bucket of time, millions
 * over a run, while only the pairs of the last few buckets are live.
 */
export class BucketQueue {
  private buckets = new Float64Array(64)
  private ids: Array<string | undefined> = new Array<string | undefined>(64).fill(undefined)
  /** Index of the front pair. */
  private head = 0
  private count = 0

  get size(): number {
    return this.count
  }

  push(bucket: number, id: string): void {
    if (this.count === this.buckets.length) this.grow()
    const i = (this.head + this.count) & (this.buckets.length - 1)
    this.buckets[i] = bucket
    this.ids[i] = id
    this.count++
  }

  /** The front pair's bucket (call only when not empty). */
  frontBucket(): number {
    return this.buckets[this.head] as number
  }

  /** Removes the front pair and returns its key id (call only when not empty). */
  pop(): string {
    const id = this.ids[this.head] as string
    this.ids[this.head] = undefined
    this.head = (this.head + 1) & (this.buckets.length - 1)
    this.count--
    return id
  }

  private grow(): void {
    const n = this.buckets.length
    const buckets = new Float64Array(2 * n)
    const ids = new Array<string | undefined>(2 * n).fill(undefined)
    for (let k = 0; k < n; k++) {
      const i = (this.head + k) & (n - 1)
      buckets[k] = this.buckets[i] as number
      ids[k] = this.ids[i]
    }
    this.buckets = buckets
    this.ids = ids
    this.head = 0
  }
}
