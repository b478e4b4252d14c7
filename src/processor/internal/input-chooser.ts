import type { Clock } from '../../time/clock.js'
import type { PartitionQueue } from './partition-queue.js'

/**
 * Picks which of a task's input partitions supplies the next record: the one whose head has the
 * smallest timestamp (ties to the earlier queue: lower partition, then source order), as Kafka Streams'
 * PartitionGroup does. While some partition is empty, the task waits up to `maxTaskIdleMs` for it before
 * processing the others, so a lagging partition does not see its records arrive after later ones.
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
    if (best === undefined || !anyEmpty || this.maxTaskIdleMs <= 0) return best
    // Some partition is empty: wait up to maxTaskIdleMs for it before processing the others.
    const now = this.clock.now()
    let ready = true
    for (const q of queues) {
      if (q.head() !== undefined) continue
      if (q.idleDeadline < 0) q.idleDeadline = now + this.maxTaskIdleMs
      if (q.idleDeadline > now) ready = false
    }
    if (!ready) this.onWait()
    return ready ? best : undefined
  }

  /** Earliest end of a wait for an empty partition, or Infinity. */
  nextIdleDeadline(): number {
    let due = Infinity
    for (const q of this.queues) if (q.idleDeadline >= 0 && q.idleDeadline < due) due = q.idleDeadline
    return due
  }
}
