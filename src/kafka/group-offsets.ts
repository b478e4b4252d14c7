import { PunctualError } from '../errors.js'
import type { Logger } from '../util/logger.js'
import { CALL_TIMEOUT_MS, promised, TIMED_OUT } from './client-calls.js'
import type { ClientError, CommittedOffset, GroupConsumer } from './client-supplier.js'
import type { TopicPartitionRef } from './fetcher.js'
import type { PartitionOffset } from './kafka-commit-backend.js'

/** librdkafka's logical offset "the beginning of the partition". */
const OFFSET_BEGINNING = -2
/** How long one request for the group's committed offsets may go unanswered before it is made again. */
const COMMITTED_ATTEMPT_MS = 5_000
/**
 * Why tasks may wait for the group's offsets of their inputs at most this long before the runtime fails
 * (Kafka Streams' default `task.timeout.ms`).
 */
export const TASK_TIMEOUT_MS = 300_000
/**
 * Why the group's stable offsets may never come: a transaction's offsets still pending at the group
 * coordinator. Ending them from here could throw away offsets of a transaction that committed (its
 * markers not yet written), so the runtime waits, as Kafka Streams does, and then says so.
 */
export const PENDING_OFFSETS_HINT =
  "a transaction holding offsets of the group is still pending on the broker (its markers not written, or a hanging transaction left by an offsets request that arrived after its transaction ended); find and abort hanging transactions with the broker's kafka-transactions.sh (find-hanging, abort), then start the application again"

/**
 * The member is no longer in the group as the commit's generation: the group refused the commit for
 * good. A transaction's offsets refused so come back from librdkafka as abortable errors.
 */
const FENCED_COMMIT = new Set([
  22, // ILLEGAL_GENERATION
  25, // UNKNOWN_MEMBER_ID
  110, // FENCED_MEMBER_EPOCH
])

/** Whether `err` is the group refusing offsets of a member it no longer has (not a fatal error of the client). */
export function isMemberFenced(err: unknown): boolean {
  const e = err as { code?: unknown; isFatal?: boolean } | undefined
  return e !== undefined && e !== null && e.isFatal !== true && typeof e.code === 'number' && FENCED_COMMIT.has(e.code)
}
/**
 * Why an offset commit may not go through for a while without the member having lost its partitions:
 * the coordinator moved or is loading, a rebalance is under way, the broker is away.
 */
const COMMIT_LAPSES = new Set([
  14, // COORDINATOR_LOAD_IN_PROGRESS (a broker that just restarted)
  15, // COORDINATOR_NOT_AVAILABLE
  16, // NOT_COORDINATOR
  27, // REBALANCE_IN_PROGRESS
  113, // STALE_MEMBER_EPOCH (KIP-848: the member's epoch moved on while the commit was on its way; it is still in the group)
  -180, // local: waiting for coordinator (the client has none yet: a broker that just restarted)
  -185, // local: timed out
  -187, // local: all brokers down
  -195, // local: broker transport failure
])

/** OffsetFetch's answer for a partition whose offsets a pending transaction holds: asked again until it ends. */
const UNSTABLE_OFFSET_COMMIT = 88

/**
 * Reads the group's committed offsets without the group consumer (over punctual's own connection to the
 * coordinator, as the group's offsets rather than a member's). A rejection carries the answer's `code`.
 */
export interface CommittedReader {
  committed(partitions: TopicPartitionRef[]): Promise<CommittedOffset[]>
  close(): void
}

/** How long a partition's watermarks are asked for again while the answer is a transient one. */
const WATERMARKS_RETRY_MS = 30_000
/** Answers to a watermarks query that a broker just restarted gives for a while. */
const WATERMARKS_TRANSIENT = new Set([
  -190, // local: unknown partition (the client's metadata not refreshed yet)
  -185, // local: timed out
  -187, // local: all brokers down
  -195, // local: broker transport failure
  3, // UNKNOWN_TOPIC_OR_PARTITION
  5, // LEADER_NOT_AVAILABLE
  6, // NOT_LEADER_OR_FOLLOWER
])

