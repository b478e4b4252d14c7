import { PunctualError } from '../errors.js'
import type { StreamTask } from '../processor/internal/task.js'
import type { TaskDefinition } from '../runtime/task-factory.js'
import type { TaskLoop } from '../runtime/task-loop.js'
import type { TaskManager } from '../runtime/task-manager.js'
import type { Logger } from '../util/logger.js'
import type { ChangelogRestore } from './changelog-restore.js'
import type { GroupConsumer } from './client-supplier.js'
import { claimMark, formatCommitMark, taskMark } from './commit-numbers.js'
import type { CommitMark } from './commit-numbers.js'
import type { InputFetcher, TopicPartitionRef } from './fetcher.js'
import { AssignmentLost, isMemberFenced, OffsetsUnanswered, PENDING_OFFSETS_HINT, TASK_TIMEOUT_MS } from './group-offsets.js'
import type { GroupOffsets } from './group-offsets.js'
import type { KafkaCommitBackend, PartitionOffset } from './kafka-commit-backend.js'
import type { ProducerControl, TaskProducers } from './task-producers.js'
import type { TopicPlan } from './topics.js'

/** librdkafka's rebalance codes (RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS / __REVOKE_PARTITIONS). */
const ASSIGN = -175
const REVOKE = -174
/** How long one round of asking for the group's offsets lasts before the rebalance event handling is let go and the tasks are tried again. */
const STABLE_ROUND_MS = 20_000
/** How long a task start waits before trying again a claim the group did not take (its coordinator away). */
const CLAIM_RETRY_MS = 1_000

/** The parts the task manager drives, made by the runtime at start. */
export interface KafkaTaskParts {
  readonly exactlyOnce: boolean
  readonly logger: Logger
  readonly definitions: readonly TaskDefinition[]
  readonly plan: TopicPlan
  readonly consumer: GroupConsumer
  readonly offsets: GroupOffsets
  readonly fetcher: InputFetcher
  /** The engine's tasks: active ones, and those restoring. */
  readonly tasks: TaskManager
  readonly active: readonly StreamTask[]
  readonly loop: TaskLoop
  readonly producer: ProducerControl
  /** Exactly-once in a streams group: a producer per task, opened before the task reads its offsets. */
  readonly taskProducers?: TaskProducers
  readonly restore: ChangelogRestore
  readonly backend: KafkaCommitBackend
  /** Leaves the group and joins it again (the consumer unsubscribes, then subscribes to the same topics). */
  rejoin(): void
  /** Whether the runtime runs (not stopping or failed). */
  isRunning(): boolean
  /** Whether the runtime stopped or failed (false while it runs or stops). */
  isStopped(): boolean
  fail(err: unknown): void
}

/**
 * Decides what happens to tasks when the group moves partitions, as Kafka Streams' `TaskManager`:
 * - `handleAssignment`: tasks all of whose input partitions are assigned start once the group's offsets
 *   of their inputs are stable (at least once, after claiming them: `claimMark`), restore, then process;
 * - `handleRevocation`: revoked tasks commit (with every other task, in one commit, which also writes
 *   their local state), and close;
 * - `handleLostAll`: tasks taken away without a revocation (the member was fenced) close without a
 *   commit; under exactly-once the open transaction, which may hold their output, is aborted first, and
 *   nothing commits from the moment the loss is known;
 * - `handleMemberFenced`: under exactly-once, a transaction's offsets the group refused because it no
 *   longer has this member: the tasks are lost (as `handleLostAll`), and the consumer leaves the group and
 *   joins again;
 * - `handleCorruption`: under exactly-once, a transaction that cannot commit is aborted and every task
 *   goes back to its last commit.
 * Events are handled one after the other, in the order the consumer gives them.
 */
export class KafkaTaskManager {
  /** A failed transaction is being aborted and its tasks rebuilt: nothing processes or commits meanwhile. */
  recovering = false
  private rebalancing: Promise<void> = Promise.resolve()
  /** Partitions assigned to this instance, as `topic:partition` of the cluster. */
  private readonly assigned = new Set<string>()

  constructor(private readonly parts: KafkaTaskParts) {}

