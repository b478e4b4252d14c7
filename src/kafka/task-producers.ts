import { PunctualError } from '../errors.js'
import type { Logger } from '../util/logger.js'
import { disconnected } from './client-calls.js'
import type { GroupConsumer } from './client-supplier.js'
import type { TransactionScope } from './kafka-commit-backend.js'
import type { ProducerSink } from './producer-sink.js'
import { isProducerFenced } from './streams-producer.js'
import type { StreamsProducer } from './streams-producer.js'

/** How long closing waits for the offsets consumer to disconnect. */
const DISCONNECT_WAIT_MS = 10_000

/** What the task manager and the runtime do with an instance's producers, one or one per task. */
export interface ProducerControl {
  /** Exactly-once: aborts the open transactions and opens the next (see `StreamsProducer.abortOrReplace`). */
  abortOrReplace(): Promise<void>
  /** At a stop whose last transaction failed: aborts the open transactions if it can. */
  abortAtStop(): Promise<void>
  close(): Promise<void>
}

/**
 * Exactly-once in a streams group: a transactional producer per task, with the transactional id
 * `<applicationId>-<taskId>` (Kafka Streams' exactly-once before KIP-447, "eos-alpha"). A streams group
 * fences a transaction's offsets by the member's id and epoch, which librdkafka's producer takes only
 * from its own consumer's group metadata; here the offsets go without member data (the coordinator takes
 * them unchecked) and the transactional id fences instead: the task's new owner initializes its
 * producer before it reads the task's offsets, which fences the previous owner's producer and aborts
 * its open transaction, so a paused owner that resumes cannot commit again.
 *
 * A producer found fenced (its commit or abort refused) means the task has a new owner: the task is
 * migrated. Its producer is closed, not replaced (a replacement would fence the new owner in turn), and
 * the task does not start here again until the group takes it from this member (revoked or lost, which
 * the member's heartbeats learn) and gives it back.
 */
export class TaskProducers implements ProducerControl {
  private readonly producers = new Map<string, StreamsProducer>()
  private readonly scopes = new Map<string, TransactionScope>()
  /** Tasks whose producer was fenced: not started again until the group takes them away. */
  private readonly migrated = new Set<string>()
  private closed = false

  constructor(
    /** A task's producer, not connected. */
    private readonly make: (taskId: string) => StreamsProducer,
    /** A consumer of the group that never joins it: the group metadata of the transactions' offsets (no member). */
    private readonly offsetsConsumer: GroupConsumer,
    private readonly logger: Logger,
  ) {}

  /**
   * Connects and initializes the producers of tasks about to start (each initialization fences the
   * task's previous producer and ends its open transaction). Returns the tasks that may start: not the
   * migrated ones.
   */
  async open(ids: readonly string[]): Promise<string[]> {
    if (this.closed) throw new PunctualError('ILLEGAL_STATE', 'the producers are closed')
    const starting = ids.filter((id) => !this.migrated.has(id))
    await Promise.all(
      starting
        .filter((id) => !this.producers.has(id))
        .map(async (id) => {
          const producer = this.make(id)
          this.producers.set(id, producer)
          await producer.connect()
        }),
    )
    return starting
  }

  /** The tasks left this member (revoked or lost): their producers close, and they may start here again once given back. */
  async closeTasks(ids: readonly string[]): Promise<void> {
    for (const id of ids) this.migrated.delete(id)
    await Promise.all(ids.map((id) => this.dispose(id)))
  }

  /** A task's transaction. */
  scopeOf(taskId: string): TransactionScope {
    let scope = this.scopes.get(taskId)
    if (scope !== undefined) return scope
    const producer = this.producer(taskId)
    scope = {
      sink: producer.sink,
      client: {
        sendOffsetsToTransaction: (offsets) => producer.sendOffsetsToTransaction(offsets, this.offsetsConsumer),
        commitTransaction: () => producer.commitTransaction(),
        beginTransaction: () => producer.beginTransaction(),
        flush: () => producer.flush(),
        commitOffsets: () => Promise.reject(new PunctualError('ILLEGAL_STATE', 'a task producer commits offsets in its transactions only')),
      },
    }
    this.scopes.set(taskId, scope)
    return scope
  }

  /** Where a task's records go: its producer's sink (into its open transaction). */
  sinkOf(taskId: string): ProducerSink {
    return this.producer(taskId).sink
  }

  /**
   * Aborts every open transaction and opens the next. A producer found fenced makes its task migrated
   * (closed, see the class comment); the others go on.
   */
  async abortOrReplace(): Promise<void> {
    await Promise.all(
      [...this.producers].map(async ([id, producer]) => {
        try {
          await producer.abortOrReplace()
        } catch (err) {
          if (!isProducerFenced(err)) throw err
          this.logger.warn({ taskId: id }, `task ${id}: its producer was fenced: the task has a new owner; it does not run here until the group takes it from this instance`)
          this.migrated.add(id)
          await this.dispose(id)
        }
      }),
    )
  }

  async abortAtStop(): Promise<void> {
    await Promise.all([...this.producers.values()].map((p) => p.abortAtStop()))
  }

  async close(): Promise<void> {
    this.closed = true
    await Promise.all([...this.producers.keys()].map((id) => this.dispose(id)))
    await disconnected(this.offsetsConsumer, DISCONNECT_WAIT_MS)
  }

  private producer(taskId: string): StreamsProducer {
    const producer = this.producers.get(taskId)
    if (producer === undefined) throw new PunctualError('ILLEGAL_STATE', `task ${taskId} has no producer here`)
    return producer
  }

  private async dispose(id: string): Promise<void> {
    const producer = this.producers.get(id)
    this.producers.delete(id)
    this.scopes.delete(id)
    await producer?.close()
  }
}
