import { randomUUID } from 'node:crypto'
import { rmSync } from 'node:fs'
import type * as Client from '@confluentinc/kafka-javascript'
import { PunctualError } from '../errors.js'
import type { RuntimeMetrics, TaskEvent } from '../metrics.js'
import { runtimeMetrics } from '../runtime/runtime-metrics.js'
import { RuntimeEvents } from '../runtime/runtime-events.js'
import { RuntimeMetricsServer } from '../monitoring/metrics-server.js'
import { topologySvg } from '../processor/topology-svg.js'
import type { MetricsAddress } from '../monitoring/metrics-server.js'
import type { StreamTask } from '../processor/internal/task.js'
import type { Topology } from '../processor/topology.js'
import { concatSources } from '../runtime/changelog-source.js'
import type { ChangelogSource } from '../runtime/changelog-source.js'
import type { ChangelogRecord } from '../runtime/changelog.js'
import { Committer } from '../runtime/committer.js'
import type { CommitStats } from '../runtime/committer.js'
import type { RuntimeState } from '../runtime/runtime.js'
import { checkDeadLetterTopicOf, tasksOf } from '../runtime/task-factory.js'
import { warnOfSerdeFallbacks } from '../runtime/serde-fallbacks.js'
import type { TaskDefinition } from '../runtime/task-factory.js'
import { TaskLoop } from '../runtime/task-loop.js'
import { TaskManager } from '../runtime/task-manager.js'
import type { RestoreProgress } from '../runtime/task-manager.js'
import { StateDirectory } from '../state/state-directory.js'
import type { Logger } from '../util/logger.js'
import { ensureTopics, topicPartitions } from './admin.js'
import type { TopicAdmin } from './admin.js'
import { ChangelogReader } from './changelog-reader.js'
import type { RestoreConsumer } from './changelog-reader.js'
import { ChangelogTopics } from './changelog-topics.js'
import { loadKafkaClient } from './client.js'
import { ClientLog, unreachable } from './client-logs.js'
import type { LibrdkafkaLogLine } from './client-logs.js'
import { LocalCheckpoints } from './local-checkpoints.js'
import type { TaskChangelogPartitions } from './local-checkpoints.js'
import { validateKafkaRuntimeConfig } from './config.js'
import type { KafkaRuntimeConfig, ValidKafkaRuntimeConfig } from './config.js'
import { Fetcher } from './fetcher.js'
import type { FetchingConsumer, TopicPartitionRef } from './fetcher.js'
import { KafkaCommitBackend } from './kafka-commit-backend.js'
import { afterRestore, NO_COMMIT, parseCommitMark } from './commit-numbers.js'
import type { CommitMark } from './commit-numbers.js'
import { RepartitionPurger } from './repartition-purger.js'
import { localStores, queryableStore } from '../query/queryable-stores.js'
import type { QueryableStoreType } from '../query/queryable-stores.js'
import type { DeleteRecords } from './repartition-purger.js'
import type { CommitClient, PartitionOffset } from './kafka-commit-backend.js'
import { ProducerSink } from './producer-sink.js'
import type { RecordProducer } from './producer-sink.js'
import { KafkaRecordCollector } from './record-collector.js'
import type { TopicPlan } from './topics.js'
import { clientIdWithServer, InstanceDirectory } from './instance-metadata.js'
import { GlobalTopicsReader } from './global-reader.js'
import type { GlobalConsumer } from './global-reader.js'
import { GlobalStores } from '../processor/internal/global-stores.js'
import type { GroupAdmin, KeyQueryMetadata, StreamsMetadata } from './instance-metadata.js'
import { partitionForKey } from '../processor/murmur2.js'
import { Serdes } from '../processor/serdes.js'
import type { Serde } from '../processor/serdes.js'

/** librdkafka's rebalance codes (RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS / __REVOKE_PARTITIONS). */
const ASSIGN = -175
const REVOKE = -174
/**
 * Why an at-least-once offset commit may not go through for a while: the member left the group or its
 * assignment changed (it rejoins by itself), the coordinator moved or is loading, the broker is away.
 */
const GROUP_COMMIT_LAPSES = new Set([
  14, // COORDINATOR_LOAD_IN_PROGRESS (a broker that just restarted)
  15, // COORDINATOR_NOT_AVAILABLE
  16, // NOT_COORDINATOR
  22, // ILLEGAL_GENERATION
  25, // UNKNOWN_MEMBER_ID
  27, // REBALANCE_IN_PROGRESS
  110, // FENCED_MEMBER_EPOCH
  113, // STALE_MEMBER_EPOCH
  -185, // local: timed out
  -187, // local: all brokers down
  -195, // local: broker transport failure
])

/** librdkafka's delivery errors of a record not written in time, and of one purged by an abort. */
const MESSAGE_TIMED_OUT = -192
const PURGED = -152

/** librdkafka's logical offset "the beginning of the partition". */
const OFFSET_BEGINNING = -2
/** Methods the client's consumer has that its type declarations leave out (lib/kafka-consumer.js). */
type Consumer = Client.KafkaConsumer & {
  incrementalAssign(partitions: TopicPartitionRef[]): void
  incrementalUnassign(partitions: TopicPartitionRef[]): void
  assignmentLost(): boolean
  setDefaultIsTimeoutOnlyForFirstMessage(only: boolean): void
}

/** The client events the runtime listens to on both its producer and its consumer. */
interface ReportingClient {
  on(event: 'event.log', listener: (log: LibrdkafkaLogLine) => void): unknown
  on(event: 'event.error', listener: (err: Client.LibrdKafkaError) => void): unknown
}

/** How long one client call (a transaction step, a flush, a commit) may take before the runtime fails. */
const CALL_TIMEOUT_MS = 60_000
/**
 * librdkafka settings of the producer, before the user's (who may override them). No re-bootstrap when
 * every known broker is unreachable (a one-broker cluster restarting, a client cut off for a moment):
 * librdkafka 2.15 then drops those brokers, can keep the transaction's group coordinator cached on one of
 * them, and `sendOffsetsToTransaction` waits for it forever, past its timeout (librdkafka issues 5456
 * and 5511). Without re-bootstrap a step times out instead, and a producer that cannot abort in time is
 * replaced (`abortOrReplaceProducer`). The consumers keep librdkafka's default: without re-bootstrap a
 * consumer that dropped its brokers never finds its group coordinator again.
 */
const PRODUCER_DEFAULTS = { 'metadata.recovery.strategy': 'none' } as const
/**
 * librdkafka settings of the consumers (main, restore, global), before the user's. librdkafka does not
 * fetch a partition again for `fetch.queue.backoff.ms` (1 s by default) once its prefetch queue holds
 * `queued.min.messages`; a consumer that empties the queue faster than that waits out the rest of the
 * second. A short backoff only has the fetcher look at the queue more often (no request goes out while
 * it is full); `queued.max.messages.kbytes` still bounds the memory held.
 */
const CONSUMER_DEFAULTS = { 'fetch.queue.backoff.ms': 10 } as const

/**
 * How long tasks may wait for the group's offsets of their inputs before the runtime fails (Kafka
 * Streams' default `task.timeout.ms`), and how long one round of asking lasts before the rebalance
 * event handling is let go and the tasks are tried again.
 */
const TASK_TIMEOUT_MS = 300_000
/**
 * Why the group's stable offsets may never come: a transaction's offsets still pending at the group
 * coordinator. Ending them from here could throw away offsets of a transaction that committed (its
 * markers not yet written), so the runtime waits, as Kafka Streams does, and then says so.
 */
