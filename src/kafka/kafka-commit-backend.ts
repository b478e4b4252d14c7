import type { Headers } from '../processor/api.js'
import { NO_HEADERS } from '../processor/api.js'
import type { CommitBackend, TaskCommit } from '../runtime/commit-backend.js'
import type { Clock } from '../time/clock.js'
import type { ChangelogTopics } from './changelog-topics.js'
import type { TopicPartitionRef } from './fetcher.js'
import type { ProducerSink } from './producer-sink.js'
import { PunctualError } from '../errors.js'
import { claimMark, COMMIT_HEADER, commitHeaderValue, epochOf, formatCommitMark, MAX_EPOCH, NO_COMMIT, SEQ_MAX, seqOf } from './commit-numbers.js'
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
  /**
   * At-least-once: commits the consumed offsets to the group. Resolves true once the group took them,
   * false when the commit lapsed for a while (the member left the group or was fenced, its generation
   * changed, the coordinator is away: the next commit writes them); rejects on anything else. Only true
   * counts as taken: a commit that offers the next epoch's claim moves the task to it only then.
   */
  commitOffsets(offsets: PartitionOffset[]): Promise<boolean | void>
}

/**
 * Where a task's commit goes under exactly-once: a producer's sink and its transaction. One for every
 * task of the instance (its one producer), or one per task (a producer per task, in a streams group).
 */
export interface TransactionScope {
  readonly sink: ProducerSink
  readonly client: CommitClient
}

/**
 * At least once: commits numbered this close to the end of their epoch's numbers make their offsets
 * carry a claim of the next epoch, until the group takes one (see `KafkaCommitBackend`).
 */
const RECLAIM_WINDOW = 2 ** 16