  /** A rebalance event from the consumer; it waits for our (un)assign call. */
  onRebalance(code: number, partitions: readonly TopicPartitionRef[]): void {
    const refs = partitions.map((p) => ({ topic: p.topic, partition: p.partition }))
    const lost = code === REVOKE && this.parts.consumer.assignmentLost()
    const what = code === ASSIGN ? 'assign' : code === REVOKE ? (lost ? 'lost' : 'revoke') : `rebalance error ${code}`
    // From now nothing commits: the open transaction may hold the lost tasks' output.
    if (lost && this.parts.exactlyOnce) this.stopCommitting()
    const names = refs.map((p) => `${p.topic}-${p.partition}`).join(',')
    this.parts.logger.debug({ partitions: names }, `group: ${what}`)
    this.enqueue(() => (code === ASSIGN ? this.handleAssignment(refs) : lost ? this.handleLostAll(refs) : code === REVOKE ? this.handleRevocation(refs) : undefined))
    this.enqueue(() => this.parts.logger.debug({ partitions: names }, `group: ${what} done`))
  }

  /** Resolves once the rebalance events so far are handled. */
  settled(): Promise<void> {
    return this.rebalancing
  }

  /** Tasks all of whose input partitions are assigned here. */
  completeTasks(): string[] {
    return this.parts.definitions.filter((d) => this.inputsOf(d).every((p) => this.assigned.has(`${p.topic}:${p.partition}`))).map((d) => d.id)
  }

  async handleAssignment(partitions: TopicPartitionRef[]): Promise<void> {
    const { consumer, fetcher } = this.parts
    for (const p of partitions) {
      this.assigned.add(`${p.topic}:${p.partition}`)
      // Where the task reads first comes from its restored positions; fetching starts at the group's offset.
      fetcher.add(p.topic, p.partition, 0)
    }
    consumer.incrementalAssign(partitions)
    fetcher.assigned(partitions)
    if (this.parts.isRunning() && !this.recovering) await this.startAssignedTasks(Date.now())
  }

  async handleRevocation(partitions: TopicPartitionRef[]): Promise<void> {
    const { tasks, loop, restore } = this.parts
    const ids = this.leaving(partitions)
    try {
      if (ids.length === 0) return
      this.parts.logger.info({ tasks: ids.join(',') }, 'tasks revoked')
      restore.stop(ids)
      if (this.parts.isRunning() && !this.recovering) await loop.settled().catch((err: unknown) => this.unlessRecovering(err))
      // Tasks of a failed transaction go back to their last commit: nothing of theirs can be committed.
      // (While the runtime stops, it commits and closes them itself.)
      if (this.recovering) tasks.lose(ids)
      else if (this.parts.isRunning()) {
        // The commit also writes their local state, which a later assignment here goes on from.
        tasks.revoke(ids, () => loop.commitNow())
        await loop.settled().catch((err: unknown) => this.unlessRecovering(err))
      }
      // Their producers go with them (while the runtime stops, it closes them itself after its last commit).
      if (this.parts.isRunning()) await this.parts.taskProducers?.closeTasks(ids)
    } finally {
      // Whatever happened, the consumer is told: until it is, librdkafka holds the rebalance open and
      // its member sends no heartbeat.
      this.unassign(partitions)
    }
  }

  /**
   * The assignment was taken away (the member was fenced): the tasks close without a commit. Under
   * exactly-once the open transaction may hold their output: it is aborted (or the producer replaced)
   * and every task goes back to its last commit, as Kafka Streams' `handleLostAll` re-initialises the
   * producer under exactly-once v2.
   */
  async handleLostAll(partitions: TopicPartitionRef[]): Promise<void> {
    const ids = this.leaving(partitions)
    this.parts.logger.warn({ tasks: ids.join(',') }, 'tasks lost: the group gave their partitions to another member (this one was fenced, as after a long pause); they close without a commit')
    this.parts.restore.stop(ids)
    this.parts.tasks.lose(ids)
    this.unassign(partitions)
    // A lost task's open transaction is left to its new owner, whose producer's initialization aborts it.
    await this.parts.taskProducers?.closeTasks(ids)
    if (this.parts.exactlyOnce) await this.recover('tasks were lost')
  }

  /**
   * Under exactly-once, a transaction librdkafka says must be aborted (a record not delivered, a broker
   * away too long, a fenced producer): aborted, and every task back to its last commit, as Kafka Streams
   * does with corrupted tasks. Runs between rebalance events; nothing processes or commits meanwhile.
   */
  handleCorruption(err: Error): void {
    if (this.recovering) return
    this.stopCommitting()
    this.parts.logger.warn({ err }, `a transaction failed: aborting it; the tasks go back to their last commit (${err.message})`)
    this.enqueue(() => this.recover('the transaction failed'))
  }