const PENDING_OFFSETS_HINT =
  "a transaction holding offsets of the group is still pending on the broker (its markers not written, or a hanging transaction left by an offsets request that arrived after its transaction ended); find and abort hanging transactions with the broker's kafka-transactions.sh (find-hanging, abort), then start the application again"
const STABLE_ROUND_MS = 20_000
/** How long one request for the group's committed offsets may go unanswered before it is made again. */
const COMMITTED_ATTEMPT_MS = 5_000
/** librdkafka's "local: timed out". */
const TIMED_OUT = -185
/** How long an abort of a failed transaction may take before the producer is replaced instead. */
const ABORT_TIMEOUT_MS = 10_000
/** How long a stop waits for the restore consumers to disconnect. */
const READER_DISCONNECT_WAIT_MS = 5_000

/**
 * Runs a topology on Apache Kafka, as Kafka Streams does: the instances of one application share its
 * input partitions through a consumer group (KIP-848's protocol with the broker's range assignor, which
 * keeps co-partitioned partitions together), one task per partition of each sub-topology's inputs.
 * A task assigned here is restored from its changelog topics, then processes; a task revoked is
 * committed first. Commits follow the processing guarantee (`KafkaCommitBackend`). The same task loop as
 * the embedded runtime processes in short slices on the event loop, and wall-clock punctuations fire on
 * the runtime's one armed timer whether or not records arrive.
 */
export class KafkaRuntime {
  private readonly config: ValidKafkaRuntimeConfig
  private readonly logger: Logger
  private readonly tasks: StreamTask[] = []
  private readonly loop: TaskLoop
  private currentState: RuntimeState = 'CREATED'
  private readonly events: RuntimeEvents<RuntimeState>
  private readonly metricsServer: RuntimeMetricsServer
  private failure: Error | undefined
  private committer: Committer | undefined
  private taskManager: TaskManager | undefined
  private client: typeof Client | undefined
  private consumer: Consumer | undefined
  private producer: Client.Producer | undefined
  /** One per instance; a producer that replaces a fenced one takes it over. */
  private readonly transactionalId: string
  private sink: ProducerSink | undefined
  /** A failed transaction is being aborted and its tasks rebuilt: nothing processes meanwhile. */
  private recovering = false
  /** A record of the open transaction was not delivered (told once per transaction). */
  private undelivered = false
  private fetcher: Fetcher | undefined
  private plan: TopicPlan | undefined
  private definitions: TaskDefinition[] = []
  private readonly changelogTopics = new Map<number, ChangelogTopics>()
  private readonly readers = new Map<string, ChangelogReader>()
  /** With repartition topics: deletes what commits passed, through an admin client of its own. */
  private purging: { purger: RepartitionPurger; admin: Client.KafkaJS.Admin } | undefined
  /** The global stores, and the reader of their topics (none without global stores). */
  private globals: GlobalStores | undefined
  private globalReader: GlobalTopicsReader | undefined
  /** The group's instances for instance lookups, with an admin client of its own once asked. */
  private directory: InstanceDirectory | undefined
  /** Rebalance events, handled one after the other (a revocation waits for its commit). */
  private rebalancing: Promise<void> = Promise.resolve()
  /** Partitions assigned to this instance, as `topic:partition` of the cluster. */
  private readonly assigned = new Set<string>()
  private stateDirectory: StateDirectory | undefined
  private readonly ownsStateDir: boolean
  /** Tasks' state kept in the state directory when they leave, so that they come back reading only the changelog's tail. */
  private checkpoints: LocalCheckpoints | undefined
  /** Per restoring task: the records its local checkpoint gave (restore report). */
  private readonly restoredLocally = new Map<string, number>()
  /** At least once, per task assigned: its last complete commit and numbers left out, from the group's offsets. */
  private readonly commitMarks = new Map<string, CommitMark>()
  private backend: KafkaCommitBackend | undefined

  constructor(
    private readonly topology: Topology,
    config: KafkaRuntimeConfig,
  ) {
    this.config = validateKafkaRuntimeConfig(config)
    checkDeadLetterTopicOf(topology, this.config.deadLetterTopic, 'KafkaRuntime config')
    this.ownsStateDir = config.stateDir === undefined
    this.transactionalId = `${this.config.applicationId}-${randomUUID()}`
    this.logger = this.config.logger.child?.({ applicationId: this.config.applicationId }) ?? this.config.logger
    this.metricsServer = new RuntimeMetricsServer(this.config.metrics)
    this.events = new RuntimeEvents(this.logger)
    this.loop = new TaskLoop({
      tasks: this.tasks,
      clock: this.config.clock,
      scheduler: this.config.scheduler,
      commitIntervalMs: this.config.commitIntervalMs,
      commitMaxRecords: this.config.commitMaxRecords,
      isDurable: () => true,
      isRunning: () => this.currentState === 'RUNNING' && !this.recovering,
      writeCommit: () => this.committer?.commit(this.tasks),
      restoreStep: (max, wake) => this.taskManager?.restoreStep(max, wake) ?? false,
      deliver: () => {
        this.fetcher?.resumeDrained()
        this.globalReader?.resumeDrained()
      },
      updateGlobals: () => this.globals?.update(),
      fail: (err) => this.onFailure(err),
    })
  }

  /** CREATED, RUNNING, PENDING_SHUTDOWN, NOT_RUNNING or ERROR. */
  get state(): RuntimeState {
    return this.currentState
  }

  /**
   * Calls `listener` when the runtime stops on a failure while running (not for a failing `start()`, which
   * rejects). A listener of any event that throws is logged.
   */
  on(event: 'error', listener: (err: Error) => void): this
  /** Calls `listener` with the new state and the previous one at each change of `state` (Kafka Streams' `StateListener`). */
  on(event: 'stateChange', listener: (next: RuntimeState, previous: RuntimeState) => void): this
  /** Calls `listener` at each step of a task's lifecycle: assigned, restoring (with progress), running, revoked or lost. */
  on(event: 'task', listener: (event: TaskEvent) => void): this
  on(event: 'error' | 'stateChange' | 'task', listener: ((err: Error) => void) | ((next: RuntimeState, previous: RuntimeState) => void) | ((event: TaskEvent) => void)): this {
    this.events.add(event, listener)
    return this
  }

  private setState(next: RuntimeState): void {
    const previous = this.currentState
    this.currentState = next
    this.events.stateChanged(next, previous)
  }

