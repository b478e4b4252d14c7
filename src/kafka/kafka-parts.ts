import { randomUUID } from 'node:crypto'
import { PunctualError } from '../errors.js'
import type { TaskEvent } from '../metrics.js'
import type { StateStore } from '../processor/api.js'
import type { StreamTask } from '../processor/internal/task.js'
import type { Topology } from '../processor/topology.js'
import { Committer } from '../runtime/committer.js'
import { tasksOf } from '../runtime/task-factory.js'
import type { TaskDefinition } from '../runtime/task-factory.js'
import type { TaskLoop } from '../runtime/task-loop.js'
import { TaskManager } from '../runtime/task-manager.js'
import { CheckpointStore } from '../state/checkpoint-store.js'
import { persistentStore } from '../state/persistent-store.js'
import type { StateDirectory } from '../state/state-directory.js'
import type { Logger } from '../util/logger.js'
import { loadWire } from './broker-wire.js'
import type { ClusterWire } from './broker-wire.js'
import { ChangelogRestore } from './changelog-restore.js'
import type { ChangelogTopics } from './changelog-topics.js'
import { CALL_TIMEOUT_MS, disconnected, promised, within } from './client-calls.js'
import { watchReports } from './client-reports.js'
import { baseClientId, groupConsumerSettings, offsetsConsumerSettings, restoreConsumerSettings } from './client-settings.js'
import type { ClientSettings, GroupConsumer, KafkaClientSupplier } from './client-supplier.js'
import type { ValidKafkaRuntimeConfig } from './config.js'
import { DirectFetcher } from './direct-fetcher.js'
import { Fetcher } from './fetcher.js'
import type { InputFetcher } from './fetcher.js'
import { readGlobalTopics } from './global-state.js'
import type { GlobalState } from './global-state.js'
import { GroupOffsets } from './group-offsets.js'
import { clientIdWithServer } from './instance-metadata.js'
import type { InternalTopics } from './internal-topics.js'
import { KafkaCommitBackend } from './kafka-commit-backend.js'
import { KafkaTaskManager } from './kafka-task-manager.js'
import { LocalCommitBackend } from './local-commit-backend.js'
import { LocalTaskRecords } from './local-task-records.js'
import { KafkaRecordCollector } from './record-collector.js'
import { SharedRestoreConsumer } from './restore-consumer.js'
import { StandbyTasks } from './standby-tasks.js'
import { ProducerSink } from './producer-sink.js'
import { StreamsProducer } from './streams-producer.js'
import type { ProducerEvents } from './streams-producer.js'
import { TaskProducers } from './task-producers.js'
import type { ProducerControl } from './task-producers.js'
import { clientIdWithTopology, topologyFingerprint } from './topology-check.js'
import type { TopicPlan } from './topics.js'
import { StreamsGroupConsumer } from './streams-group/group-consumer.js'
import { committedOffsets, connectGroupWire } from './streams-group/group-wire.js'
import { taskOffsetSums } from './streams-group/task-offsets.js'
import { securityName } from './wire-security.js'
import { describeTopology } from './streams-group/topology-description.js'

/** How long closing waits for the group consumer to leave the group and disconnect. */
export const CONSUMER_DISCONNECT_WAIT_MS = 15_000

/** The clients of a started Kafka runtime and the parts that use them. */
export interface KafkaParts {
  readonly plan: TopicPlan
  readonly consumer: GroupConsumer
  readonly offsets: GroupOffsets
  readonly fetcher: InputFetcher
  /** The direct fetch's connections (none when librdkafka fetches). */
  readonly wire: ClusterWire | undefined
  /** The instance's producer, or its tasks' (exactly-once in a streams group). */
  readonly producer: ProducerControl
  readonly restore: ChangelogRestore
  readonly committer: Committer
  readonly engine: TaskManager
  readonly manager: KafkaTaskManager
  readonly globals: GlobalState
  /** The input topics the consumer subscribes to, by their names on the cluster. */
  readonly sources: readonly string[]
  /** A streams group member's standby tasks. */
  readonly standby: StandbyTasks | undefined
  /** A streams group member's standby tasks' persistent stores named so, read-only, as their local state has them. */
  readonly standbyStores: ((storeName: string) => StateStore[]) | undefined
}