  /**
   * Under exactly-once, the group refused a transaction's offsets because it no longer has this member
   * (UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH or ILLEGAL_GENERATION), though the consumer reported no lost
   * assignment. The offsets go to the group through the producer, so librdkafka's consumer is not told:
   * it learns of the fencing only from its own heartbeat, and a heartbeat it does not send (a member it
   * still believes in the middle of a rebalance sends none) would leave the instance holding partitions
   * the group gave away, processing nothing and committing nothing, without an error. As Kafka Streams
   * does on a `TaskMigratedException`: the tasks are lost (closed without a commit, the transaction
   * aborted or the producer replaced, as `handleLostAll`), and the consumer leaves the group and joins
   * it again; the tasks restore when the group assigns their partitions again.
   */
  handleMemberFenced(err: Error): void {
    if (this.recovering) return
    this.stopCommitting()
    this.parts.logger.warn({ err }, `the group no longer has this member (${err.message}): its tasks are lost, and it joins the group again`)
    this.enqueue(async () => {
      const ids = this.leaving([...this.assigned].map(parsePartition))
      this.parts.logger.warn({ tasks: ids.join(',') }, 'tasks lost: the group dropped this member; they close without a commit')
      this.parts.restore.stop(ids)
      this.parts.tasks.lose(ids)
      await this.recover('the group dropped this member')
      // The consumer revokes what it still holds through the rebalance callback (no task is left to commit), then joins afresh.
      if (this.parts.isRunning()) this.parts.rejoin()
    })
  }

  /** Nothing processes or commits until the recovery that follows has run. */
  private stopCommitting(): void {
    this.recovering = true
    this.parts.loop.disarm()
  }

  /**
   * Aborts the open transaction and puts every task back to its last commit: the tasks are closed
   * without a commit and restored from their changelogs (which hold committed transactions only), the
   * input partitions are fetched again from the group's committed offsets, and a new transaction begins.
   */
  private async recover(why: string): Promise<void> {
    const { fetcher, tasks, loop, producer, restore } = this.parts
    this.recovering = true
    loop.disarm()
    await loop.discardFailedCommit()
    await producer.abortOrReplace()
    const ids = [...this.parts.active.map((t) => t.taskId.toString()), ...tasks.restoringIds()]
    restore.stop(ids)
    tasks.lose(ids)
    // Fetching restarts at the committed offsets; messages fetched before are dropped with their partitions.
    await fetcher.stop()
    const partitions = [...this.assigned].map(parsePartition)
    for (const p of partitions) {
      fetcher.remove(p.topic, p.partition)
      fetcher.add(p.topic, p.partition, 0)
    }
    const sought = await this.parts.offsets.seekToCommitted(partitions, STABLE_ROUND_MS).then(
      () => true,
      (e: unknown) => (e instanceof AssignmentLost ? false : Promise.reject(e)),
    )
    fetcher.assigned(partitions)
    fetcher.start()
    this.recovering = false
    if (!this.parts.isRunning()) return
    if (sought) {
      this.parts.logger.info({}, `recovered (${why}): the tasks restore from their last commit`)
      await this.startAssignedTasks(Date.now())
    } else {
      this.parts.logger.info({}, `recovered (${why}); the group took this instance's partitions back meanwhile (its member was fenced): their tasks restore when they are assigned again`)
    }
    loop.scheduleRun()
    loop.rearm()
  }