  /**
   * Connects, checks the topology against the cluster and creates the application's internal topics,
   * then joins the group; resolves once this instance is in it (tasks come with the assignment, restored
   * before they process). Fails, naming the problem, when the client is not installed, the cluster
   * cannot be reached or the topology does not fit it.
   */
  async start(): Promise<void> {
    if (this.currentState !== 'CREATED') throw new PunctualError('ILLEGAL_STATE', `cannot start the runtime in state ${this.currentState}`)
    warnOfSerdeFallbacks(this.topology, this.logger)
    const { config } = this
    this.stateDirectory = StateDirectory.open(config.stateDir, config.applicationId)
    try {
      const client = (this.client = await loadKafkaClient())
      this.plan = await this.createTopics(client)
      const plan = this.plan
      this.definitions = tasksOf(this.topology, (sub) => plan.partitions.get(sub.id) ?? 0)
      for (const sub of this.topology.subtopologies()) {
        this.changelogTopics.set(sub.id, new ChangelogTopics(config.applicationId, sub.id, sub.stores.map((s) => s.name)))
      }
      const counts = await this.partitionCounts(client)
      if (config.deadLetterTopic !== undefined && !counts.has(config.deadLetterTopic)) {
        throw new PunctualError('INVALID_CONFIG', `KafkaRuntime config: deadLetterTopic "${config.deadLetterTopic}" does not exist on the cluster; create it first (punctual does not choose its partitions or retention)`)
      }
      const producer = await this.connectProducer(client)
      const sink = (this.sink = new ProducerSink(producer as unknown as RecordProducer))
      const collector = new KafkaRecordCollector(plan.names, counts, sink.send)
      const exactlyOnce = config.processingGuarantee === 'exactly_once_v2'
      const consumer = this.createConsumer(client)
      this.checkpoints = new LocalCheckpoints(config.stateDir, (topic, partition) => this.endOffset(topic, partition), this.logger)
      const purger = await this.repartitionPurger(client, plan)
      const backend = (this.backend = new KafkaCommitBackend(exactlyOnce, this.commitClient(consumer), sink, (sub) => this.changelogTopics.get(sub) as ChangelogTopics, (t) => plan.names.get(t) ?? t, config.clock, (offsets) =>
        purger?.committed(offsets),
      ))
      this.committer = new Committer(backend)
      const globals = await this.readGlobalTopics(client, counts)
      this.fetcher = new Fetcher(consumer as unknown as FetchingConsumer, this.loop.onAppend, (err) => this.fail(new PunctualError('ILLEGAL_STATE', `fetching: ${err.message}`, { cause: err })))
      const fetcher = this.fetcher
      this.taskManager = new TaskManager(
        this.definitions,
        {
          io: { inputs: (topic, partition) => fetcher.get(plan.names.get(topic) ?? topic, partition), collector },
          globalStores: (name) => globals.get(name),
          clock: config.clock,
          maxTaskIdleMs: config.maxTaskIdleMs,
          defaultTimestampExtractor: config.defaultTimestampExtractor,
          errorHandler: config.errorHandler,
          deadLetterTopic: config.deadLetterTopic,
          stateDir: config.stateDir,
          committer: this.committer,
          onWallClockChange: this.loop.onWallClockChange,
          onTaskEvent: this.events.task,
          onRestored: ({ taskId, count, ms }) => {
            const local = this.restoredLocally.get(taskId) ?? 0
            this.restoredLocally.delete(taskId)
            const reader = this.readers.get(taskId)
            const skipped = reader?.skipped ?? 0
            const mark = this.commitMarks.get(taskId)
            // Numbers left out stay void, and the task's next commit is numbered past them.
            if (mark !== undefined && reader !== undefined) this.backend?.assigned(taskId, afterRestore(mark, reader.highestSkipped))
            const how = local > 0 ? `its local checkpoint (${local} records) and the changelog's tail (${count - local} records)` : `its changelog topics (${count} records)`
            const cut = skipped > 0 ? `; ${skipped} records of an incomplete commit left out` : ''
            this.logger.info({ taskId, records: count, local, skipped, ms: Math.round(ms) }, `task ${taskId} restored from ${how}${cut}`)
          },
        },
        this.tasks,
      )
      if (exactlyOnce) await promised((cb) => producer.beginTransaction(cb))
      await promised((cb) => consumer.connect({}, cb))
      this.setState('RUNNING')
      this.metricsServer.start(
        { metrics: () => this.metrics(), topologySvg: topologySvg(this.topology) },
        (address) => this.logger.info({ url: address.url, page: address.pageUrl }, `metrics at ${address.url}, live page at ${address.pageUrl}`),
        (err) => this.fail(err),
      )
      const sources = [...new Set(this.topology.subtopologies().flatMap((s) => s.sourceTopics))].map((t) => plan.names.get(t) ?? t)
      consumer.subscribe(sources)
      fetcher.start()
      this.loop.rearm()
      this.logger.info({ bootstrapServers: config.bootstrapServers, processingGuarantee: config.processingGuarantee, topics: sources.join(',') }, 'started: joining the group')
    } catch (err) {
      await this.shutDown()
      this.setState('ERROR')
      throw err
    }
  }

  /** Commits the tasks, leaves the group and disconnects. Rejects with the failure if the runtime had stopped on an error. */
  async stop(): Promise<void> {
    if (this.currentState === 'RUNNING') {
      this.setState('PENDING_SHUTDOWN')
      this.loop.disarm()
      try {
        await this.rebalancing
        // The consumer keeps polling meanwhile: librdkafka reports an offset commit's result through it.
        await this.loop.commitAndWait()
        // A temporary state directory goes with the instance: nothing to keep for a later run.
        if (!this.ownsStateDir) await this.saveCheckpoints(this.taskIds())
        await this.fetcher?.stop()
        this.logger.info({ processedRecords: this.metrics().processedRecords }, 'stopping: committed')
        this.setState('NOT_RUNNING')
      } catch (err) {
        this.fail(err)
      }
      await this.shutDown()
    } else if (this.currentState === 'CREATED') {
      this.setState('NOT_RUNNING')
    }
    if (this.failure !== undefined) throw this.failure
  }

  /** Counters of the tasks this instance ran (active ones and those it no longer has), and each active task as it stands. */
  metrics(): RuntimeMetrics {
    return runtimeMetrics({ applicationId: this.config.applicationId, state: this.currentState, clock: this.config.clock, tasks: this.taskManager, commits: this.committer?.stats() })
  }

  /** Where the metrics are served (the `metrics` setting), once listening; undefined without the setting. */
  metricsAddress(): Promise<MetricsAddress | undefined> {
    return this.metricsServer.address()
  }

  /** How many commits ran and how long they took (undefined before start). */
  commitStats(): CommitStats | undefined {
    return this.committer?.stats()
  }

  /**
   * A read-only view of store `name` for interactive queries, over the tasks this instance runs now (as
   * `EmbeddedRuntime.store`; Kafka Streams' `KafkaStreams.store` with local stores): a key whose task
   * another instance runs is not found here. Calls while the runtime is not running fail with
   * ILLEGAL_STATE. While a task of this instance that holds the store restores (or waits for the group's
   * offsets of its inputs to be stable first), a lookup that finds nothing, and every range or scan,
   * fails with STORE_NOT_READY (retriable): `queryMetadataForKey` names this instance for the task's keys
   * already, and "absent" would be wrong for a key its changelog holds.
   */
  store<T>(name: string, type: QueryableStoreType<T>): T {
    return queryableStore(
      this.topology,
      name,
      type,
      (storeName) => {
        if (this.currentState !== 'RUNNING') {
          throw new PunctualError('ILLEGAL_STATE', `store "${storeName}": the runtime is ${this.currentState}; stores can be queried while it runs`)
        }
        const global = this.globals?.get(storeName)
        return global === undefined ? localStores(this.tasks, storeName) : [global]
      },
      (storeName) => this.tasksNotReady(storeName),
    )
  }

  /** The tasks assigned here that hold store `storeName` and do not run yet (waiting for stable offsets, or restoring). */
  private tasksNotReady(storeName: string): string[] {
    const running = new Set(this.taskIds())
    const holding = new Set(this.definitions.filter((d) => d.subtopology.stores.some((b) => b.name === storeName)).map((d) => d.id))
    return this.completeTasks().filter((id) => holding.has(id) && !running.has(id))
  }

