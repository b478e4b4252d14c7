import type { KeyedStateOnDisk } from '../keyed/keyed-state.js'
import type { CheckpointRestore, CommitBackend, TaskCommit } from '../runtime/commit-backend.js'
import type { StoreDisk } from '../state/persistent-store.js'
import type { Clock } from '../time/clock.js'
import { TASK_STORE } from '../runtime/changelog-records.js'
import type { ChangelogTopics } from './changelog-topics.js'
import type { TopicPartitionRef } from './fetcher.js'
import type { ProducerSink } from './producer-sink.js'

/** A consumed position to commit: the next offset to read. */
export interface PartitionOffset extends TopicPartitionRef {
  readonly offset: number
}

/** The client calls a commit makes, as promises (the runtime wraps its producer and consumer). */
export interface CommitClient {
  /** Exactly-once: adds the consumed offsets, with the consumer's group metadata, to the open transaction. */
  sendOffsetsToTransaction(offsets: PartitionOffset[]): Promise<void>
  commitTransaction(): Promise<void>
  beginTransaction(): Promise<void>
  /** At-least-once: waits until every record produced so far is acknowledged. */
  flush(): Promise<void>
  /** At-least-once: commits the consumed offsets to the group. */
  commitOffsets(offsets: PartitionOffset[]): Promise<void>
}

/**
 * Commits on Kafka. Each task's changelog records go to its changelog topics' partition (the task's),
 * and its input positions become the group's committed offsets.
 * - `exactly_once_v2`: all of it, with the outputs written since the last commit, is one transaction:
 *   the records are produced into it, the offsets added with the group metadata (KIP-447), then it
 *   commits and the next one begins; what tasks write in between is held by the sink until it has.
 * - `at_least_once`: the records are produced, the producer flushed (the tasks' positions last), then
 *   the offsets committed: a crash in between replays records whose effects are already out, never the
 *   other way round.
 * Tasks restore from their changelog topics (`ChangelogReader`): this backend keeps no local state.
 */
export class KafkaCommitBackend implements CommitBackend {
  constructor(
    private readonly exactlyOnce: boolean,
    private readonly client: CommitClient,
    private readonly sink: ProducerSink,
    /** Changelog topics of each sub-topology. */
    private readonly changelogs: (subtopology: number) => ChangelogTopics,
    /** The cluster's name of an input topic of the topology. */
    private readonly clusterName: (topic: string) => string,
    private readonly clock: Clock,
    /** Told the offsets each commit made the group's, once it has. */
    private readonly onCommitted: (offsets: readonly PartitionOffset[]) => void = () => {},
  ) {}

  commit(commits: readonly TaskCommit[]): Promise<void> {
    // Outputs written from here on belong to the next transaction.
    if (this.exactlyOnce) this.sink.hold()
    const now = this.clock.now()
    const offsets: PartitionOffset[] = []
    // At least once, a task's positions go out after the rest of its state is acknowledged (see flushAndCommit).
    const positions: Array<() => void> = []
    for (const c of commits) {
      const [sub, partition] = parseTaskId(c.taskId)
      const topics = this.changelogs(sub)
      for (const r of c.records()) {
        const m = topics.toMessage(r)
        const send = (): void => this.sink.produce(m.topic, partition, m.key, m.value, now, [])
        if (!this.exactlyOnce && r.store === TASK_STORE) positions.push(send)
        else send()
      }
      for (const [tp, offset] of Object.entries(c.checkpoint.positions)) {
        const at = tp.lastIndexOf(':')
        offsets.push({ topic: this.clusterName(tp.slice(0, at)), partition: Number(tp.slice(at + 1)), offset })
      }
    }
    const done = this.exactlyOnce ? this.commitTransaction(offsets) : this.flushAndCommit(positions, offsets)
    return done.then(() => this.onCommitted(offsets))
  }

  private async commitTransaction(offsets: PartitionOffset[]): Promise<void> {
    if (offsets.length > 0) await this.client.sendOffsetsToTransaction(offsets)
    await this.client.commitTransaction()
    await this.client.beginTransaction()
    this.sink.release()
  }

  /**
   * Without a transaction the changelog records of one commit can be partly written when the process
   * dies. A task restores its input positions from its changelog (`punctual.task`), so those go out
   * only once the rest of its state is acknowledged: a crash in between leaves older positions with
   * newer state, so records are processed again (at least once), never skipped.
   */
  private async flushAndCommit(positions: ReadonlyArray<() => void>, offsets: PartitionOffset[]): Promise<void> {
    await this.client.flush()
    if (positions.length > 0) {
      for (const send of positions) send()
      await this.client.flush()
    }
    if (offsets.length > 0) await this.client.commitOffsets(offsets)
  }

  restore(): CheckpointRestore | undefined {
    return undefined
  }

  storeDisk(): StoreDisk | undefined {
    return undefined
  }

  keyedStateDisk(): KeyedStateOnDisk | undefined {
    return undefined
  }

  close(): void {}
}

/** `<sub-topology>_<partition>` into its numbers. */
export function parseTaskId(taskId: string): [number, number] {
  const at = taskId.indexOf('_')
  return [Number(taskId.slice(0, at)), Number(taskId.slice(at + 1))]
}
