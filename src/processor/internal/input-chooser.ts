import type { Clock } from '../../time/clock.js'
import type { PartitionQueue } from './partition-queue.js'

/**
 * Picks which of a task's input partitions supplies the next record: the one whose head has the
 * smallest timestamp (ties to the earlier queue: lower partition, then source order), as Kafka Streams'
 * PartitionGroup does. While some partition is empty the task may wait for it, so a lagging partition
 * does not see its records arrive after later ones (KIP-695):
 * - an empty partition whose source knows of records not yet fetched (`caughtUp()` false) is waited
 *   for, however long, unless `maxTaskIdleMs` is negative;
 * - an empty partition that is caught up is waited for up to `maxTaskIdleMs` (0: not at all).
 */
export class InputChooser {
  constructor(
    private readonly queues: readonly PartitionQueue[],
    private readonly maxTaskIdleMs: number,
    private readonly clock: Clock,
    /** Told when the task starts waiting for an empty partition (its deadline is a wall-clock due time). */
    private readonly onWait: () => void,
  ) {}

  /** The queue to take the next record from, or undefined when none may be processed now. */
  choose(): PartitionQueue | undefined {
    const queues = this.queues
    if (queues.length === 1) {
      const q = queues[0] as PartitionQueue
      return q.head() === undefined ? undefined : q
    }
    let best: PartitionQueue | undefined
    let bestTs = Infinity
    let anyEmpty = false
    for (let i = 0; i < queues.length; i++) {
      const q = queues[i] as PartitionQueue
      const h = q.head()
      if (h === undefined) {
        anyEmpty = true
        continue
      }
      q.idleDeadline = -1
      // Strictly smaller: ties go to the earlier queue.
      if (h.timestamp < bestTs) {
        best = q
        bestTs = h.timestamp
      }
    }
    if (best === undefined || !anyEmpty || this.maxTaskIdleMs < 0) return best
    return this.readyDespiteEmpty() ? best : undefined
  }

  /** Some partition is empty: whether the task may process the others now. */
  private readyDespiteEmpty(): boolean {
    let now = -1
    let ready = true
    let deadlineSet = false
    for (const q of this.queues) {
      if (q.head() !== undefined) continue
      if (q.input.caughtUp?.() === false) {
        // Records are known to wait at the source: the fetch that brings them (or says the partition
        // is caught up) wakes the task.
        q.idleDeadline = -1
        ready = false
        continue
      }
      if (this.maxTaskIdleMs === 0) continue
      if (now < 0) now = this.clock.now()
      if (q.idleDeadline < 0) {
        q.idleDeadline = now + this.maxTaskIdleMs
        deadlineSet = true
      }
      if (q.idleDeadline > now) ready = false
    }
    if (deadlineSet) this.onWait()
    return ready
  }

  /** Earliest end of a wait for an empty partition, or Infinity. */
  nextIdleDeadline(): number {
    let due = Infinity
    for (const q of this.queues) if (q.idleDeadline >= 0 && q.idleDeadline < due) due = q.idleDeadline
    return due
  }
}