  /**
   * Which instance holds `key` of store `storeName` now (Kafka Streams' `queryMetadataForKey`): the key's
   * partition (its bytes under `keySerde`, Kafka's default partitioner over the store's sub-topology's
   * partition count), and the instance of the group that has it, by the `applicationServer` it set.
   * Undefined while no instance has it (during a rebalance). Asks the group coordinator each call. Needs
   * `applicationServer` and a running runtime; fails with ILLEGAL_STATE otherwise, and with
   * INVALID_TOPOLOGY for a store the topology lacks.
   */
  async queryMetadataForKey<K>(storeName: string, key: K, keySerde: Serde<K> = Serdes.String() as unknown as Serde<K>): Promise<KeyQueryMetadata | undefined> {
    const directory = this.instanceDirectory('queryMetadataForKey')
    const plan = this.plan as TopicPlan
    const sub = this.topology.subtopologies().find((s) => s.stores.some((b) => b.name === storeName))
    if (sub === undefined) throw new PunctualError('INVALID_TOPOLOGY', `queryMetadataForKey: the topology has no store "${storeName}" in its tasks`)
    const topic = plan.names.get(sub.sourceTopics[0] as string) ?? (sub.sourceTopics[0] as string)
    const bytes = keySerde.serialize(key, topic)
    if (bytes === null) throw new PunctualError('INVALID_CONFIG', `queryMetadataForKey("${storeName}"): the key serializes to null`)
    const partitions = plan.partitions.get(sub.id) ?? 0
    return directory.keyMetadata({ topic, partitions }, partitionForKey(bytes, partitions))
  }

  /**
   * Every instance of the application that set an `applicationServer`, with its input partitions and the
   * stores of its tasks (Kafka Streams' `metadataForAllStreamsClients`), as the group has them now.
   */
  async metadataForAllStreamsClients(): Promise<StreamsMetadata[]> {
    const directory = this.instanceDirectory('metadataForAllStreamsClients')
    const plan = this.plan as TopicPlan
    const storesByTopic = new Map<string, string[]>()
    for (const sub of this.topology.subtopologies()) {
      for (const t of sub.sourceTopics) storesByTopic.set(plan.names.get(t) ?? t, sub.stores.map((b) => b.name))
    }
    return directory.all((topic) => storesByTopic.get(topic) ?? [])
  }

  private instanceDirectory(operation: string): InstanceDirectory {
    const server = this.config.applicationServer
    if (server === undefined) throw new PunctualError('ILLEGAL_STATE', `${operation}: set applicationServer ('host:port') on every instance, so that the group knows where each one answers`)
    if (this.currentState !== 'RUNNING') throw new PunctualError('ILLEGAL_STATE', `${operation}: the runtime is ${this.currentState}; instances can be looked up while it runs`)
    this.directory ??= new InstanceDirectory(this.config.applicationId, async () => {
      const admin = this.admin(this.client as typeof Client)
      await admin.connect()
      return admin as unknown as GroupAdmin
    })
    return this.directory
  }

  /** The tasks this instance runs now. */
  taskIds(): string[] {
    return this.tasks.map((t) => t.taskId.toString())
  }

  /** The tasks restoring here, and how far each has come. */
  restoreProgress(): RestoreProgress[] {
    return this.taskManager?.restoreProgress() ?? []
  }

  /** The runtime's first call to the cluster: a cluster it cannot reach fails here, naming the bootstrap servers. */
  private async createTopics(client: typeof Client): Promise<TopicPlan> {
    const log = new ClientLog(this.logger, 'admin')
    const admin = this.admin(client, log)
    await admin.connect()
    try {
      return await ensureTopics(admin as unknown as TopicAdmin, this.topology, this.config.applicationId)
    } catch (err) {
      throw unreachable(err, this.config.bootstrapServers, log.lastFailure()) ?? err
    } finally {
      await admin.disconnect()
    }
  }

  private async partitionCounts(client: typeof Client): Promise<Map<string, number>> {
    const admin = this.admin(client)
    await admin.connect()
    try {
      return await topicPartitions(admin as unknown as TopicAdmin)
    } finally {
      await admin.disconnect()
    }
  }

  /** A purger of the repartition topics, with its admin client connected; none without repartition topics. */
  private async repartitionPurger(client: typeof Client, plan: TopicPlan): Promise<RepartitionPurger | undefined> {
    if (plan.repartition.size === 0) return undefined
    const admin = this.admin(client)
    await admin.connect()
    const deleteRecords: DeleteRecords = async (topic, partitions) => {
      await admin.deleteTopicRecords({ topic, partitions: partitions.map((p) => ({ partition: p.partition, offset: String(p.offset) })) })
    }
    const { config } = this
    const purger = new RepartitionPurger((t) => plan.repartition.has(t), deleteRecords, config.clock, config.repartitionPurgeIntervalMs, this.logger)
    this.purging = { purger, admin }
    return purger
  }

  /** An admin client, its reports (which the client's JavaScript layer would print to the console) on the logger. */
  private admin(client: typeof Client, log = new ClientLog(this.logger, 'admin')): Client.KafkaJS.Admin {
    const kafka = new client.KafkaJS.Kafka({ ...this.config.client, 'bootstrap.servers': this.config.bootstrapServers, kafkaJS: { logger: log.kafkaJsLogger() } } as unknown as Client.KafkaJS.CommonConstructorConfig)
    return kafka.admin()
  }

  private async connectProducer(client: typeof Client): Promise<Client.Producer> {
    const { config } = this
    const exactlyOnce = config.processingGuarantee === 'exactly_once_v2'
    const producer = new client.RdKafka.Producer({
      // Large enough for a commit's outputs and changelog records; commitMaxRecords bounds them.
      'queue.buffering.max.messages': 1_000_000,
      'linger.ms': 5,
      // As Kafka Streams: a crashed instance's open transaction blocks read_committed readers this long at most.
      ...(exactlyOnce ? { 'transaction.timeout.ms': 10_000 } : {}),
      ...PRODUCER_DEFAULTS,
      ...config.client,
      ...config.producer,
      'bootstrap.servers': config.bootstrapServers,
      'enable.idempotence': true,
      // Errors only: a report per record would be a callback per record.
      dr_cb: true,
      'delivery.report.only.error': true,
      ...(exactlyOnce ? { 'transactional.id': this.transactionalId } : {}),
    } as Client.ProducerGlobalConfig)
    this.producer = producer
    this.watch(producer as unknown as ReportingClient, 'producer')
    producer.on('delivery-report', (err, report: { topic?: string; partition?: number } | undefined) => {
      if (!err || producer !== this.producer) return
      const where = report?.topic === undefined ? '' : ` to ${report.topic}-${report.partition ?? '?'}`
      // Under exactly-once a record that did not get through in time fails its transaction, which is
      // aborted and redone; records purged by that abort are expected. A record the broker refuses (a
      // timestamp out of its range, too large) would be refused again: that stops the runtime.
      if (exactlyOnce && (err.code === MESSAGE_TIMED_OUT || err.code === PURGED)) {
        if (!this.undelivered && err.code === MESSAGE_TIMED_OUT) this.logger.warn({ code: err.code }, `a record could not be written${where}: ${err.message}; its transaction will be aborted`)
        this.undelivered = true
      } else this.fail(new PunctualError('ILLEGAL_STATE', `a record could not be written${where}: ${err.message}`, { cause: err }))
    })
    producer.setPollInterval(50)
    await promised((cb) => producer.connect({}, cb))
    if (exactlyOnce) await promised((cb) => producer.initTransactions(CALL_TIMEOUT_MS, cb))
    return producer
  }