/** What the parts need of the runtime that starts them. */
export interface PartsHost {
  readonly topology: Topology
  readonly config: ValidKafkaRuntimeConfig
  readonly logger: Logger
  readonly supplier: KafkaClientSupplier
  readonly topics: InternalTopics
  readonly stateDirectory: StateDirectory
  readonly loop: TaskLoop
  /** The runtime's active tasks, which the engine keeps. */
  readonly tasks: StreamTask[]
  onTaskEvent(event: TaskEvent): void
  /** A failure of the task loop or the producer: recovered from where it can be, else the runtime stops. */
  onFailure(err: unknown): void
  /** Stops the runtime on an error. */
  fail(err: unknown): void
  isRunning(): boolean
  isStopped(): boolean
}

/**
 * Makes the clients and the parts of a Kafka runtime, in the order they depend on each other: the
 * internal topics, the producer (connected, its transactions initialized), the group consumer (not yet
 * connected), the commit backends, restores, global stores, the fetcher, the engine and the task
 * manager. `made` collects what to close should the start fail before the parts are whole.
 */
export async function assembleParts(host: PartsHost, made: Array<() => Promise<unknown>>): Promise<KafkaParts> {
  const { config, logger, supplier, stateDirectory } = host
  const fingerprint = topologyFingerprint(host.topology)
  const topics = host.topics
  const { plan, counts } = await topics.prepare(host.topology, fingerprint)
  const definitions = tasksOf(host.topology, (sub) => plan.partitions.get(sub.id) ?? 0)
  const exactlyOnce = config.processingGuarantee === 'exactly_once_v2'
  const events = { transactionFailed: (err: Error) => host.onFailure(err), failed: (err: Error) => host.fail(err) }
  // Exactly-once in a streams group: a producer per task (`TaskProducers`); otherwise one per instance,
  // with the same transactional id at each start on this state directory, as Kafka Streams' process
  // id: a restart after a crash fences the dead instance's producer at once and aborts its open
  // transaction, rather than waiting out its timeout before the tasks' offsets are stable.
  const taskProducers = exactlyOnce && config.groupProtocol === 'streams' ? await perTaskProducers(host, events, made) : undefined
  const producer = taskProducers === undefined ? new StreamsProducer(supplier, config, `${config.applicationId}-${stateDirectory.processId}`, logger, events) : undefined
  if (producer !== undefined) {
    made.push(() => producer.close())
    await producer.connect()
  }
  const control: ProducerControl = (taskProducers ?? producer) as ProducerControl
  // With a producer per task, each task's records go to its own (`collectorOf`); nothing goes here.
  const sink =
    producer?.sink ??
    new ProducerSink({
      produce: () => {
        throw new PunctualError('ILLEGAL_STATE', 'a record without a task producer to write it')
      },
    })
  const collector = new KafkaRecordCollector(plan.names, counts, sink.send)
  let clientId = clientIdWithTopology(baseClientId(config), fingerprint)
  if (config.applicationServer !== undefined) clientId = clientIdWithServer(clientId, config.applicationServer)
  const sources = [...new Set(host.topology.subtopologies().flatMap((s) => s.sourceTopics))].map((t) => plan.names.get(t) ?? t)
  const wire = config.directFetch === false ? undefined : await supplier.getFetchWire?.(config.bootstrapServers, clientId, config.wireSecurity)
  // Closed at stop with the other parts; here only if the start fails before they exist.
  if (wire !== undefined) made.push(async () => wire.close())
  const settings = groupConsumerSettings(config, clientId, (err, partitions) => manager.onRebalance(err.code, partitions))
  const consumer: GroupConsumer = config.groupProtocol === 'streams' ? await streamsGroupConsumer(host, settings, clientId, plan, wire) : supplier.getConsumer(settings)
  made.push(() => disconnected(consumer, CONSUMER_DISCONNECT_WAIT_MS))
  consumer.setDefaultConsumeTimeout(500)
  consumer.setDefaultIsTimeoutOnlyForFirstMessage(true)
  watchReports(consumer, 'consumer', logger, (err) => host.fail(err))
  // A consumer group's offsets are read over the direct fetch's kind of connection where it runs (the streams group's consumer reads them so itself).
  const reads = config.groupProtocol === 'consumer' && wire !== undefined ? await connectGroupWire(config.bootstrapServers, clientId, config.applicationId, config.wireSecurity) : undefined
  if (reads !== undefined) made.push(async () => reads.close())
  const offsets = new GroupOffsets(consumer, logger, reads === undefined ? undefined : { committed: (partitions) => committedOffsets(reads, partitions, exactlyOnce), close: () => reads.close() })
  // Task state on local disk: each commit leaves it there, a restore goes on from it.
  const checkpoints = CheckpointStore.open(config.stateDir)
  made.push(async () => checkpoints.close())
  const purger = await topics.purger(plan)
  const kafkaBackend = new KafkaCommitBackend(
    exactlyOnce,
    {
      sendOffsetsToTransaction: (o) => (producer as StreamsProducer).sendOffsetsToTransaction(o, consumer),
      commitTransaction: () => (producer as StreamsProducer).commitTransaction(),
      beginTransaction: () => (producer as StreamsProducer).beginTransaction(),
      flush: () => (producer as StreamsProducer).flush(),
      commitOffsets: async (o) => {
        const result = await offsets.commit(o)
        if (result === 'fenced') logger.warn({}, "the group refused this member's offsets (it was fenced): its tasks are lost, and taken over by another member")
        return result === 'committed'
      },
    },
    sink,
    (sub) => changelogTopicsOf(sub),
    (t) => plan.names.get(t) ?? t,
    config.clock,
    (o) => purger?.committed(o),
    taskProducers === undefined ? undefined : (taskId) => taskProducers.scopeOf(taskId),
  )
  const backend = new LocalCommitBackend(kafkaBackend, checkpoints, exactlyOnce)
  const committer = new Committer(backend)
  const localRecords = new LocalTaskRecords(checkpoints, logger)
  const restore = new ChangelogRestore(
    host.topology,
    definitions,
    supplier,
    config,
    logger,
    localRecords,
    (t, p) => offsets.watermarks(t, p),
    (taskId, readTo) => backend.restored(taskId, readTo),
    (err) => host.fail(err),
  )
  const changelogTopicsOf = (sub: number): ChangelogTopics => restore.topicsOf(sub)
  const globals = await readGlobalTopics(host.topology, counts, supplier, config, logger, host.loop.onAppend, (err) => host.fail(err))
  made.push(async () => {
    await globals.reader?.stop()
    globals.stores.close()
  })
  const onFetchError = (err: { message: string }): void => host.fail(new PunctualError('ILLEGAL_STATE', `fetching: ${err.message}`, { cause: err }))
  const fetcher: InputFetcher =
    wire === undefined
      ? new Fetcher(consumer, host.loop.onAppend, onFetchError, config.bufferedRecordsPerPartition)
      : new DirectFetcher(consumer, wire, exactlyOnce ? 1 : 0, host.loop.onAppend, onFetchError, logger, config.bufferedRecordsPerPartition)
  if (wire === undefined) logger.info({ fetch: 'librdkafka' }, `input fetched by librdkafka${config.wireUnsupported === undefined ? '' : `: punctual's own Fetch requests cannot honour the security settings, as ${config.wireUnsupported}`}`)
  else {
    const security = securityName(config.wireSecurity)
    logger.info({ fetch: 'direct', security }, `input fetched with punctual's own Fetch requests (${security})`)
  }
  const engine = new TaskManager(
    definitions,
    {
      io: {
        inputs: (topic, partition) => fetcher.get(plan.names.get(topic) ?? topic, partition),
        collector,
        ...(taskProducers === undefined ? {} : { collectorOf: (taskId: string) => new KafkaRecordCollector(plan.names, counts, taskProducers.sinkOf(taskId).send) }),
      },
      globalStores: (name) => globals.stores.get(name),
      clock: config.clock,
      maxTaskIdleMs: config.maxTaskIdleMs,
      defaultTimestampExtractor: config.defaultTimestampExtractor,
      errorHandler: config.errorHandler,
      deadLetterTopic: config.deadLetterTopic,
      stateDir: config.stateDir,
      committer,
      // Persistent stores read their entries from the local records.
      localState: localRecords.asLocalState((taskId, store) => {
        const sub = (definitions.find((d) => d.id === taskId) as TaskDefinition).subtopology
        return committer.codecFor(sub.id, sub.stores).codec(store)
      }),
      onWallClockChange: host.loop.onWallClockChange,
      onTaskEvent: host.onTaskEvent,
      onRestored: ({ taskId, count, ms }) => manager.restored(taskId, count, ms),
    },
    host.tasks,
  )
  const manager: KafkaTaskManager = new KafkaTaskManager({
    exactlyOnce,
    logger,
    definitions,
    plan,
    consumer,
    offsets,
    fetcher,
    tasks: engine,
    active: host.tasks,
    loop: host.loop,
    producer: control,
    ...(taskProducers === undefined ? {} : { taskProducers }),
    restore,
    backend: kafkaBackend,
    rejoin: () => {
      consumer.unsubscribe()
      consumer.subscribe(sources)
    },
    isRunning: host.isRunning,
    isStopped: host.isStopped,
    fail: (err) => host.fail(err),
  })
  const standby = consumer instanceof StreamsGroupConsumer ? standbyTasks(host, consumer, restore, localRecords, checkpoints, offsets, manager, exactlyOnce) : undefined
  const standbyStores =
    standby === undefined
      ? undefined
      : (storeName: string): StateStore[] => {
          const out: StateStore[] = []
          for (const { taskId } of standby.progress()) {
            const sub = (definitions.find((d) => d.id === taskId) as TaskDefinition).subtopology
            const builder = sub.stores.find((b) => b.name === storeName && b.persistent === true)
            if (builder === undefined) continue
            const store = builder.build()
            persistentStore(store)?.attach(checkpoints.records.storeDisk(taskId, storeName, committer.codecFor(sub.id, sub.stores).codec(storeName)))
            out.push(store)
          }
          return out
        }
  return { plan, consumer, offsets, fetcher, wire, producer: control, restore, committer, engine, manager, globals, sources, standby, standbyStores }
}

/** How long a standby's fetch waits at the changelog's end for the owner's next records. */
const STANDBY_FETCH_WAIT_MS = 500

/**
 * Exactly-once in a streams group: a producer per task, and the consumer whose group metadata goes with
 * their transactions' offsets (it never joins the group).
 */
async function perTaskProducers(host: PartsHost, events: ProducerEvents, made: Array<() => Promise<unknown>>): Promise<TaskProducers> {
  const { config, logger, supplier } = host
  const offsetsConsumer = supplier.getConsumer(offsetsConsumerSettings(config))
  made.push(() => disconnected(offsetsConsumer, CONSUMER_DISCONNECT_WAIT_MS))
  await promised('connecting the offsets consumer', (cb) => offsetsConsumer.connect({}, cb), CALL_TIMEOUT_MS)
  const producers = new TaskProducers((taskId) => new StreamsProducer(supplier, config, `${config.applicationId}-${taskId}`, logger, events, false), offsetsConsumer, logger)
  made.push(() => producers.close())
  return producers
}

/** The standby tasks of a streams group member, told of each assignment it takes. */
function standbyTasks(host: PartsHost, consumer: StreamsGroupConsumer, restore: ChangelogRestore, local: LocalTaskRecords, checkpoints: CheckpointStore, offsets: GroupOffsets, manager: KafkaTaskManager, exactlyOnce: boolean): StandbyTasks {
  const { config, logger, supplier } = host
  // A consumer of their own: a restore's reads end at once at the changelog's end, a standby's wait there for the owner's writes.
  const reads = new SharedRestoreConsumer(() => {
    const client = supplier.getRestoreConsumer({ ...restoreConsumerSettings(config), 'fetch.wait.max.ms': STANDBY_FETCH_WAIT_MS })
    client.setDefaultConsumeTimeout(STANDBY_FETCH_WAIT_MS)
    client.setDefaultIsTimeoutOnlyForFirstMessage(true)
    watchReports(client, 'standby consumer', logger)
    return client
  })
  const standby = new StandbyTasks({
    local,
    logger,
    clock: config.clock,
    scheduler: config.scheduler,
    checkpointIntervalMs: config.commitIntervalMs,
    partitionsOf: (id) => restore.partitionsOf(id),
    topicsOf: (id) => restore.topicsOfTask(id),
    channel: () => reads.channel(),
    watermarks: (t, p) => offsets.watermarks(t, p),
    ...(exactlyOnce ? {} : { marks: (ids: readonly string[]) => manager.marks(ids) }),
    busy: (id) => manager.holds(id),
    settled: () => host.loop.settled().catch(() => {}),
    close: () => within(reads.close(), CONSUMER_DISCONNECT_WAIT_MS).then(() => {}),
    fail: (err) => host.fail(err),
  })
  consumer.standbys = (tasks) => standby.update(tasks)
  consumer.offsetSums = (active) => taskOffsetSums(checkpoints.loadEach(), standby.positions(), active)
  return standby
}

/**
 * The group consumer of `groupProtocol: 'streams'`: a member of the application's streams group, with
 * a member id of its own and the state directory's process id, over the direct fetch's connections.
 */
async function streamsGroupConsumer(host: PartsHost, settings: ClientSettings, clientId: string, plan: TopicPlan, wire: ClusterWire | undefined): Promise<GroupConsumer> {
  const { config, logger } = host
  // The direct fetch's wire library is the streams group's too.
  await loadWire()
  if (wire === undefined) throw new PunctualError('DEPENDENCY_MISSING', "groupProtocol 'streams' needs the direct fetch's connections, which the client supplier does not give")
  const group = await connectGroupWire(config.bootstrapServers, clientId, config.applicationId, config.wireSecurity)
  // Kafka 4.2 and 4.3 refuse task offsets; 4.4 takes them (its assignor does not use them yet).
  const takesTaskOffsets = await group.takesTaskOffsets().catch((err: unknown) => {
    logger.debug({ err }, 'asking the cluster whether it takes task offsets failed: none are sent')
    return false
  })
  const options = {
    groupId: config.applicationId,
    memberId: randomUUID(),
    processId: host.stateDirectory.processId,
    topology: describeTopology(host.topology, config.applicationId, plan),
    // Kafka Streams' max.poll.interval.ms default: how long the coordinator waits for a revocation.
    rebalanceTimeoutMs: 300_000,
    ...(config.applicationServer === undefined ? {} : { userEndpoint: { host: config.applicationServer.host, port: config.applicationServer.port } }),
    ...(takesTaskOffsets ? { taskOffsets: () => (consumer as StreamsGroupConsumer).taskOffsetSums() } : {}),
  }
  // Made before the member's first heartbeat, which asks it for the task offsets.
  const consumer: StreamsGroupConsumer = new StreamsGroupConsumer(settings, options, group, wire, config.clock, config.scheduler, logger)
  return consumer
}