/**
 * Commits on Kafka. Each task's changelog records go to its changelog topics' partition (the task's),
 * and its input positions become the group's committed offsets.
 * - `exactly_once_v2`: all of it, with the outputs written since the last commit, is one transaction:
 *   the records are produced into it, the offsets added with the group metadata (KIP-447), then it
 *   commits and the next one begins; what tasks write in between is held by the sink until it has.
 *   With a producer per task (`scopeOf`), each task's part is such a transaction of its own producer,
 *   all of them at once; the commit is complete when every one is.
 * - `at_least_once`: the records are produced (each with the task's commit number, `COMMIT_HEADER`), the
 *   producer flushed, then the offsets committed with that number in their metadata. Records of
 *   different partitions land independently, so a crash during the flush can leave part of a commit in
 *   the changelogs; a restore skips the records of commits the group's offsets do not name, and the
 *   task resumes from the state and positions of the last complete commit: records are processed
 *   again, and everything they caused is written again (at least once), never lost.
 *   A task's commits are numbered within its owner's epoch (`commit-numbers.ts`): the runtime claims
 *   the next epoch for a task assigned here (`claimMark`, committed to the group before anything of the
 *   task is written, then `assigned`), and the task's commits go on from the claim's number, one past
 *   the other. Each commit numbered in the last RECLAIM_WINDOW of an epoch offers the group the claim of
 *   the next epoch in its offsets' metadata (`claimMark` of its own mark: it covers this commit, and
 *   nothing of the epoch comes after it); once the group takes one (`commitOffsets` resolves true: this
 *   member was not fenced) the task's next commit is the new epoch's first. Moving on by a claim the
 *   group took, rather than by numbering on into the next epoch, keeps a new owner that claimed that
 *   epoch meanwhile from sharing it with this member, should this one be a zombie. A task whose offsets
 *   the group takes in none of that window's commits has no number left past SEQ_MAX: its commit fails.
 * It writes nothing beside its tasks' commits (`CommitBackend`'s `AlsoWrite` is `never`); the runtime
 * wraps it in `LocalCommitBackend`, which writes each commit to the state directory once it is complete
 * here (`send` tells what it wrote).
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
    /** Exactly-once: each task's transaction (none given: the instance's, `client` and `sink`, for every task). */
    private readonly scopeOf?: (taskId: string) => TransactionScope,
  ) {}

  /** At least once: each task's mark (its last commit, and numbers left out): its claim, or past what its restore left out. */
  private readonly marks = new Map<string, CommitMark>()

  /**
   * At least once: a task assigned here goes on from this mark: the claim the group took for it
   * (`claimMark`, before anything of the task is written), then, once restored, `afterRestore` of it.
   */
  assigned(taskId: string, mark: CommitMark): void {
    this.marks.set(taskId, mark)
  }

  commit(commits: readonly TaskCommit[]): Promise<void> {
    return this.send(commits).done.then(ignore)
  }

  /**
   * Commits as `commit` does, and tells what it wrote: per task, the records produced to each changelog
   * topic (its partition of it) and, at least once, the commit's number. `done` resolves once the commit
   * is complete: with whether the group took its offsets (exactly-once: true, they went with the
   * transaction), or rejects.
   */
  send(commits: readonly TaskCommit[]): SentCommit {
    // At least once: every task's number first, so that a task without one fails the commit before anything is written.
    const numbered = new Map<string, { readonly mark: CommitMark; offer: CommitMark | undefined }>()
    if (!this.exactlyOnce) {
      for (const c of commits) {
        const previous = this.marks.get(c.taskId) ?? NO_COMMIT
        if (seqOf(previous.n) === SEQ_MAX) {
          return { produced: new Map(), numbers: new Map(), done: Promise.reject(new PunctualError('ILLEGAL_STATE', `task ${c.taskId}: no at-least-once commit number left in owner epoch ${epochOf(previous.n)}: the group took none of its claims of the next one`)) }
        }
        const mark = { n: previous.n + 1, voids: previous.voids }
        // Near the end of the epoch's numbers: offer the group the claim of the next epoch.
        const offer = seqOf(mark.n) > SEQ_MAX - RECLAIM_WINDOW && epochOf(mark.n) < MAX_EPOCH ? claimMark(mark) : undefined
        numbered.set(c.taskId, { mark, offer })
      }
    }
    // Exactly-once: each transaction's offsets. Outputs written from here on belong to its next one.
    const transactions = new Map<TransactionScope, PartitionOffset[]>()
    const instance: TransactionScope = { sink: this.sink, client: this.client }
    if (this.exactlyOnce && this.scopeOf === undefined) {
      this.sink.hold()
      transactions.set(instance, [])
    }
    const now = this.clock.now()
    let offsets: PartitionOffset[] = []
    const produced = new Map<string, Map<string, number>>()
    for (const c of commits) {
      let sink = this.sink
      if (this.exactlyOnce) {
        const scope = this.scopeOf?.(c.taskId) ?? instance
        let list = transactions.get(scope)
        if (list === undefined) {
          scope.sink.hold()
          transactions.set(scope, (list = []))
        }
        offsets = list
        sink = scope.sink
      }
      const counts = new Map<string, number>()
      produced.set(c.taskId, counts)
      const [sub, partition] = parseTaskId(c.taskId)
      const topics = this.changelogs(sub)
      let headers: Headers = NO_HEADERS
      let metadata: string | undefined
      const number = numbered.get(c.taskId)
      if (number !== undefined) {
        this.marks.set(c.taskId, number.mark)
        headers = [{ key: COMMIT_HEADER, value: commitHeaderValue(number.mark.n) }]
        // A claim needs offsets to carry it: a task with no positions yet offers it at a later commit.
        if (Object.keys(c.checkpoint.positions).length === 0) number.offer = undefined
        metadata = formatCommitMark(number.offer ?? number.mark)
      }
      for (const r of c.records()) {
        const m = topics.toMessage(r)
        sink.produce(m.topic, partition, m.key, m.value, now, headers)
        counts.set(m.topic, (counts.get(m.topic) ?? 0) + 1)
      }
      for (const [tp, offset] of Object.entries(c.checkpoint.positions)) {
        const at = tp.lastIndexOf(':')
        const topic = this.clusterName(tp.slice(0, at))
        offsets.push(metadata === undefined ? { topic, partition: Number(tp.slice(at + 1)), offset } : { topic, partition: Number(tp.slice(at + 1)), offset, metadata })
      }
    }
    const numbers = new Map([...numbered].map(([taskId, { mark }]) => [taskId, mark.n]))
    if (this.exactlyOnce) {
      const done = Promise.all([...transactions].map(([scope, list]) => this.commitTransaction(scope, list))).then(() => {
        this.onCommitted([...transactions.values()].flat())
        return true
      })
      return { produced, numbers, done }
    }
    const done = this.flushAndCommit(offsets).then((taken) => {
      // A claim the group took: the task's next commit is the new epoch's first (unless the task was claimed or assigned again meanwhile).
      if (taken) for (const [taskId, { mark, offer }] of numbered) if (offer !== undefined && this.marks.get(taskId) === mark) this.marks.set(taskId, offer)
      this.onCommitted(offsets)
      return taken
    })
    return { produced, numbers, done }
  }

  private async commitTransaction({ client, sink }: TransactionScope, offsets: PartitionOffset[]): Promise<void> {
    if (offsets.length > 0) await client.sendOffsetsToTransaction(offsets)
    await client.commitTransaction()
    await client.beginTransaction()
    sink.release()
  }

  /**
   * At least once: the commit is complete once its offsets are the group's, after every record it wrote
   * is acknowledged. Whether the group took them (false too when there were none).
   */
  private async flushAndCommit(offsets: PartitionOffset[]): Promise<boolean> {
    await this.client.flush()
    return offsets.length > 0 && (await this.client.commitOffsets(offsets)) === true
  }

  close(): undefined {
    return undefined
  }
}

/** What a commit wrote (`KafkaCommitBackend.send`). */
export interface SentCommit {
  /** Per task: records produced per changelog topic (to the task's partition). */
  readonly produced: ReadonlyMap<string, ReadonlyMap<string, number>>
  /** At least once, per task: the commit's number. */
  readonly numbers: ReadonlyMap<string, number>
  /** Resolves once the commit is complete, with whether the group took its offsets; rejects when it failed. */
  readonly done: Promise<boolean>
}

const ignore = (): void => {}

/** `<sub-topology>_<partition>` into its numbers. */
export function parseTaskId(taskId: string): [number, number] {
  const at = taskId.indexOf('_')
  return [Number(taskId.slice(0, at)), Number(taskId.slice(at + 1))]
}