  /**
   * Starts the tasks whose input partitions are all assigned and that are neither running nor restoring:
   * once the group's offsets of their inputs are stable (and at least once, once claimed), they restore
   * and then process. When the group does not answer within STABLE_ROUND_MS (a coordinator still loading
   * after a broker restart, a member that must rejoin first), the rebalance event handling is let go and
   * the tasks are tried again after the group events that came meanwhile, for TASK_TIMEOUT_MS in all:
   * holding the handling could keep the consumer from the very rejoin that answers.
   */
  private async startAssignedTasks(since: number): Promise<void> {
    const { tasks, loop, restore, logger } = this.parts
    const running = new Set([...this.parts.active.map((t) => t.taskId.toString()), ...tasks.restoringIds()])
    let ids = this.completeTasks().filter((id) => !running.has(id))
    if (ids.length === 0) return
    logger.info({ tasks: ids.join(',') }, 'tasks assigned')
    // A producer per task: initialized before the offsets are read, it fences the previous owner's and
    // ends its open transaction (whose offsets would hold the read back until it timed out).
    if (this.parts.taskProducers !== undefined) ids = await this.parts.taskProducers.open(ids)
    if (ids.length === 0) return
    const stable = await this.stableOffsets(ids)
    const outcome = !(stable instanceof Map) || this.parts.exactlyOnce ? stable : await this.claim(ids, stable)
    if (outcome === 'lost') {
      logger.info({ tasks: ids.join(',') }, 'the assignment was lost while the group offsets were read: the tasks wait for the next one')
      return
    }
    if (outcome instanceof OffsetsUnanswered || outcome === 'unanswered') {
      const waited = Date.now() - since
      const last = outcome === 'unanswered' ? "the claim's commit lapsed" : outcome.message
      if (waited >= TASK_TIMEOUT_MS) throw new PunctualError('ILLEGAL_STATE', `the group's offsets of tasks ${ids.join(', ')} were not answered in ${Math.round(waited / 1000)} s (last: ${last}): ${PENDING_OFFSETS_HINT}`)
      logger.warn({ tasks: ids.join(','), waitedMs: waited }, `the group's offsets of the tasks were not answered (${last}): asked again after the group events that came meanwhile`)
      this.enqueue(() => (this.parts.isRunning() && !this.recovering ? this.startAssignedTasks(since) : undefined))
      return
    }
    // A fetcher that chooses its own positions starts at the group's offsets (the task reads from there).
    if (stable instanceof Map) this.parts.fetcher.fetchFrom([...stable.values()].map((c) => ({ topic: c.topic, partition: c.partition, offset: c.offset })))
    await restore.load(ids)
    tasks.assign(ids, (taskId) => restore.source(taskId))
    loop.scheduleRun()
    loop.rearm()
  }

  /** A task restored: at least once, its commits go on past what its restore left out. */
  restored(taskId: string, count: number, ms: number): void {
    const mark = this.parts.restore.restored(taskId, count, ms)
    if (mark !== undefined) this.parts.backend.assigned(taskId, mark)
  }

  /** Whether a task is this instance's: assigned (its offsets being read), restoring or running. */
  holds(taskId: string): boolean {
    return this.parts.active.some((t) => t.taskId.toString() === taskId) || this.parts.tasks.restoringIds().includes(taskId) || this.completeTasks().includes(taskId)
  }

  /** The tasks assigned here that hold store `storeName` and do not run yet (waiting for stable offsets, or restoring). */
  notReady(storeName: string): string[] {
    const running = new Set(this.parts.active.map((t) => t.taskId.toString()))
    const holding = new Set(this.parts.definitions.filter((d) => d.subtopology.stores.some((b) => b.name === storeName)).map((d) => d.id))
    return this.completeTasks().filter((id) => holding.has(id) && !running.has(id))
  }

  /**
   * Waits until no transaction that commits offsets of these tasks' inputs is pending (the group's
   * offsets are stable, KIP-447: under read_committed librdkafka asks for stable offsets and retries
   * until they are). A transaction's commit returns before its markers are written, and an aborted one
   * of a crashed instance is pending until its timeout: restoring before would read the changelog up to
   * a last stable offset short of the previous owner's last commit, and resume from older positions
   * than the records it already processed.
   */
  private async stableOffsets(ids: readonly string[]): Promise<Map<string, PartitionOffset> | 'lost' | OffsetsUnanswered> {
    try {
      const committed = await this.parts.offsets.committed(this.inputPartitions(ids), STABLE_ROUND_MS)
      return new Map(committed.map((c) => [`${c.topic}:${c.partition}`, { topic: c.topic, partition: c.partition, offset: c.offset ?? -1, ...(c.metadata === undefined ? {} : { metadata: c.metadata }) }]))
    } catch (err) {
      if (err instanceof AssignmentLost) return 'lost'
      // Unanswered: said while the tasks wait, and when they give up.
      if (err instanceof OffsetsUnanswered) return err
      throw err
    }
  }

