import type { StoreKey } from '../processor/api.js'
import { timerHashes } from './timer-index.js'
import type { TimerIndex } from './timer-index.js'

/**
 * Registrations an indexed timer queue holds before indexing them (`TimerQueue.enqueue`), oldest first,
 * in parallel arrays; also the timers an unindexed queue indexes at once (`pushIndexing`). Indexing a
 * registration costs mostly cache misses: the key's string (to hash it) and the index line its hash
 * leads to. One registration at a time, each miss waits for the one before; `prepare` takes the whole
 * batch pass by pass instead, so that the misses of a pass overlap, and leaves the strings and index
 * lines in the cache for the queue's inserting pass.
 */
export class RegistrationBatch {
  count = 0
  /** The earliest held timestamp (Infinity when none), so the queue's head needs no flush. */
  earliest = Infinity
  readonly owner: Int32Array
  readonly time: Float64Array
  readonly seq: Float64Array
  /** For timers already in the queue that are being indexed (`pushIndexing`): their ids. */
  readonly id: Int32Array
  /** Filled by `prepare`. */
  readonly hash: Int32Array
  readonly keys: Array<StoreKey | undefined>
  /** Where the touching reads go, so that the compiler keeps them. */
  private sink = 0

  constructor(readonly size: number) {
    this.owner = new Int32Array(size)
    this.time = new Float64Array(size)
    this.seq = new Float64Array(size)
    this.id = new Int32Array(size)
    this.hash = new Int32Array(size)
    this.keys = Array.from({ length: size }, () => undefined)
  }

  /** Holds a registration; the batch must not be full. */
  push(owner: number, key: StoreKey, timestamp: number, seq: number): void {
    const n = this.count
    this.owner[n] = owner
    this.keys[n] = key
    this.time[n] = timestamp
    this.seq[n] = seq
    this.count = n + 1
    if (timestamp < this.earliest) this.earliest = timestamp
  }

  /** Holds a timer already in the queue (by id), to index it; the batch must not be full. */
  pushIndexing(id: number, owner: number, key: StoreKey, timestamp: number): void {
    this.id[this.count] = id
    this.push(owner, key, timestamp, 0)
  }

  /**
   * Reads every key (a string's length is beside its characters), hashes them two at a time, makes room
   * in `index` for all of them (`live`: the timers already pending) and reads their index lines.
   */
  prepare(index: TimerIndex, live: number): void {
    const n = this.count
    const keys = this.keys
    let sink = 0
    for (let i = 0; i < n; i++) {
      const k = keys[i]
      if (typeof k === 'string') sink += k.length
    }
    timerHashes(this.owner, keys, this.time, n, this.hash)
    index.reserve(n, live)
    for (let i = 0; i < n; i++) sink += index.touch(this.hash[i] as number)
    this.sink = sink
  }

  /**
   * Empties the batch and returns how many it held; their entries stay readable until `release(n)`.
   * Taken before inserting, so that a call back into the queue meanwhile finds nothing held.
   */
  take(): number {
    const n = this.count
    this.count = 0
    this.earliest = Infinity
    return n
  }

  /** Lets go of the keys of the first `n` entries (after `take`). */
  release(n: number): void {
    this.keys.fill(undefined, 0, n)
  }
}