  private createConsumer(client: typeof Client): Consumer {
    const { config } = this
    const consumer = new client.RdKafka.KafkaConsumer({
      ...CONSUMER_DEFAULTS,
      ...config.client,
      ...config.consumer,
      'bootstrap.servers': config.bootstrapServers,
      'group.id': config.applicationId,
      ...(config.applicationServer === undefined
        ? {}
        : { 'client.id': clientIdWithServer(String(config.consumer['client.id'] ?? config.client['client.id'] ?? `punctual-${config.applicationId}`), config.applicationServer) }),
      // KIP-848: incremental, and the broker's range assignor keeps co-partitioned partitions together.
      'group.protocol': 'consumer',
      'group.remote.assignor': 'range',
      'enable.auto.commit': false,
      'auto.offset.reset': 'earliest',
      'isolation.level': config.processingGuarantee === 'exactly_once_v2' ? 'read_committed' : 'read_uncommitted',
      // A partition fetched to its end is known caught up: a task of several partitions waits only for ones that are not (KIP-695).
      'enable.partition.eof': true,
      rebalance_cb: (err: Client.LibrdKafkaError, partitions: Client.TopicPartition[]) => this.onRebalance(err.code, partitions),
      // Reports each offset commit's result as an 'offset.commit' event (at_least_once waits for it).
      offset_commit_cb: true,
    } as Client.ConsumerGlobalConfig) as Consumer
    consumer.setDefaultConsumeTimeout(500)
    consumer.setDefaultIsTimeoutOnlyForFirstMessage(true)
    this.consumer = consumer
    this.watch(consumer as unknown as ReportingClient, 'consumer')
    return consumer
  }

  /**
   * Sends a client's own reports to the logger (`ClientLog`): librdkafka's log lines at the level of
   * their severity, its errors as warnings, each text once a minute. It retries connections itself; a
   * fatal error (a fenced producer, say) stops the runtime.
   */
  private watch(client: ReportingClient, name: string): void {
    const log = new ClientLog(this.logger, name)
    client.on('event.log', (line: LibrdkafkaLogLine) => log.line(line))
    client.on('event.error', (err: Client.LibrdKafkaError) => {
      if (name === 'producer' && (client as unknown) !== this.producer) return
      if (err.isFatal === true) {
        // A fenced or broken transactional producer is replaced; anything else fatal stops the runtime.
        if (name === 'producer' && this.config.processingGuarantee === 'exactly_once_v2') this.recover(err as unknown as Error)
        else this.fail(new PunctualError('ILLEGAL_STATE', `the Kafka ${name} failed: ${err.message}`, { cause: err }))
        return
      }
      log.error(err)
    })
  }

  /** The transaction and flush calls of a commit, on the runtime's producer of the moment (one replaces a fenced one). */
  private commitClient(consumer: Client.KafkaConsumer): CommitClient {
    const producer = (): Client.Producer => this.producer as Client.Producer
    let offsetsCommitted: ((err: Client.LibrdKafkaError | undefined) => void) | undefined
    consumer.on('offset.commit', (err) => {
      const done = offsetsCommitted
      offsetsCommitted = undefined
      done?.(err ?? undefined)
    })
    return {
      sendOffsetsToTransaction: (offsets) => retried(() => promised((cb) => producer().sendOffsetsToTransaction(offsets, consumer, CALL_TIMEOUT_MS, cb)), abortOnTimeout),
      commitTransaction: () => retried(() => promised((cb) => producer().commitTransaction(CALL_TIMEOUT_MS, cb))),
      beginTransaction: () => promised((cb) => producer().beginTransaction(cb)),
      flush: () => promised((cb) => producer().flush(CALL_TIMEOUT_MS, cb)),
      commitOffsets: (offsets: PartitionOffset[]) =>
        new Promise<void>((resolve, reject) => {
          offsetsCommitted = (err) => {
            if (err === undefined) resolve()
            else if (!GROUP_COMMIT_LAPSES.has(err.code)) reject(new PunctualError('ILLEGAL_STATE', `committing the group's offsets: ${err.message}`, { cause: err }))
            else {
              // The commit's records are all written, but the group does not name it: a restore before
              // the next commit resumes from the one before (records are processed again, not lost).
              this.logger.warn({ code: err.code }, `the group's offsets were not committed (${err.message}); the next commit writes them`)
              resolve()
            }
          }
          consumer.commit(offsets)
        }),
    }
  }

  /** A rebalance event: handled after the ones before it; the consumer waits for our (un)assign call. */
  private onRebalance(code: number, partitions: Client.TopicPartition[]): void {
    const refs = partitions.map((p) => ({ topic: p.topic, partition: p.partition }))
    const what = code === ASSIGN ? 'assign' : code === REVOKE ? 'revoke' : `rebalance error ${code}`
    const names = refs.map((p) => `${p.topic}-${p.partition}`).join(',')
    this.logger.debug({ partitions: names }, `group: ${what}`)
    this.rebalancing = this.rebalancing
      .then(() => (code === ASSIGN ? this.assign(refs) : code === REVOKE ? this.revoke(refs) : undefined))
      .then(() => this.logger.debug({ partitions: names }, `group: ${what} done`))
      .catch((err: unknown) => this.fail(err))
  }

  private async assign(partitions: TopicPartitionRef[]): Promise<void> {
    const consumer = this.consumer as Consumer
    const fetcher = this.fetcher as Fetcher
    for (const p of partitions) {
      this.assigned.add(`${p.topic}:${p.partition}`)
      // Where the task reads first comes from its restored positions; fetching starts at the group's offset.
      fetcher.add(p.topic, p.partition, 0)
    }
    consumer.incrementalAssign(partitions)
    fetcher.assigned(partitions)
    if (this.currentState !== 'RUNNING') return
    await this.startAssignedTasks(Date.now())
  }

  /**
   * Starts the tasks whose input partitions are all assigned and that are neither running nor restoring:
   * once the group's offsets of their inputs are stable, they restore and then process. When the group
   * does not answer within STABLE_ROUND_MS (a coordinator still loading after a broker restart, a member
   * that must rejoin first), the rebalance event handling is let go and the tasks are tried again after
   * the group events that came meanwhile, for TASK_TIMEOUT_MS in all: holding the handling could keep the
   * consumer from the very rejoin that answers.
   */
  private async startAssignedTasks(since: number): Promise<void> {
    const consumer = this.consumer as Consumer
    const manager = this.taskManager as TaskManager
    const ids = this.completeTasks().filter((id) => !this.taskIds().includes(id) && !manager.restoringIds().includes(id))
    if (ids.length === 0) return
    this.logger.info({ tasks: ids.join(',') }, 'tasks assigned')
    const stable = await this.stableOffsets(ids, () => consumer.assignmentLost())
    if (stable === 'lost') {
      this.logger.info({ tasks: ids.join(',') }, 'the assignment was lost while the group offsets were read: the tasks wait for the next one')
      return
    }
    if (stable === 'unanswered') {
      const waited = Date.now() - since
      if (waited >= TASK_TIMEOUT_MS) {
        throw new PunctualError('ILLEGAL_STATE', `the group's offsets of tasks ${ids.join(', ')} were not answered in ${Math.round(waited / 1000)} s: ${PENDING_OFFSETS_HINT}`)
      }
      this.logger.warn({ tasks: ids.join(','), waitedMs: waited }, "the group's offsets of the tasks were not answered: asked again after the group events that came meanwhile")
      this.rebalancing = this.rebalancing.then(() => (this.currentState === 'RUNNING' ? this.startAssignedTasks(since) : undefined)).catch((err: unknown) => this.fail(err))
      return
    }
    await this.checkpoints?.load(ids.map((id) => this.changelogPartitions(id)))
    manager.assign(ids, (taskId) => this.restoreSource(taskId))
    this.loop.scheduleRun()
    this.loop.rearm()
  }

