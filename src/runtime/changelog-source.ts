import type { ChangelogRecord } from './changelog.js'

/**
 * Where a restoring task's changelog records come from, read in bounded batches so that restoring does
 * not hold the event loop: the records a runtime kept, or (a Kafka runtime) a changelog topic's partition
 * from the task's checkpoint to its end.
 */
export interface ChangelogSource {
  /** Records not read yet, when known (restore progress). */
  remaining(): number | undefined
  /**
   * Up to `max` records, in order: those it holds now. Empty with records remaining means none has
   * arrived yet (a source that fetches); empty with none remaining (or, when it cannot tell, empty) means
   * the changelog is read.
   */
  read(max: number): readonly ChangelogRecord[]
  /**
   * For a source whose records arrive asynchronously: resolves when `read` may return records again, so
   * that a restore waiting for them does not poll. Absent: records are always there to read.
   */
  whenReadable?(): Promise<void>
}

export function isChangelogSource(x: unknown): x is ChangelogSource {
  return typeof x === 'object' && x !== null && typeof (x as ChangelogSource).read === 'function' && typeof (x as ChangelogSource).remaining === 'function'
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

/**
 * The records of `first`, then those of `second` (a task's local checkpoint, then its changelog's tail):
 * `second` is read only once `first` is, so records apply in the order they were written.
 */
export function concatSources(first: ChangelogSource, second: ChangelogSource): ChangelogSource {
  const firstDone = (): boolean => first.remaining() === 0
  return {
    remaining() {
      const a = first.remaining()
      const b = second.remaining()
      return a === undefined || b === undefined ? undefined : a + b
    },
    read(max) {
      if (!firstDone()) return first.read(max)
      return second.read(max)
    },
    ...(second.whenReadable === undefined && first.whenReadable === undefined
      ? {}
      : { whenReadable: () => (!firstDone() ? (first.whenReadable?.() ?? Promise.resolve()) : (second.whenReadable?.() ?? Promise.resolve())) }),
  }
}
