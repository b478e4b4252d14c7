import { rmSync } from 'node:fs'
import { PunctualError } from '../errors.js'
import type { RuntimeMetrics, StandbyProgress, TaskEvent } from '../metrics.js'
import { RuntimeMetricsServer } from '../monitoring/metrics-server.js'
import type { MetricsAddress } from '../monitoring/metrics-server.js'
import type { StreamTask } from '../processor/internal/task.js'
import type { Serde } from '../processor/serdes.js'
import type { Topology } from '../processor/topology.js'
import { topologySvg } from '../processor/topology-svg.js'
import { localStores, queryableStore } from '../query/queryable-stores.js'
import type { QueryableStoreType, StoreQueryOptions } from '../query/queryable-stores.js'
import { NO_COMMITS } from '../runtime/committer.js'
import type { CommitStats } from '../runtime/committer.js'
import { RuntimeEvents } from '../runtime/runtime-events.js'
import { runtimeMetrics } from '../runtime/runtime-metrics.js'
import type { RuntimeState, StreamsRuntime } from '../runtime/runtime.js'
import { warnOfSerdeFallbacks } from '../runtime/serde-fallbacks.js'
import { checkDeadLetterTopicOf } from '../runtime/task-factory.js'
import { TaskLoop } from '../runtime/task-loop.js'
import type { RestoreProgress } from '../runtime/task-manager.js'
import { StateDirectory } from '../state/state-directory.js'
import type { Logger } from '../util/logger.js'
import { CALL_TIMEOUT_MS, disconnected, promised, UNREACHABLE_TIMEOUT_MS, within } from './client-calls.js'
import { baseClientId } from './client-settings.js'
import { CoordinatorWatch } from './coordinator-watch.js'
import { clientSupplierOf } from './client-supplier.js'
import type { KafkaClientSupplier } from './client-supplier.js'
import { validateKafkaRuntimeConfig } from './config.js'
import { chooseGroupProtocol } from './group-protocol.js'
import type { GroupFacts } from './streams-group/group-probe.js'
import type { KafkaRuntimeConfig, ValidKafkaRuntimeConfig } from './config.js'
import { loadWire } from './broker-wire.js'
import { isMemberFenced } from './group-offsets.js'
import type { KeyQueryMetadata, StreamsMetadata } from './instance-metadata.js'
import { InternalTopics } from './internal-topics.js'
import { assembleParts, CONSUMER_DISCONNECT_WAIT_MS } from './kafka-parts.js'
import type { KafkaParts } from './kafka-parts.js'
import { StreamsGroupConsumer } from './streams-group/group-consumer.js'
import { QueryMetadata } from './query-metadata.js'

/** How long a stop waits for the rebalance handling under way, and then for its last commit, before it closes without it. */
const STOP_WAIT_MS = 30_000


/**
 * Runs a topology on Apache Kafka, as Kafka Streams' `KafkaStreams` does: the instances of one
 * application share its input partitions through a consumer group (KIP-848's protocol with the broker's
 * range assignor, which keeps co-partitioned partitions together), one task per partition of each
 * sub-topology's inputs. This class is the facade: the lifecycle, the state and its events, metrics and
 * queries; `assembleParts` (kafka-parts.ts) builds the parts at start. The parts (docs/architecture.md): `InternalTopics` (topics, the group's topology),
 * `StreamsProducer` (transactions), `KafkaTaskManager` (assignment, revocation, lost tasks, recovery),
 * `ChangelogRestore` (restores, from local state and the changelogs), `LocalCommitBackend` over `KafkaCommitBackend` (commits on Kafka, then locally), `Fetcher` (input),
 * `QueryMetadata` (which instance holds what). The same task loop as the embedded runtime processes in
 * short slices on the event loop, and wall-clock punctuations fire on the runtime's one armed timer.
 */