  private async revoke(partitions: TopicPartitionRef[]): Promise<void> {
    const consumer = this.consumer as Consumer
    const before = new Set(this.completeTasks())
    for (const p of partitions) this.assigned.delete(`${p.topic}:${p.partition}`)
    const after = new Set(this.completeTasks())
    const ids = [...before].filter((id) => !after.has(id))
    const manager = this.taskManager as TaskManager
    if (ids.length > 0) {
      this.logger.info({ tasks: ids.join(','), lost: consumer.assignmentLost() }, 'tasks revoked')
      for (const id of ids) this.readers.get(id)?.close()
      // Tasks of a failed transaction go back to their last commit: nothing of theirs can be committed.
      if (consumer.assignmentLost() || this.recovering) manager.lose(ids)
      else if (this.currentState === 'RUNNING') {
        await this.loop.settled()
        const leaving = this.checkpointRecords(ids)
        manager.revoke(ids, () => this.loop.commitNow())
        await this.loop.settled()
        // Before the partitions go: their changelogs' ends are still this commit's.
        await this.checkpoints?.save(leaving)
      }
    }
    for (const p of partitions) this.fetcher?.remove(p.topic, p.partition)
    consumer.incrementalUnassign(partitions)
  }

  /**
   * Waits until no transaction that commits offsets of these tasks' inputs is pending (the group's
   * offsets are stable, KIP-447: under read_committed librdkafka asks for stable offsets and retries
   * until they are). A transaction's commit returns before its markers are written, and an aborted one
   * of a crashed instance is pending until its timeout: restoring before would read the changelog up to
   * a last stable offset short of the previous owner's last commit, and resume from older positions
   * than the records it already processed.
   */
  private async stableOffsets(ids: readonly string[], lost: () => boolean): Promise<'stable' | 'lost' | 'unanswered'> {
    const consumer = this.consumer as Consumer
    const partitions = this.inputPartitions(ids)
    try {
      const committed = await committedOffsets(consumer, partitions, lost, STABLE_ROUND_MS)
      if (this.config.processingGuarantee === 'at_least_once') this.noteCommitMarks(ids, committed)
      return 'stable'
    } catch (err) {
      if (err instanceof AssignmentLost) return 'lost'
      if (err instanceof OffsetsUnanswered) return 'unanswered'
      throw err
    }
  }

  /** The input partitions of these tasks, by their topics' names on the cluster. */
  private inputPartitions(ids: readonly string[]): TopicPartitionRef[] {
    const plan = this.plan as TopicPlan
    return this.definitions.filter((d) => ids.includes(d.id)).flatMap((d) => d.subtopology.sourceTopics.map((t) => ({ topic: plan.names.get(t) ?? t, partition: d.partition })))
  }

  /**
   * At least once: each task's mark is the one with the highest commit number among its offsets' metadata
   * (a commit's offsets go out after everything it wrote is acknowledged; none before its first commit).
   * Its restore applies what the mark covers, and its next commit follows it.
   */
  private noteCommitMarks(ids: readonly string[], committed: readonly Client.TopicPartitionOffset[]): void {
    const plan = this.plan as TopicPlan
    for (const def of this.definitions.filter((d) => ids.includes(d.id))) {
      const topics = new Set(def.subtopology.sourceTopics.map((t) => plan.names.get(t) ?? t))
      let mark = NO_COMMIT
      for (const c of committed) {
        if (c.partition !== def.partition || !topics.has(c.topic)) continue
        const m = parseCommitMark((c as { metadata?: string }).metadata)
        if (m !== undefined && m.n > mark.n) mark = m
      }
      this.commitMarks.set(def.id, mark)
      this.backend?.assigned(def.id, mark)
    }
  }

  /** Tasks all of whose input partitions are assigned here. */
  private completeTasks(): string[] {
    const plan = this.plan as TopicPlan
    return this.definitions.filter((d) => d.subtopology.sourceTopics.every((t) => this.assigned.has(`${plan.names.get(t) ?? t}:${d.partition}`))).map((d) => d.id)
  }

  /** Where a task assigned here restores from: its local checkpoint, if it has one, then its changelog topics. */
  private restoreSource(taskId: string): ChangelogSource {
    const local = this.checkpoints?.take(taskId)
    if (local === undefined) return this.changelogReader(taskId)
    this.restoredLocally.set(taskId, local.count)
    return concatSources(local.source(), this.changelogReader(taskId, local.offsets))
  }

  /** A task's partition of each of its sub-topology's changelog topics. */
  private changelogPartitions(taskId: string): TaskChangelogPartitions {
    const def = this.definitions.find((d) => d.id === taskId) as TaskDefinition
    return { taskId, partition: def.partition, topics: (this.changelogTopics.get(def.subtopology.id) as ChangelogTopics).topics() }
  }

  /** The state of these active tasks as changelog records, for their local checkpoints. */
  private checkpointRecords(ids: readonly string[]): Array<TaskChangelogPartitions & { records: ChangelogRecord[] }> {
    const committer = this.committer as Committer
    return this.tasks.filter((t) => ids.includes(t.taskId.toString())).map((task) => ({ ...this.changelogPartitions(task.taskId.toString()), records: committer.codecOf(task).checkpointRecords(task.checkpoint()) }))
  }

  /** Keeps these active tasks' state, just committed, in the state directory. */
  private async saveCheckpoints(ids: readonly string[]): Promise<void> {
    await this.checkpoints?.save(this.checkpointRecords(ids))
  }

  /** A partition's end offset (its high watermark), asked of the broker. */
  private endOffset(topic: string, partition: number): Promise<number> {
    const consumer = this.consumer as Consumer
    return new Promise((resolve, reject) =>
      consumer.queryWatermarkOffsets(topic, partition, CALL_TIMEOUT_MS, (err, offsets) =>
        err ? reject(new PunctualError('ILLEGAL_STATE', `reading the end offset of ${topic}-${partition}: ${err.message}`, { cause: err })) : resolve(offsets.highOffset),
      ),
    )
  }