  /**
   * At least once, each task's previous mark is the highest commit number among its offsets' metadata.
   * Before the task writes anything, this instance claims it: it commits the same offsets with the mark
   * of a new owner epoch (`claimMark`), which a fenced member cannot do. Records a paused previous owner
   * writes late carry an older epoch: the claim voids them, and a restore leaves them out.
   */
  private async claim(ids: readonly string[], committed: ReadonlyMap<string, PartitionOffset>): Promise<'stable' | 'lost' | 'unanswered'> {
    const offsets: PartitionOffset[] = []
    const claims = new Map<string, CommitMark>()
    for (const def of this.parts.definitions.filter((d) => ids.includes(d.id))) {
      const inputs = this.inputsOf(def).map((p) => committed.get(`${p.topic}:${p.partition}`) ?? { ...p, offset: -1 })
      const claim = claimMark(taskMark(inputs.map((c) => c.metadata)))
      claims.set(def.id, claim)
      for (const c of inputs) {
        const offset = c.offset >= 0 ? c.offset : (await this.parts.offsets.watermarks(c.topic, c.partition)).lowOffset
        offsets.push({ topic: c.topic, partition: c.partition, offset, metadata: formatCommitMark(claim) })
      }
    }
    const result = await this.parts.offsets.commit(offsets)
    if (result === 'fenced') return 'lost'
    if (result === 'lapsed') {
      await new Promise((resolve) => setTimeout(resolve, CLAIM_RETRY_MS))
      return 'unanswered'
    }
    for (const [id, claim] of claims) {
      this.parts.restore.setMark(id, claim)
      this.parts.backend.assigned(id, claim)
    }
    return 'stable'
  }

  /**
   * Handled after the events before it. A failure stops the runtime, except, under exactly-once, the
   * group refusing offsets of a member it no longer has: whichever step meets that error (a commit of
   * revoked tasks, one that failed earlier and is met again here), the answer is the same as when the
   * task loop meets it, the tasks are lost and the consumer joins again.
   */
  private enqueue(step: () => Promise<void> | void): void {
    this.rebalancing = this.rebalancing.then(step).catch((err: unknown) => {
      const fenced = this.parts.exactlyOnce && !this.recovering && isMemberFenced(err)
      if (fenced && this.parts.isRunning()) this.handleMemberFenced(err as Error)
      // While the runtime stops: its last commit meets the same refusal, and aborts its transaction.
      else if (fenced && !this.parts.isStopped()) this.parts.logger.warn({ err }, `a revoked task's commit was refused while stopping (${(err as Error).message}); its records are processed again by the tasks' next owner`)
      else this.parts.fail(err)
    })
  }

  /** A commit failure while tasks are revoked: nothing when a recovery is under way (its tasks are lost), else it stops the runtime. */
  private unlessRecovering(err: unknown): false {
    if (this.recovering) return false
    throw err
  }

  /** Forgets these partitions: tasks leaving because of it. */
  private leaving(partitions: readonly TopicPartitionRef[]): string[] {
    const before = this.completeTasks()
    for (const p of partitions) this.assigned.delete(`${p.topic}:${p.partition}`)
    const after = new Set(this.completeTasks())
    return before.filter((id) => !after.has(id))
  }

  private unassign(partitions: TopicPartitionRef[]): void {
    for (const p of partitions) this.parts.fetcher.remove(p.topic, p.partition)
    this.parts.consumer.incrementalUnassign(partitions)
  }

  /** The input partitions of these tasks, by their topics' names on the cluster. */
  private inputPartitions(ids: readonly string[]): TopicPartitionRef[] {
    return this.parts.definitions.filter((d) => ids.includes(d.id)).flatMap((d) => this.inputsOf(d))
  }

  /** At least once: the marks of these tasks, from the group's offsets of their inputs (a standby's records follow them). */
  async marks(ids: readonly string[]): Promise<ReadonlyMap<string, CommitMark>> {
    const committed = await this.parts.offsets.committed(this.inputPartitions(ids), STABLE_ROUND_MS)
    const metadata = new Map(committed.map((c) => [`${c.topic}:${c.partition}`, c.metadata]))
    const out = new Map<string, CommitMark>()
    for (const def of this.parts.definitions.filter((d) => ids.includes(d.id))) out.set(def.id, taskMark(this.inputsOf(def).map((p) => metadata.get(`${p.topic}:${p.partition}`))))
    return out
  }

  private inputsOf(def: TaskDefinition): TopicPartitionRef[] {
    return def.subtopology.sourceTopics.map((t) => ({ topic: this.parts.plan.names.get(t) ?? t, partition: def.partition }))
  }
}

function parsePartition(tp: string): TopicPartitionRef {
  const at = tp.lastIndexOf(':')
  return { topic: tp.slice(0, at), partition: Number(tp.slice(at + 1)) }
}
