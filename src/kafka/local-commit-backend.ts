import type { ChangelogRecord } from '../runtime/changelog.js'
import type { CommitBackend, TaskCommit } from '../runtime/commit-backend.js'
import type { CheckpointStore, CommitHolds, DurableTaskState } from '../state/checkpoint-store.js'
import type { KafkaCommitBackend } from './kafka-commit-backend.js'

/**
 * The Kafka runtime's commits, each followed by a local one: a commit goes to Kafka (`KafkaCommitBackend`)
 * and, once it is complete there, the changelog records it produced are written to the state directory's
 * checkpoint store (their bytes, by task, store and key: what the compacted changelog holds), with each
 * task's positions and clocks and where its records then stand in its changelog topics
 * (`ChangelogPosition`). A restart, after a clean stop or a crash, reads the local records and only the
 * changelog's tail from there (`LocalTaskRecords`), as Kafka Streams' `.checkpoint` file lets it after a
 * clean stop.
 *
 * Local state is never ahead of the changelog. The local commit is taken (its records copied into a
 * journal) when the Kafka one is, and written only after the Kafka one completed
 * (`CheckpointStore.saveRecordsAfter`): a transaction that aborts, or a commit that fails, writes nothing
 * here. A crash between the two leaves the previous local
 * commit, whose offsets are below this commit's records: the tail brings them.
 *
 * The offsets are counted, not asked for: a task's base is where its restore read its changelog to; each
 * commit adds the records it produced to each changelog partition and, exactly-once, one for the
 * transaction's marker in each partition it wrote. Our records and markers take offsets of their own past
 * the base, so the count never passes where they end; another writer's records (a fenced owner's, an
 * aborted transaction's) only push them further, and an offset counted short only makes the tail longer.
 * Asking the broker for the end after each commit would cost a round trip per partition, and a member
 * fenced meanwhile would read offsets past records its state never saw.
 */
export class LocalCommitBackend implements CommitBackend {
  /** Per task restored here: the offset of each changelog topic its local records reach. */
  private readonly offsets = new Map<string, Readonly<Record<string, number>>>()

  constructor(
    private readonly kafka: KafkaCommitBackend,
    private readonly store: CheckpointStore,
    private readonly exactlyOnce: boolean,
    private readonly now: () => number = Date.now,
  ) {}

  /** A task restored here: its local records reach `ends`, where its restore read each changelog topic to. */
  restored(taskId: string, ends: Readonly<Record<string, number>>): void {
    this.offsets.set(taskId, { ...ends })
  }

  commit(commits: readonly TaskCommit[]): Promise<CommitHolds | void> {
    const sent = this.kafka.send(commits)
    const next = new Map<string, { readonly base: Readonly<Record<string, number>>; readonly offsets: Record<string, number>; readonly c: TaskCommit }>()
    const records = new Map<string, readonly ChangelogRecord[]>()
    for (const c of commits) {
      // A task not restored here yet has nothing local to add to.
      const base = this.offsets.get(c.taskId)
      if (base === undefined) continue
      const offsets = { ...base }
      for (const [topic, n] of sent.produced.get(c.taskId) ?? []) offsets[topic] = (offsets[topic] ?? 0) + n + (this.exactlyOnce && n > 0 ? 1 : 0)
      next.set(c.taskId, { base, offsets, c })
      // The records the Kafka commit produced (taken once per commit): their bytes are what is kept.
      records.set(c.taskId, c.records())
    }
    if (next.size === 0) return sent.done.then(ignore)
    const writtenAt = this.now()
    const states = (taken: boolean): ReadonlyMap<string, DurableTaskState> => {
      const out = new Map<string, DurableTaskState>()
      for (const [taskId, { offsets, c }] of next) {
        const n = sent.numbers.get(taskId)
        const changelog = n === undefined ? { offsets, writtenAt } : { offsets, writtenAt, n, confirmed: taken }
        out.set(taskId, { streamTime: c.checkpoint.streamTime, lastFires: c.checkpoint.lastFires, positions: c.checkpoint.positions, changelog })
      }
      return out
    }
    return this.store.saveRecordsAfter(sent.done, states, records).then((holds) => {
      // Unless the task left or restored again meanwhile.
      for (const [taskId, { base, offsets }] of next) if (this.offsets.get(taskId) === base) this.offsets.set(taskId, offsets)
      return holds
    })
  }

  close(): Promise<void> | undefined {
    return this.store.close()
  }
}

const ignore = (): void => {}