/** The consumer's assignment was lost (its member fenced) while the runtime waited for the group's offsets. */
export class AssignmentLost extends Error {}

/** The group did not answer for the committed offsets within the time given (its requests timed out). */
export class OffsetsUnanswered extends PunctualError {
  constructor(message: string, options: { cause: unknown }) {
    super('ILLEGAL_STATE', message, options)
  }
}

/** How an offset commit of the group ended. */
export type GroupCommitResult = 'committed' | 'lapsed' | 'fenced'

/**
 * The group's offsets, through the group consumer: reading them (stable ones under read_committed),
 * committing them (at least once; one commit in flight at a time, as librdkafka reports their results
 * in order through one event), moving the consumer to them, and partitions' end offsets.
 */
export class GroupOffsets {
  /** Results of the commits in flight, oldest first. */
  private readonly pending: Array<(err: ClientError | undefined) => void> = []

  constructor(
    private readonly consumer: GroupConsumer,
    private readonly logger: Logger,
    /**
     * Where committed offsets are read, when not through the consumer. librdkafka's KIP-848 consumer
     * reads them as a member, on its connection to the coordinator; after a broker restart that
     * connection can stay without an address, and the reads go unanswered while the group still counts
     * the member as the owner of the partitions whose offsets it waits for.
     */
    private readonly reader?: CommittedReader,
  ) {
    consumer.on('offset.commit', (err) => this.pending.shift()?.(err ?? undefined))
  }

  /**
   * Commits offsets to the group. 'lapsed': not now (coordinator away, rebalance under way; a later
   * commit writes them); 'fenced': the member is not the partitions' owner any more (its commits never
   * will be accepted again). Anything else rejects.
   */
  commit(offsets: PartitionOffset[]): Promise<GroupCommitResult> {
    return new Promise((resolve, reject) => {
      this.pending.push((err) => {
        if (err === undefined) resolve('committed')
        else if (FENCED_COMMIT.has(err.code)) resolve('fenced')
        else if (COMMIT_LAPSES.has(err.code)) {
          this.logger.warn({ code: err.code }, `the group's offsets were not committed (${err.message}); the next commit writes them`)
          resolve('lapsed')
        } else reject(new PunctualError('ILLEGAL_STATE', `committing the group's offsets: ${err.message}`, { cause: err }))
      })
      this.consumer.commit(offsets)
    })
  }

  /**
   * The group's committed offsets of these partitions (stable ones: the consumer reads committed). Asked
   * again after COMMITTED_ATTEMPT_MS without an answer, up to `timeoutMs` (then OffsetsUnanswered): after
   * a broker restart, the client can drop a request made while it had no coordinator, and its caller
   * would wait the whole timeout for an answer that is not coming.
   */
  async committed(partitions: TopicPartitionRef[], timeoutMs = CALL_TIMEOUT_MS): Promise<CommittedOffset[]> {
    const deadline = Date.now() + timeoutMs
    const names = (): string => partitions.map((p) => `${p.topic}-${p.partition}`).join(', ')
    for (;;) {
      const attempt = Math.min(COMMITTED_ATTEMPT_MS, Math.max(1, deadline - Date.now()))
      try {
        return await this.ask(partitions, attempt)
      } catch (err) {
        // A cluster away, a coordinator moving, or a transaction still pending is waited for like an unanswered request.
        const code = (err as { code?: number }).code ?? 0
        const timedOut = code === TIMED_OUT || code === UNSTABLE_OFFSET_COMMIT || COMMIT_LAPSES.has(code)
        // A fenced member rejoins only once its lost partitions are given up, which waits for this rebalance event handling to end.
        if (timedOut && this.consumer.assignmentLost()) throw new AssignmentLost()
        if (timedOut && Date.now() >= deadline) throw new OffsetsUnanswered(`reading the group's offsets of ${names()}: ${(err as Error).message}`, { cause: err })
        if (!timedOut) throw new PunctualError('ILLEGAL_STATE', `reading the group's offsets of ${names()}: ${(err as Error).message}`, { cause: err })
        // An error that came at once: not asked again at once.
        if ((err as { code?: number }).code !== TIMED_OUT) await new Promise((resolve) => setTimeout(resolve, 250))
      }
    }
  }

