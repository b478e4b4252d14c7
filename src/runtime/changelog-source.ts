import type { ChangelogRecord } from './changelog.js'

/**
 * Where a restoring task's changelog records come from, read in bounded batches so that restoring does
 * not hold the event loop: the records a runtime kept, or (a Kafka runtime) a changelog topic's partition
 * from the task's checkpoint to its end.
 */
export interface ChangelogSource {
  /** Records not read yet, when known (restore progress). */
  remaining(): number | undefined
  /** Up to `max` records, in order; an empty array once there are none left. */
  read(max: number): readonly ChangelogRecord[]
}

/** A source over records already in memory. */
export function recordsSource(records: Iterable<ChangelogRecord>): ChangelogSource {
  const all = Array.isArray(records) ? (records as readonly ChangelogRecord[]) : [...records]
  let next = 0
  return {
    remaining: () => all.length - next,
    read(max) {
      const batch = all.slice(next, next + max)
      next += batch.length
      return batch
    },
  }
}
