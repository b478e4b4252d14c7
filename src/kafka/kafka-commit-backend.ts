import type { KeyedStateOnDisk } from '../keyed/keyed-state.js'
import type { Headers } from '../processor/api.js'
import { NO_HEADERS } from '../processor/api.js'
import type { CheckpointRestore, CommitBackend, TaskCommit } from '../runtime/commit-backend.js'
import type { StoreDisk } from '../state/persistent-store.js'
import type { Clock } from '../time/clock.js'
import type { ChangelogTopics } from './changelog-topics.js'
import type { TopicPartitionRef } from './fetcher.js'
import type { ProducerSink } from './producer-sink.js'
import { COMMIT_HEADER, commitHeaderValue, formatCommitMark, NO_COMMIT } from './commit-numbers.js'
import type { CommitMark } from './commit-numbers.js'

/** A consumed position to commit: the next offset to read. */
export interface PartitionOffset extends TopicPartitionRef {
  readonly offset: number
  /** At least once: the mark of the task's commit these offsets complete (`formatCommitMark`). */
  readonly metadata?: string
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
 * - `at_least_once`: the records are produced (each with the task's commit number, `COMMIT_HEADER`), the
 *   producer flushed, then the offsets committed with that number in their metadata. Records of
 *   different partitions land independently, so a crash during the flush can leave part of a commit in
 *   the changelogs; a restore skips the records of commits the group's offsets do not name, and the
 *   task resumes from the state and positions of the last complete commit: records are processed
 *   again, and everything they caused is written again (at least once), never lost.
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

  /** At least once: each task's mark (its last commit, and numbers left out), from the group's offsets when it was assigned. */
  private readonly marks = new Map<string, CommitMark>()

  /** At least once: a task assigned here goes on from this mark (the group's, or past what its restore left out). */
  assigned(taskId: string, mark: CommitMark): void {
    this.marks.set(taskId, mark)
  }

  commit(commits: readonly TaskCommit[]): Promise<void> {
    // Outputs written from here on belong to the next transaction.
    if (this.exactlyOnce) this.sink.hold()
    const now = this.clock.now()
    const offsets: PartitionOffset[] = []
    for (const c of commits) {
      const [sub, partition] = parseTaskId(c.taskId)
      const topics = this.changelogs(sub)
      let headers: Headers = NO_HEADERS
      let metadata: string | undefined
      if (!this.exactlyOnce) {
        const previous = this.marks.get(c.taskId) ?? NO_COMMIT
        const mark = { n: previous.n + 1, voids: previous.voids }
        this.marks.set(c.taskId, mark)
        headers = [{ key: COMMIT_HEADER, value: commitHeaderValue(mark.n) }]
        metadata = formatCommitMark(mark)
      }
      for (const r of c.records()) {
        const m = topics.toMessage(r)
        this.sink.produce(m.topic, partition, m.key, m.value, now, headers)
      }
      for (const [tp, offset] of Object.entries(c.checkpoint.positions)) {
        const at = tp.lastIndexOf(':')
        const topic = this.clusterName(tp.slice(0, at))
        offsets.push(metadata === undefined ? { topic, partition: Number(tp.slice(at + 1)), offset } : { topic, partition: Number(tp.slice(at + 1)), offset, metadata })
      }
    }
    const done = this.exactlyOnce ? this.commitTransaction(offsets) : this.flushAndCommit(offsets)
    return done.then(() => this.onCommitted(offsets))
  }

  private async commitTransaction(offsets: PartitionOffset[]): Promise<void> {
    if (offsets.length > 0) await this.client.sendOffsetsToTransaction(offsets)
    await this.client.commitTransaction()
    await this.client.beginTransaction()
    this.sink.release()
  }

  /** At least once: the commit is complete once its offsets are the group's, after every record it wrote is acknowledged. */
  private async flushAndCommit(offsets: PartitionOffset[]): Promise<void> {
    await this.client.flush()
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

  close(): undefined {
    return undefined
  }
}

/** `<sub-topology>_<partition>` into its numbers. */
export function parseTaskId(taskId: string): [number, number] {
  const at = taskId.indexOf('_')
  return [Number(taskId.slice(0, at)), Number(taskId.slice(at + 1))]
}