  /**
   * The global stores (Kafka Streams' global state): their topics read on a consumer of their own, from
   * the beginning to the ends they have now, before the instance joins the group; then kept up to date
   * ahead of each processing slice. A global topic is the store's changelog: nothing else is written.
   */
  private async readGlobalTopics(client: typeof Client, counts: ReadonlyMap<string, number>): Promise<GlobalStores> {
    const defs = this.topology.globalStores()
    const { config } = this
    const topics = new Map<string, number>()
    for (const def of defs) {
      const count = counts.get(def.topic)
      if (count === undefined) throw new PunctualError('INVALID_TOPOLOGY', `global store "${def.builder.name}": its topic ${def.topic} does not exist on the cluster`)
      topics.set(def.topic, count)
    }
    let reader: GlobalTopicsReader | undefined
    if (topics.size > 0) {
      const consumer = new client.RdKafka.KafkaConsumer({
        ...CONSUMER_DEFAULTS,
        ...config.client,
        ...config.consumer,
        'bootstrap.servers': config.bootstrapServers,
        // Assigned by hand, never committed: the id only names the client's group, which it never joins.
        'group.id': `${config.applicationId}-global`,
        'enable.auto.commit': false,
        'isolation.level': config.processingGuarantee === 'exactly_once_v2' ? 'read_committed' : 'read_uncommitted',
      } as Client.ConsumerGlobalConfig) as Consumer
      consumer.setDefaultConsumeTimeout(500)
      consumer.setDefaultIsTimeoutOnlyForFirstMessage(true)
      this.watch(consumer as unknown as ReportingClient, 'global consumer')
      reader = this.globalReader = new GlobalTopicsReader(consumer as unknown as GlobalConsumer, topics, this.loop.onAppend, (err) => this.fail(err), this.logger)
    }
    const globals = new GlobalStores(defs, (topic) => reader?.partitions(topic) ?? [], () => config.clock.now(), (topic, partition, offset, error) => {
      const message = `global store topic ${topic}-${partition} offset ${offset}: ${error instanceof Error ? error.message : String(error)}`
      if (config.errorHandler({ reason: 'deserialization', taskId: 'global', topic, partition, offset, error, message }) === 'fail') {
        throw new PunctualError('DESERIALIZATION', message, { cause: error })
      }
    })
    this.globals = globals
    if (reader !== undefined) {
      await reader.start()
      // Applied as they come: the reader pauses a partition whose fetched records are not read.
      await reader.caughtUp(() => {
        globals.update()
        reader.resumeDrained()
      })
    }
    globals.update()
    if (topics.size > 0) this.logger.info({ stores: defs.map((d) => d.builder.name).join(',') }, 'global stores read to the ends of their topics')
    return globals
  }

  /** A reader of a task's changelog topics (from the beginning, or from `from`), on a consumer of its own (assigned by hand, no group). */
  private changelogReader(taskId: string, from?: Readonly<Record<string, number>>): ChangelogReader {
    const client = this.client as typeof Client
    const def = this.definitions.find((d) => d.id === taskId) as TaskDefinition
    const consumer = new client.RdKafka.KafkaConsumer({
      ...CONSUMER_DEFAULTS,
      ...this.config.client,
      ...this.config.consumer,
      'bootstrap.servers': this.config.bootstrapServers,
      'group.id': `${this.config.applicationId}-restore`,
      'enable.auto.commit': false,
      'enable.partition.eof': true,
      'isolation.level': 'read_committed',
      // A restore reads to the end and stops: the broker answers a fetch at the end at once, rather than
      // holding it 500 ms for records that are not coming, and the end (an EOF event, not a message)
      // does not wait out a long consume call.
      'fetch.wait.max.ms': 10,
    } as Client.ConsumerGlobalConfig) as Consumer
    consumer.setDefaultConsumeTimeout(50)
    consumer.setDefaultIsTimeoutOnlyForFirstMessage(true)
    // Its reports on the logger too; its failures reach the runtime through the reader.
    const log = new ClientLog(this.logger, `restore consumer ${taskId}`)
    consumer.on('event.log', (line: LibrdkafkaLogLine) => log.line(line))
    consumer.on('event.error', (err: Client.LibrdKafkaError) => log.error(err))
    const topics = this.changelogTopics.get(def.subtopology.id) as ChangelogTopics
    const reader = new ChangelogReader(consumer as unknown as RestoreConsumer, topics, def.partition, (err) => this.fail(err), from, this.commitMarks.get(taskId))
    this.readers.set(taskId, reader)
    reader.open((err) => this.fail(new PunctualError('ILLEGAL_STATE', `task ${taskId}: connecting its restore consumer: ${err.message}`, { cause: err })))
    return reader
  }

  /**
   * A failure of the task loop: under exactly-once, a transaction librdkafka says must be aborted (a
   * record not delivered, a broker away too long) is recovered from; anything else stops the runtime.
   */
  private onFailure(err: unknown): void {
    const e = err as { isTxnRequiresAbort?: boolean; isFatal?: boolean }
    if (this.config.processingGuarantee === 'exactly_once_v2' && (e.isTxnRequiresAbort === true || e.isFatal === true)) this.recover(err as Error)
    else this.fail(err)
  }

  /**
   * Aborts the failed transaction and puts every task back to its last commit, as Kafka Streams does
   * with corrupted tasks: the tasks are closed without a commit and restored from their changelogs (which
   * hold committed transactions only), the input partitions are fetched again from the group's committed
   * offsets, and a new transaction begins. Runs between rebalance events, and nothing processes meanwhile.
   */
  private recover(err: Error): void {
    if (this.recovering) return
    this.recovering = true
    this.loop.disarm()
    this.logger.warn({ err }, `a transaction failed: aborting it; the tasks go back to their last commit (${err.message})`)
    this.rebalancing = this.rebalancing
      .then(async () => {
        const fetcher = this.fetcher as Fetcher
        const manager = this.taskManager as TaskManager
        await this.loop.discardFailedCommit()
        await this.abortOrReplaceProducer()
        this.undelivered = false
        this.sink?.discard()
        const ids = [...this.taskIds(), ...manager.restoringIds()]
        for (const id of ids) this.readers.get(id)?.close()
        manager.lose(ids)
        // Fetching restarts at the committed offsets; messages fetched before are dropped with their partitions.
        await fetcher.stop()
        const partitions = [...this.assigned].map((tp) => ({ topic: tp.slice(0, tp.lastIndexOf(':')), partition: Number(tp.slice(tp.lastIndexOf(':') + 1)) }))
        for (const p of partitions) {
          fetcher.remove(p.topic, p.partition)
          fetcher.add(p.topic, p.partition, 0)
        }
        const lost = (): boolean => (this.consumer as Consumer).assignmentLost()
        // The new transaction first (a local step), so a commit may follow the restore at once.
        const producer = this.producer as Client.Producer
        await promised((cb) => producer.beginTransaction(cb))
        const sought = await this.seekToCommitted(partitions, lost).then(
          () => true,
          (e: unknown) => (e instanceof AssignmentLost ? false : Promise.reject(e)),
        )
        fetcher.assigned(partitions)
        fetcher.start()
        this.sink?.release()
        this.recovering = false
        if (sought) {
          this.logger.info({}, 'recovered from the failed transaction: the tasks restore from their last commit')
          await this.startAssignedTasks(Date.now())
        } else {
          this.logger.info({}, "recovered from the failed transaction; the group took this instance's partitions back meanwhile (its member was fenced): their tasks restore when they are assigned again")
        }
        this.loop.scheduleRun()
        this.loop.rearm()
      })
      .catch((e: unknown) => this.fail(e))
  }

  /**
   * Aborts the open transaction; a producer that cannot (fenced: the coordinator aborted the transaction
   * when it timed out, or another producer took the transactional id) is replaced by a new one, whose
   * initialization aborts whatever its id left open.
   */
  private async abortOrReplaceProducer(): Promise<void> {
    const old = this.producer as Client.Producer
    try {
      await retried(() => promised((cb) => old.abortTransaction(ABORT_TIMEOUT_MS, cb)), abortOnTimeout)
      return
    } catch (err) {
      // Fenced, or no answer from its coordinator: a new producer finds the coordinator afresh.
      const e = err as { isFatal?: boolean; code?: number }
      if (e.isFatal !== true && e.code !== TIMED_OUT) throw err
      this.logger.warn({ code: e.code }, `the producer ${e.isFatal === true ? 'was fenced' : 'could not abort its transaction in time'}: replacing it`)
    }
    await new Promise<void>((resolve) => old.disconnect(() => resolve()))
    const producer = await this.connectProducer(this.client as typeof Client)
    this.sink?.use(producer as unknown as RecordProducer)
  }