export class KafkaRuntime implements StreamsRuntime {
  /** The settings; at start, with the group protocol it chose. */
  private config: ValidKafkaRuntimeConfig
  private readonly logger: Logger
  private readonly tasks: StreamTask[] = []
  private readonly loop: TaskLoop
  private currentState: RuntimeState = 'CREATED'
  private readonly events: RuntimeEvents<RuntimeState>
  private readonly metricsServer: RuntimeMetricsServer
  private readonly query: QueryMetadata
  private readonly suppliedBy: Promise<KafkaClientSupplier>
  private failure: Error | undefined
  private parts: KafkaParts | undefined
  private topics: InternalTopics | undefined
  private shuttingDown: Promise<void> | undefined
  private stateDirectory: StateDirectory | undefined
  private readonly ownsStateDir: boolean

  constructor(
    private readonly topology: Topology,
    config: KafkaRuntimeConfig,
  ) {
    this.config = validateKafkaRuntimeConfig(config)
    this.suppliedBy = clientSupplierOf(config)
    // A missing client fails start(), not the process.
    this.suppliedBy.catch(() => {})
    checkDeadLetterTopicOf(topology, this.config.deadLetterTopic, 'KafkaRuntime config')
    this.ownsStateDir = config.stateDir === undefined
    this.logger = this.config.logger.child?.({ applicationId: this.config.applicationId }) ?? this.config.logger
    this.metricsServer = new RuntimeMetricsServer(this.config.metrics)
    this.events = new RuntimeEvents(this.logger)
    this.query = new QueryMetadata(
      topology,
      this.config.applicationId,
      this.config.applicationServer,
      () => ({ state: this.currentState, plan: this.parts?.plan }),
      () => (this.topics as InternalTopics).admin(),
      () => (this.parts?.consumer instanceof StreamsGroupConsumer ? (this.parts.consumer.endpoints ?? []) : undefined),
    )
    this.loop = new TaskLoop({
      tasks: this.tasks,
      clock: this.config.clock,
      scheduler: this.config.scheduler,
      commitIntervalMs: this.config.commitIntervalMs,
      commitMaxRecords: this.config.commitMaxRecords,
      isDurable: () => true,
      isRunning: () => this.currentState === 'RUNNING' && this.parts?.manager.recovering !== true,
      writeCommit: () => this.parts?.committer.commit(this.tasks),
      restoreStep: (max, wake) => this.parts?.engine.restoreStep(max, wake) ?? false,
      deliver: () => {
        this.parts?.fetcher.resumeDrained()
        this.parts?.globals.reader?.resumeDrained()
      },
      updateGlobals: () => this.parts?.globals.stores.update(),
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
   * Connects, checks the topology against the cluster and the group (an instance of another topology
   * under the same `applicationId` is refused), creates the application's internal topics, then joins
   * the group; resolves once this instance is in it (tasks come with the assignment, restored before
   * they process). Fails, naming the problem, when the client is not installed, the cluster cannot be
   * reached or the topology does not fit it.
   */
  async start(): Promise<void> {
    if (this.currentState !== 'CREATED') throw new PunctualError('ILLEGAL_STATE', `cannot start the runtime in state ${this.currentState}`)
    warnOfSerdeFallbacks(this.topology, this.logger)
    const { logger } = this
    const stateDirectory = (this.stateDirectory = StateDirectory.open(this.config.stateDir, this.config.applicationId))
    // Clients made before the parts are whole, closed if the start fails.
    const made: Array<() => Promise<unknown>> = []
    try {
      const supplier = await this.suppliedBy
      // Asked for and not installed: said before anything connects.
      if (this.config.directFetch === true) await loadWire()
      const protocol = await chooseGroupProtocol(this.config, probeOf(supplier, this.config))
      const config = (this.config = { ...this.config, groupProtocol: protocol.protocol })
      const topics = (this.topics = new InternalTopics(supplier, config, logger))
      const parts = await assembleParts(
        {
          topology: this.topology,
          config,
          logger,
          supplier,
          topics,
          stateDirectory,
          loop: this.loop,
          tasks: this.tasks,
          onTaskEvent: this.events.task,
          onFailure: (err) => this.onFailure(err),
          fail: (err) => this.fail(err),
          isRunning: () => this.currentState === 'RUNNING',
          isStopped: () => this.currentState === 'NOT_RUNNING' || this.currentState === 'ERROR',
        },
        made,
      )
      const { consumer, fetcher, sources } = parts
      this.parts = parts
      await promised('connecting the consumer', (cb) => consumer.connect({}, cb), CALL_TIMEOUT_MS)
      // Counted from here: the time the start took before (topics, global stores) is not the coordinator's.
      const coordinator = new CoordinatorWatch(config.clock, UNREACHABLE_TIMEOUT_MS, config.bootstrapServers, logger, (err) => this.fail(err))
      consumer.on('event.stats', (stats) => coordinator.observe(stats.message))
      this.setState('RUNNING')
      this.metricsServer.start(
        { metrics: () => this.metrics(), topologySvg: topologySvg(this.topology) },
        (address) => logger.info({ url: address.url, page: address.pageUrl }, `metrics at ${address.url}, live page at ${address.pageUrl}`),
        (err) => this.fail(err),
      )
      consumer.subscribe([...sources])
      fetcher.start()
      this.loop.rearm()
      const group =
        config.groupProtocol === 'streams'
          ? `a streams group (KIP-1071: the broker places tasks and standbys${config.processingGuarantee === 'exactly_once_v2' ? '; exactly-once with a producer per task' : ''})`
          : 'a consumer group (KIP-848)'
      logger.info({ bootstrapServers: config.bootstrapServers, processingGuarantee: config.processingGuarantee, groupProtocol: config.groupProtocol, topics: sources.join(',') }, `started: joining ${group}; ${protocol.why}`)
    } catch (err) {
      if (this.parts === undefined) for (const close of made.reverse()) await close().catch(() => {})
      await this.shutDown()
      this.setState('ERROR')
      throw err
    }
  }

  /**
   * Commits the tasks, leaves the group and disconnects. A stop ends in bounded time: when the group or
   * the cluster does not answer (a broker away), it gives up the last commit after a while (its records
   * are processed again after a restart; exactly-once, its transaction is aborted) and closes. `drain`
   * changes nothing here: the input stays on its topics, and the next owner of the partitions processes
   * it. Rejects with the failure if the runtime had stopped on an error.
   */
  async stop(_options: { drain?: boolean } = {}): Promise<void> {
    const parts = this.parts
    if (this.currentState === 'RUNNING' && parts !== undefined) {
      this.setState('PENDING_SHUTDOWN')
      this.loop.disarm()
      try {
        const committed = (async () => {
          await parts.manager.settled()
          // The consumer keeps polling meanwhile: librdkafka reports an offset commit's result through it.
          await this.loop.commitAndWait()
        })()
        if (await within(committed, STOP_WAIT_MS)) await committed.catch((err: unknown) => this.withoutLastTransaction(err))
        else this.logger.warn({ waitedMs: STOP_WAIT_MS }, 'stopping without the last commit: the cluster did not answer in time; its records are processed again after a restart')
        await parts.fetcher.stop()
        this.logger.info({ processedRecords: this.metrics().processedRecords }, 'stopping: committed')
        this.setState('NOT_RUNNING')
      } catch (err) {
        this.fail(err)
      }
      await this.shutDown()
    } else if (this.currentState === 'CREATED') {
      this.setState('NOT_RUNNING')
    } else await this.shuttingDown
    if (this.failure !== undefined) throw this.failure
  }

  /** Counters of the tasks this instance ran (active ones and those it no longer has), and each active task as it stands. */
  metrics(): RuntimeMetrics {
    return runtimeMetrics({ applicationId: this.config.applicationId, state: this.currentState, clock: this.config.clock, tasks: this.parts?.engine, commits: this.parts?.committer.stats() })
  }

  /** Where the metrics are served (the `metrics` setting), once listening; undefined without the setting. */
  metricsAddress(): Promise<MetricsAddress | undefined> {
    return this.metricsServer.address()
  }

  /** How many commits ran and how long they took (none before start). */
  commitStats(): CommitStats {
    return this.parts?.committer.stats() ?? NO_COMMITS
  }

  /**
   * A read-only view of store `name` for interactive queries, over the tasks this instance runs now (as
   * `EmbeddedRuntime.store`; Kafka Streams' `KafkaStreams.store` with local stores): a key whose task
   * another instance runs is not found here. Calls while the runtime is not running fail with
   * ILLEGAL_STATE. While a task of this instance that holds the store restores (or waits for the group's
   * offsets of its inputs to be stable first), a lookup that finds nothing, and every range or scan,
   * fails with STORE_NOT_READY (retriable): `queryMetadataForKey` names this instance for the task's keys
   * already, and "absent" would be wrong for a key its changelog holds.
   *
   * With `enableStaleStores` (Kafka Streams' `StoreQueryParameters.enableStaleStores`), the view also
   * reads the standby tasks this instance keeps in a streams group: their persistent stores, as the
   * standby's local state has them, behind the task's owner by up to a commit.
   */
  store<T>(name: string, type: QueryableStoreType<T>, options: StoreQueryOptions = {}): T {
    return queryableStore(
      this.topology,
      name,
      type,
      (storeName) => {
        if (this.currentState !== 'RUNNING') {
          throw new PunctualError('ILLEGAL_STATE', `store "${storeName}": the runtime is ${this.currentState}; stores can be queried while it runs`)
        }
        const global = this.parts?.globals.stores.get(storeName)
        if (global !== undefined) return [global]
        const active = localStores(this.tasks, storeName)
        return options.enableStaleStores === true && this.parts?.standbyStores !== undefined ? [...active, ...this.parts.standbyStores(storeName)] : active
      },
      (storeName) => this.parts?.manager.notReady(storeName) ?? [],
    )
  }

  /**
   * Which instance holds `key` of store `storeName` now (Kafka Streams' `queryMetadataForKey`): the key's
   * partition (its bytes under `keySerde`, Kafka's default partitioner over the store's sub-topology's
   * partition count), and the instance of the group that has it, by the `applicationServer` it set (in
   * a streams group, with the instances keeping a standby of its task). Undefined while no instance has
   * it (during a rebalance). With the consumer protocol it asks the group coordinator each call; in a
   * streams group it answers from what the coordinator last sent this member. Needs
   * `applicationServer` and a running runtime; fails with ILLEGAL_STATE otherwise, and with
   * INVALID_TOPOLOGY for a store the topology lacks.
   */
  queryMetadataForKey<K>(storeName: string, key: K, keySerde?: Serde<K>): Promise<KeyQueryMetadata | undefined> {
    return this.query.forKey(storeName, key, keySerde)
  }

  /**
   * Every instance of the application that set an `applicationServer`, with its input partitions and the
   * stores of its tasks (Kafka Streams' `metadataForAllStreamsClients`), as the group has them now.
   */
  metadataForAllStreamsClients(): Promise<StreamsMetadata[]> {
    return this.query.all()
  }

  /** The tasks this instance runs now. */
  taskIds(): string[] {
    return this.tasks.map((t) => t.taskId.toString())
  }

  /**
   * The standby tasks this instance keeps, in a streams group (`groupProtocol: 'streams'`) whose
   * `streams.num.standby.replicas` is above 0: each keeps its task's local state up with the task's
   * changelog, so that the task, moved here, restores only the changelog's tail. Empty otherwise.
   */
  standbyProgress(): StandbyProgress[] {
    return this.parts?.standby?.progress() ?? []
  }

  /** The tasks restoring here, and how far each has come. */
  restoreProgress(): RestoreProgress[] {
    return this.parts?.engine.restoreProgress() ?? []
  }

  /**
   * A failure of the task loop: under exactly-once, a transaction librdkafka says must be aborted (a
   * record not delivered, a broker away too long, a fenced producer) is recovered from, and offsets the
   * group refused because it no longer has this member make the tasks lost and the consumer join again;
   * anything else stops the runtime.
   */
  private onFailure(err: unknown): void {
    const e = err as { isTxnRequiresAbort?: boolean; isFatal?: boolean; code?: number }
    const manager = this.parts?.manager
    if (manager !== undefined && this.config.processingGuarantee === 'exactly_once_v2' && isMemberFenced(err)) manager.handleMemberFenced(err as Error)
    else if (manager !== undefined && this.config.processingGuarantee === 'exactly_once_v2' && (e.isTxnRequiresAbort === true || e.isFatal === true)) manager.handleCorruption(err as Error)
    else this.fail(err)
  }

  /**
   * The last commit of a stop failed. Under exactly-once, a transaction that must be aborted (the group
   * no longer has this member, as after a broker away longer than the session timeout; a record not
   * delivered) loses nothing: it is aborted, and the tasks' next owner processes its records again from
   * the last commit. Anything else stops the runtime with the error.
   */
  private async withoutLastTransaction(err: unknown): Promise<void> {
    const abortable = this.config.processingGuarantee === 'exactly_once_v2' && (isMemberFenced(err) || (err as { isTxnRequiresAbort?: boolean }).isTxnRequiresAbort === true)
    if (!abortable || this.parts === undefined) throw err
    this.logger.warn({ err }, `stopping without the last commit: its transaction failed (${(err as Error).message}); it is aborted, and its records are processed again from the last commit`)
    await this.parts.producer.abortAtStop()
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

  /** Closes tasks and disconnects the clients (after a stop or a failure), once, each step bounded. */
  private shutDown(): Promise<void> {
    this.shuttingDown ??= this.close()
    return this.shuttingDown
  }

  private async close(): Promise<void> {
    const parts = this.parts
    await parts?.fetcher.stop()
    parts?.wire?.close()
    await parts?.globals.reader?.stop()
    parts?.globals.stores.close()
    await this.query.close()
    for (const task of this.tasks) {
      try {
        task.close()
      } catch {
        // Close errors after a failure add nothing.
      }
    }
    // Standbys leave their local state checkpointed, before the restore consumer they read through goes.
    await parts?.standby?.stop()
    await parts?.restore.close()
    // Leaving the group revokes what is assigned: the rebalance callback still needs the consumer (not
    // the producer: nothing commits now). Both disconnect at once, so that a cluster that does not
    // answer costs one wait, not two.
    const leaving = async (): Promise<void> => {
      if (parts !== undefined && !(await disconnected(parts.consumer, CONSUMER_DISCONNECT_WAIT_MS))) this.logger.warn({}, 'the consumer did not leave the group in time')
      parts?.offsets.close()
    }
    await Promise.all([leaving(), parts?.producer.close()])
    await this.topics?.close()
    await parts?.committer.close()
    await this.metricsServer.close()
    this.stateDirectory?.release()
    this.stateDirectory = undefined
    if (this.ownsStateDir) rmSync(this.config.stateDir, { recursive: true, force: true })
  }
}

/** The supplier's question to the cluster for the default group protocol; undefined when it cannot ask. */
function probeOf(supplier: KafkaClientSupplier, config: ValidKafkaRuntimeConfig): (() => Promise<GroupFacts | undefined>) | undefined {
  const probe = supplier.probeGroup
  return probe === undefined ? undefined : () => probe(config.bootstrapServers, baseClientId(config), config.wireSecurity, config.applicationId)
}