  private ask(partitions: TopicPartitionRef[], timeoutMs: number): Promise<CommittedOffset[]> {
    return new Promise((resolve, reject) => {
      // Bounded here too: a callback the client drops must not hold the caller.
      const timer = setTimeout(() => reject(Object.assign(new Error('no answer'), { code: TIMED_OUT })), timeoutMs + 1_000)
      if (this.reader !== undefined) {
        this.reader.committed(partitions).then(
          (offsets) => {
            clearTimeout(timer)
            resolve(offsets)
          },
          (err: unknown) => {
            clearTimeout(timer)
            reject(err instanceof Error ? err : new Error(String(err)))
          },
        )
        return
      }
      this.consumer.committed(partitions, timeoutMs, (err, offsets) => {
        clearTimeout(timer)
        if (err) reject(Object.assign(new Error(err.message), err))
        else resolve(offsets)
      })
    })
  }

  /** Moves the consumer of these partitions to the group's committed offsets (the beginning where none is), asking for TASK_TIMEOUT_MS at most. */
  async seekToCommitted(partitions: TopicPartitionRef[], roundMs: number): Promise<void> {
    if (partitions.length === 0) return
    const since = Date.now()
    let committed: CommittedOffset[]
    for (;;) {
      try {
        committed = await this.committed(partitions, roundMs)
        break
      } catch (err) {
        if (!(err instanceof OffsetsUnanswered)) throw err
        if (Date.now() - since >= TASK_TIMEOUT_MS) {
          throw new PunctualError('ILLEGAL_STATE', `the group's offsets of ${partitions.length} input partitions were not answered in ${Math.round((Date.now() - since) / 1000)} s (last: ${err.message}): ${PENDING_OFFSETS_HINT}`, { cause: err })
        }
        this.logger.warn({ waitedMs: Date.now() - since }, `the group's committed offsets were not answered (${err.message}): asking again`)
      }
    }
    for (const c of committed) {
      const offset = c.offset !== undefined && c.offset >= 0 ? c.offset : OFFSET_BEGINNING
      await promised(`seeking ${c.topic}-${c.partition} to ${offset}`, (cb) => this.consumer.seek({ topic: c.topic, partition: c.partition, offset }, CALL_TIMEOUT_MS, cb), CALL_TIMEOUT_MS).catch((e: Error) => {
        throw new PunctualError('ILLEGAL_STATE', e.message, { cause: e })
      })
    }
  }

  /**
   * A partition's offsets (log start and high watermark), asked of the broker. Asked again for up to
   * WATERMARKS_RETRY_MS while the answer is one a broker just restarted gives (the client's metadata
   * not yet refreshed: "Unknown partition"; no leader yet; the cluster away).
   */
  async watermarks(topic: string, partition: number): Promise<{ lowOffset: number; highOffset: number }> {
    const since = Date.now()
    for (let pause = 100; ; pause = Math.min(2 * pause, 2_000)) {
      try {
        return await new Promise<{ lowOffset: number; highOffset: number }>((resolve, reject) =>
          this.consumer.queryWatermarkOffsets(topic, partition, CALL_TIMEOUT_MS, (err, offsets) => (err ? reject(err) : resolve(offsets))),
        )
      } catch (err) {
        const e = err as ClientError
        if (!WATERMARKS_TRANSIENT.has(e.code) || Date.now() - since + pause > WATERMARKS_RETRY_MS) {
          throw new PunctualError('ILLEGAL_STATE', `reading the offsets of ${topic}-${partition}: ${e.message}`, { cause: err })
        }
        await new Promise((resolve) => setTimeout(resolve, pause))
      }
    }
  }

  /** Rejects the commits still waiting for a result (the consumer is closing: none will come). */
  close(): void {
    this.reader?.close()
    for (const done of this.pending.splice(0)) done({ message: 'the consumer closed', code: -185 })
  }
}
