/**
 * One changelog record: a key of one of a task's stores and its value now, serialized; `null` is a
 * tombstone (the key was deleted). The stores are the task's state stores by name, and punctual's own
 * parts of a task (see `changelog-records.ts`): its clocks and positions, its timers, each keyed state.
 * Replaying a task's records in order, the last value per (store, key) winning, rebuilds the task.
 */
export interface ChangelogRecord {
  readonly store: string
  readonly key: Uint8Array
  readonly value: Uint8Array | null
}

/** What one commit changed in one task: the records a runtime on Kafka sends to its changelog topics. */
export interface TaskChangelog {
  readonly taskId: string
  readonly records: readonly ChangelogRecord[]
}

/**
 * Called after each commit with every task whose state changed, in commit order, once the commit is
 * durable (with a state directory) or taken (without). A listener that throws stops the runtime.
 */
export type ChangelogListener = (changes: readonly TaskChangelog[]) => void