  /** Moves the consumer of these partitions to the group's committed offsets (the beginning where none is). */
  private async seekToCommitted(partitions: TopicPartitionRef[], lost: () => boolean): Promise<void> {
    if (partitions.length === 0) return
    const consumer = this.consumer as Consumer
    const since = Date.now()
    let committed: Client.TopicPartitionOffset[]
    for (;;) {
      try {
        committed = await committedOffsets(consumer, partitions, lost, STABLE_ROUND_MS)
        break
      } catch (err) {
        if (!(err instanceof OffsetsUnanswered)) throw err
        if (Date.now() - since >= TASK_TIMEOUT_MS) {
          throw new PunctualError('ILLEGAL_STATE', `the group's offsets of ${partitions.length} input partitions were not answered in ${Math.round((Date.now() - since) / 1000)} s: ${PENDING_OFFSETS_HINT}`, { cause: err })
        }
        this.logger.warn({ waitedMs: Date.now() - since }, "the group's committed offsets were not answered: asking again")
      }
    }
    for (const c of committed) {
      const offset = c.offset !== undefined && c.offset >= 0 ? c.offset : OFFSET_BEGINNING
      await new Promise<void>((resolve, reject) => consumer.seek({ topic: c.topic, partition: c.partition, offset }, CALL_TIMEOUT_MS, (e) => (e ? reject(new PunctualError('ILLEGAL_STATE', `seeking ${c.topic}-${c.partition} to ${offset}: ${e.message}`, { cause: e })) : resolve())))
    }
  }

  /** Stops on a failure while running: tells the `'error'` listeners, or logs it when there are none. */
  private fail(err: unknown): void {
    if (this.failure !== undefined || this.currentState === 'NOT_RUNNING') return
    const error = err instanceof Error ? err : new Error(String(err))
    this.failure = error
    this.setState('ERROR')
    this.loop.disarm()
    this.events.failed(error)
    void this.shutDown()
  }

  /** Closes tasks and disconnects the clients (after a stop or a failure). */
  private async shutDown(): Promise<void> {
    await this.fetcher?.stop()
    await this.globalReader?.stop()
    this.globalReader = undefined
    this.globals?.close()
    this.globals = undefined
    await this.directory?.close().catch(() => {})
    this.directory = undefined
    for (const task of this.tasks) {
      try {
        task.close()
      } catch {
        // Close errors after a failure add nothing.
      }
    }
    for (const reader of this.readers.values()) reader.close()
    // Bounded: a client callback that never comes must not keep a stop from finishing.
    const readers = Promise.all([...this.readers.values()].map((r) => r.disconnected()))
    let waited: NodeJS.Timeout | undefined
    const bound = new Promise<void>((resolve) => (waited = setTimeout(resolve, READER_DISCONNECT_WAIT_MS)))
    await Promise.race([readers, bound])
    clearTimeout(waited)
    this.readers.clear()
    // Leaving the group revokes what is assigned: the rebalance callback still needs the consumer.
    const consumer = this.consumer
    if (consumer !== undefined) await new Promise<void>((resolve) => consumer.disconnect(() => resolve()))
    this.consumer = undefined
    const producer = this.producer
    this.producer = undefined
    if (producer !== undefined) await new Promise<void>((resolve) => producer.disconnect(() => resolve()))
    const purging = this.purging
    this.purging = undefined
    if (purging !== undefined) {
      await purging.purger.close()
      await purging.admin.disconnect()
    }
    await this.committer?.close()
    await this.metricsServer.close()
    await this.checkpoints?.written()
    this.stateDirectory?.release()
    this.stateDirectory = undefined
    if (this.ownsStateDir) rmSync(this.config.stateDir, { recursive: true, force: true })
  }
}

/**
 * A transaction step again while librdkafka says it may be (a coordinator loading after a broker
 * restart, a broker away for a moment), with growing pauses, for CALL_TIMEOUT_MS at most; `stop` says
 * which retriable errors are not worth another try.
 */
async function retried(call: () => Promise<void>, stop: (err: unknown) => boolean = () => false): Promise<void> {
  const deadline = Date.now() + CALL_TIMEOUT_MS
  for (let pause = 100; ; pause = Math.min(2 * pause, 2000)) {
    try {
      return await call()
    } catch (err) {
      if (stop(err)) throw err
      if ((err as { isRetriable?: boolean }).isRetriable !== true || Date.now() + pause > deadline) throw err
      await new Promise((resolve) => setTimeout(resolve, pause))
    }
  }
}

/** The consumer's assignment was lost (its member fenced) while the runtime waited for the group's offsets. */
class AssignmentLost extends Error {}

/** The group did not answer for the committed offsets within the time given (its requests timed out). */
class OffsetsUnanswered extends PunctualError {
  constructor(message: string, options: { cause: unknown }) {
    super('ILLEGAL_STATE', message, options)
  }
}

/**
 * The group's committed offsets of these partitions (stable ones: the consumer reads committed). Asked
 * again after COMMITTED_ATTEMPT_MS without an answer, up to `timeoutMs` (then OffsetsUnanswered): after a
 * broker restart, the client can drop a request made while it had no coordinator, and its caller would
 * wait the whole timeout for an answer that is not coming.
 */
async function committedOffsets(consumer: Client.KafkaConsumer, partitions: TopicPartitionRef[], lost: () => boolean, timeoutMs = CALL_TIMEOUT_MS): Promise<Client.TopicPartitionOffset[]> {
  const deadline = Date.now() + timeoutMs
  const names = (): string => partitions.map((p) => `${p.topic}-${p.partition}`).join(', ')
  for (;;) {
    const attempt = Math.min(COMMITTED_ATTEMPT_MS, Math.max(1, deadline - Date.now()))
    try {
      return await new Promise<Client.TopicPartitionOffset[]>((resolve, reject) => consumer.committed(partitions, attempt, (err, offsets) => (err ? reject(err) : resolve(offsets))))
    } catch (err) {
      const timedOut = (err as { code?: number }).code === TIMED_OUT
      // A fenced member rejoins only once its lost partitions are given up, which waits for this rebalance event handling to end.
      if (timedOut && lost()) throw new AssignmentLost()
      if (timedOut && Date.now() >= deadline) throw new OffsetsUnanswered(`reading the group's offsets of ${names()}: ${(err as Error).message}`, { cause: err })
      if (!timedOut) throw new PunctualError('ILLEGAL_STATE', `reading the group's offsets of ${names()}: ${(err as Error).message}`, { cause: err })
    }
  }
}

/**
 * A transaction step that timed out locally is not tried again: librdkafka can keep a request to a
 * coordinator it lost waiting past its timeout (issue 5456), and every retry times out the same way.
 * The transaction is aborted instead (marked so for `onFailure`), and its tasks go back to their last commit.
 */
function abortOnTimeout(err: unknown): boolean {
  if ((err as { code?: number }).code !== TIMED_OUT) return false
  ;(err as { isTxnRequiresAbort?: boolean }).isTxnRequiresAbort = true
  return true
}

/** A client call taking a node-style callback, as a promise. */
function promised(call: (cb: (err: { message: string } | null | undefined) => void) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    call((err) => (err ? reject(err instanceof Error ? err : new Error(err.message)) : resolve()))
  })
}
