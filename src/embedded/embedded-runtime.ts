import { rmSync } from 'node:fs'
import { PunctualError } from '../errors.js'
import { DurableLog } from './log/durable-log.js'
import { TopicRegistry } from './log/topics.js'
import type { PartitionLog } from './log/partition-log.js'
import type { RuntimeMetrics, TaskEvent } from '../metrics.js'
import { runtimeMetrics } from '../runtime/runtime-metrics.js'
import { RuntimeEvents } from '../runtime/runtime-events.js'
import { RuntimeMetricsServer } from '../monitoring/metrics-server.js'
import { topologySvg } from '../processor/topology-svg.js'
import type { MetricsAddress } from '../monitoring/metrics-server.js'
import { NO_HEADERS } from '../processor/api.js'
import type { Headers } from '../processor/api.js'
import type { ErrorHandler } from '../processor/errors.js'
import type { StreamTask } from '../processor/internal/task.js'
import type { TaskCheckpoint } from '../processor/internal/task-config.js'
import { checkTimestamp, topicSerdes } from '../processor/topic-access.js'
import { checkWritable, Serdes } from '../processor/serdes.js'
import type { Serde } from '../processor/serdes.js'
import type { Topology } from '../processor/topology.js'
import { CheckpointStore } from '../state/checkpoint-store.js'
import { StateDirectory } from '../state/state-directory.js'
import type { Clock } from '../time/clock.js'
import type { Logger } from '../util/logger.js'
import { Committer } from '../runtime/committer.js'
import type { CommitStats } from '../runtime/committer.js'
import { StateDirectoryBackend } from './state-directory-backend.js'
import type { AlsoWriteCheckpoints } from './state-directory-backend.js'
import type { ChangelogRecord } from '../runtime/changelog.js'
import type { ChangelogSource } from '../runtime/changelog-source.js'
import { DurableTopics } from './durable-topics.js'
import { releaseConsumed, taskReadPositions } from './log-retention.js'
import { Subscriptions } from './subscriptions.js'
import { checkDeadLetterTopicOf, taskDefinitions } from '../runtime/task-factory.js'
import { warnOfSerdeFallbacks } from '../runtime/serde-fallbacks.js'
import { TaskManager } from '../runtime/task-manager.js'
import type { RestoreProgress } from '../runtime/task-manager.js'
import type { RestoreReport } from '../runtime/task-factory.js'
import { TaskLoop } from '../runtime/task-loop.js'
import { GlobalStores } from '../processor/internal/global-stores.js'
import { localStores, queryableStore } from '../query/queryable-stores.js'
import { topicArgument } from '../processor/topic.js'
import type { Topic } from '../processor/topic.js'
import type { QueryableStoreType } from '../query/queryable-stores.js'
import type { RecordListener, SubscribeFrom } from './subscriptions.js'
import { validateEmbeddedConfig } from './config.js'
import type { EmbeddedRuntimeConfig, ValidEmbeddedConfig } from './config.js'
import type { RuntimeState, StreamsRuntime } from '../runtime/runtime.js'

/** Writes records to one topic of an embedded runtime, as `EmbeddedRuntime.producer` gives it (a Kafka producer's part). */
export interface Producer<K, V> {
  /** Appends a record; the timestamp defaults to the wall clock. Returns the partition written. */
  send(key: K | null, value: V | null, timestamp?: number, headers?: Headers): number
}

export type { RecordListener } from './subscriptions.js'

/**
 * Runs a topology in this process over in-memory partitioned topics: one task per input partition, the
 * task loop on the event loop in short slices, and one real timer armed for the earliest wall-clock due
 * time, so wall-clock punctuations fire on time with no input and nothing polls in between. A
 * `StreamsRuntime`, as the Kafka runtime is; its own are the input it takes (`producer`), the output it
 * delivers (`subscribe`), its topics, and `resumed` and `idle()`.
 */
export class EmbeddedRuntime implements StreamsRuntime {
  private readonly config: ValidEmbeddedConfig
  private readonly clock: Clock
  private readonly logger: Logger
  private readonly errorHandler: ErrorHandler
  private readonly topics: TopicRegistry
  private readonly tasks: StreamTask[] = []
  /** The global stores (made at start), updated before each processing slice. */
  private globals: GlobalStores | undefined
  private readonly loop: TaskLoop
  private readonly subscriptions = new Subscriptions(() => this.durableTopics !== undefined)
  private currentState: RuntimeState = 'CREATED'
  private readonly events: RuntimeEvents<RuntimeState>
  private readonly metricsServer: RuntimeMetricsServer
  private failure: Error | undefined
  private stateDirectory: StateDirectory | undefined
  /** True when no stateDir was given: the runtime made a temporary one and removes it on stop. */
  private readonly ownsStateDir: boolean
  /** Takes checkpoints; durable (writes to the state directory) when the application chose one. */
  private committer: Committer<AlsoWriteCheckpoints>
  /** The topics on disk, in a durable run. */
  private durableTopics: DurableTopics | undefined
  /** Per topic, how long a durable run keeps records after their commit. */
  private readonly retention = new Map<string, number>()
  /** Creates and closes tasks as they are assigned and revoked; made at start. */
  private taskManager: TaskManager | undefined

  constructor(
    private readonly topology: Topology,
    config: EmbeddedRuntimeConfig,
  ) {
    const valid = validateEmbeddedConfig(config)
    checkDeadLetterTopicOf(topology, valid.deadLetterTopic, 'EmbeddedRuntime config')
    this.ownsStateDir = config.stateDir === undefined
    this.config = valid
    this.clock = valid.clock
    this.logger = valid.logger.child?.({ applicationId: valid.applicationId }) ?? valid.logger
    this.metricsServer = new RuntimeMetricsServer(valid.metrics)
    this.events = new RuntimeEvents(this.logger)
    this.errorHandler = valid.errorHandler
    this.loop = new TaskLoop({
      tasks: this.tasks,
      clock: this.clock,
      scheduler: valid.scheduler,
      commitIntervalMs: valid.commitIntervalMs,
      commitMaxRecords: valid.commitMaxRecords,
      isDurable: () => this.committer.durable,
      isRunning: () => this.currentState === 'RUNNING',
      writeCommit: () => this.writeCommit(),
      restoreStep: (max, wake) => this.taskManager?.restoreStep(max, wake) ?? false,
      updateGlobals: () => this.globals?.update(),
      deliver: () => this.subscriptions.deliver(),
      fail: (err) => this.fail(err),
    })
    this.topics = new TopicRegistry(valid.defaultPartitions, this.loop.onAppend)
    for (const [name, t] of Object.entries(config.topics ?? {})) {
      this.topics.create(name, t.partitions)
      if (t.retentionMs !== undefined) this.retention.set(name, t.retentionMs)
    }
    this.committer = new Committer<AlsoWriteCheckpoints>(undefined, valid.changelog)
  }

  /** Whether start() found committed state in the state directory (a restart, not a fresh start). */
  get resumed(): boolean {
    return this.taskManager?.resumed ?? false
  }

  /** CREATED, RUNNING, PENDING_SHUTDOWN, NOT_RUNNING or ERROR. */
  get state(): RuntimeState {
    return this.currentState
  }

  /** Creates a topic with a partition count (topics not created are made with `defaultPartitions`). */
  createTopic(name: string, partitions: number): void {
    this.topics.create(name, partitions)
  }

  /**
   * A producer for an input topic of the topology, given as a `Topic` (whose key and value types
   * the compiler then checks at each send) or by name. Serdes default to the ones its source reads with; an
   * unknown topic, a timestamp that is not an integer epoch millisecond >= 0, and a key or value a
   * built-in serde cannot write (a number key on a String topic) are refused at the call. Sends are
   * taken before `start()` and while the runtime runs; once `stop()` is called, or the runtime failed,
   * a send fails with ILLEGAL_STATE (nothing would process or keep the record).
   */
  producer<K, V>(topic: Topic<K, V>): Producer<K, V>
  /** A producer for input topic `topic`, by name: `K` and `V` are what the caller says they are. */
  producer<K = unknown, V = unknown>(topic: string, serdes?: { keySerde?: Serde<K>; valueSerde?: Serde<V> }): Producer<K, V>
  producer<K, V>(handle: string | Topic<K, V>, serdes: { keySerde?: Serde<K>; valueSerde?: Serde<V> } = {}): Producer<K, V> {
    const given = topicArgument('runtime.producer', handle, serdes.keySerde, serdes.valueSerde)
    const topic = given.name
    const caller = `runtime.producer("${topic}")`
    const { keySerde, valueSerde } = topicSerdes(this.topology, topic, 'input', caller, given.keySerde, given.valueSerde)
    this.topics.partitions(topic)
    const sendCaller = `${caller}.send`
    return {
      send: (key, value, timestamp, headers = NO_HEADERS) => {
        // Once stop() is called nothing processes or commits what is appended: the record would be lost.
        const state = this.currentState
        if (state !== 'RUNNING' && state !== 'CREATED') {
          throw new PunctualError('ILLEGAL_STATE', `${sendCaller}: the runtime is ${state}; a producer sends before start() and while the runtime runs, not once stop() is called or it failed`)
        }
        const ts = timestamp ?? this.clock.now()
        checkTimestamp(sendCaller, ts)
        checkWritable(keySerde as Serde<unknown>, 'key', key, key, 'topic', topic, sendCaller)
        checkWritable(valueSerde as Serde<unknown>, 'value', value, key, 'topic', topic, sendCaller)
        return this.topics.send(topic, undefined, key, keySerde as Serde<unknown>, value, valueSerde as Serde<unknown>, ts, headers)
      },
    }
  }

  /**
   * Calls `listener` for every record of `topic` (a `Topic`, whose types the listener then has, or a
   * name), in offset order per partition, right after the
   * processing slice that wrote it; in a durable run (a state directory), right after the commit that
   * made it durable, so a listener never sees output a crash takes back. The topic must be one the
   * topology writes (or reads); serdes default to the ones its sinks write with (or its source reads
   * with), and a built-in serde that differs from the topology's is refused. `from`: 'earliest'
   * (default) starts at the oldest record held, 'latest' at the end when the runtime starts delivering.
   * A listener that throws goes to the error handler as a processor that throws does (reason
   * `processing`): by default the runtime stops; under `logAndContinue` the next record is delivered.
   * Returns a function that ends the subscription.
   */
  subscribe<K, V>(topic: Topic<K, V>, listener: RecordListener<K, V>, options?: { from?: SubscribeFrom }): () => void
  /** Subscribes to `topic` by name: `K` and `V` are what the caller says they are. */
  subscribe<K = unknown, V = unknown>(topic: string, listener: RecordListener<K, V>, options?: { keySerde?: Serde<K>; valueSerde?: Serde<V>; from?: SubscribeFrom }): () => void
  subscribe<K, V>(handle: string | Topic<K, V>, listener: RecordListener<K, V>, options: { keySerde?: Serde<K>; valueSerde?: Serde<V>; from?: SubscribeFrom } = {}): () => void {
    const given = topicArgument('runtime.subscribe', handle, options.keySerde, options.valueSerde)
    const topic = given.name
    const caller = `runtime.subscribe("${topic}")`
    // The dead-letter topic holds records as read, in bytes.
    const { keySerde, valueSerde } =
      topic === this.config.deadLetterTopic
        ? { keySerde: given.keySerde ?? (Serdes.Bytes() as Serde<K>), valueSerde: given.valueSerde ?? (Serdes.Bytes() as Serde<V>) }
        : topicSerdes(this.topology, topic, 'any', caller, given.keySerde, given.valueSerde)
    const from = options.from ?? 'earliest'
    if (from !== 'earliest' && from !== 'latest') throw new PunctualError('INVALID_CONFIG', `${caller}: from must be 'earliest' or 'latest', got ${JSON.stringify(from)}`)
    const unsubscribe = this.subscriptions.add(topic, this.topics.partitions(topic), this.guardedListener(topic, listener), keySerde, valueSerde, from)
    this.loop.scheduleRun()
    return unsubscribe
  }

  /**
   * A subscriber is user code as a processor is: when it throws, the error handler decides, with reason
   * `processing` and the record's topic, partition and offset (task id `subscriber`). `'continue'` goes
   * on with the next record, this one counted as delivered; `'fail'` stops the runtime with a
   * PROCESSING error whose cause is what the listener threw.
   */
  private guardedListener<K, V>(topic: string, listener: RecordListener<K, V>): RecordListener<K, V> {
    return (record, partition, offset) => {
      try {
        listener(record, partition, offset)
      } catch (error) {
        const detail = error instanceof Error ? error.message : String(error)
        const message = `subscriber of topic "${topic}" threw at partition ${partition} offset ${offset}: ${detail}`
        if (this.errorHandler({ reason: 'processing', taskId: 'subscriber', topic, partition, offset, error, message }) === 'fail') {
          throw new PunctualError('PROCESSING', message, { cause: error })
        }
      }
    }
  }

  /**
   * Calls `listener` when the runtime stops on a failure while running (Kafka Streams'
   * `StreamsUncaughtExceptionHandler`, as a listener). A listener of any event that throws is logged.
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
   * Opens the state directory, restores and initializes every task, and starts processing, all within
   * this call: when it returns, the runtime is `RUNNING`, its tasks restored (or it failed, and the
   * promise it returned rejects), so producers, queries and `resumed` may be used at once, before the
   * promise is awaited. A failure here (an invalid schedule, a state directory that cannot be used)
   * rejects the promise, and only it: it is not also emitted as `'error'`, and a later `stop()`
   * resolves. A state directory held by another process leaves the runtime `CREATED`: `start()` may be
   * called again once that process is gone.
   */
  async start(): Promise<void> {
    if (this.currentState !== 'CREATED') throw new PunctualError('ILLEGAL_STATE', `cannot start the runtime in state ${this.currentState}`)
    warnOfSerdeFallbacks(this.topology, this.logger)
    // Held from start to stop: a second process on the same directory is refused. Nothing has started
    // if this fails, so start() may be called again (once the other process is gone).
    this.stateDirectory = StateDirectory.open(this.config.stateDir, this.config.applicationId)
    try {
      // Durable only with a state directory the application chose: a temporary one dies with the process.
      // Its checkpoint store is both where commits are durable and where tasks' state lives locally.
      let localState: StateDirectoryBackend | undefined
      if (!this.ownsStateDir) {
        const store = CheckpointStore.open(this.config.stateDir, { sliceCommitsAbove: this.config.sliceCommitsAbove })
        const backend = new StateDirectoryBackend(store)
        this.committer = new Committer(backend, this.config.changelog)
        localState = backend
        // The topics live in the checkpoints' environment, so a commit writes both in one transaction.
        const log = new DurableLog(store.database('log-records', { encoding: 'binary' }), store.database('log-ranges'))
        this.durableTopics = new DurableTopics(log, this.topics, this.retention)
        this.durableTopics.restore(backend.restoredPositions())
      }
      const factory = {
        io: this.topics.taskIo(),
        clock: this.clock,
        maxTaskIdleMs: this.config.maxTaskIdleMs,
        defaultTimestampExtractor: this.config.defaultTimestampExtractor,
        errorHandler: this.errorHandler,
        deadLetterTopic: this.config.deadLetterTopic,
        stateDir: this.config.stateDir,
        committer: this.committer,
        localState,
        onWallClockChange: this.loop.onWallClockChange,
        onTaskEvent: this.events.task,
        onRestored: ({ taskId, from, count, ms }: RestoreReport) =>
          this.logger.info({ taskId, from, [from === 'changelog' ? 'records' : 'entries']: count, ms: Math.round(ms) }, `task ${taskId} restored from ${from === 'changelog' ? 'its changelog' : 'the state directory'}`),
      }
      // Global stores first, read to the end of their topics: every task reads them from the start.
      const globals = new GlobalStores(this.topology.globalStores(), (topic) => this.topics.partitions(topic), () => this.clock.now(), (topic, partition, offset, error) => {
        const message = `global store topic ${topic}-${partition} offset ${offset}: ${error instanceof Error ? error.message : String(error)}`
        if (this.errorHandler({ reason: 'deserialization', taskId: 'global', topic, partition, offset, error, message }) === 'fail') {
          throw new PunctualError('DESERIALIZATION', message, { cause: error })
        }
      })
      this.globals = globals
      globals.update()
      this.taskManager = new TaskManager(taskDefinitions(this.topology, this.topics), { ...factory, globalStores: (name) => globals.get(name) }, this.tasks)
      // One process runs every task, restored from the state directory before start returns.
      this.taskManager.assign(this.taskManager.allIds())
      this.taskManager.restoreNow()
    } catch (err) {
      this.shutDownOnFailure(err)
      throw err
    }
    this.setState('RUNNING')
    this.metricsServer.start(
      { metrics: () => this.metrics(), topologySvg: topologySvg(this.topology) },
      (address) => this.logger.info({ url: address.url, page: address.pageUrl }, `metrics at ${address.url}, live page at ${address.pageUrl}`),
      (err) => this.fail(err),
    )
    // What init restored or registered (schedules' baselines, catch-up fires) is durable from the start.
    this.loop.commit()
    this.loop.scheduleRun()
    this.loop.rearm()
    const durable = !this.ownsStateDir
    this.logger.info(
      { stateDir: durable ? this.config.stateDir : undefined, tasks: this.taskIds().join(','), durable, resumed: this.resumed },
      durable ? (this.resumed ? 'started: resumed from the state directory' : 'started with fresh state') : 'started in memory (no state directory)',
    )
  }

  /**
   * Stops: with `drain` (the default) first finishes the restores under way and processes every record
   * already in the input topics; then commits, closes the processors and releases the state directory.
   * With `drain: false` the records not processed yet stay in the topics: a durable run processes them
   * after a restart, a run without a state directory loses them. Rejects with the failure if the
   * runtime had stopped on an error.
   */
  async stop(options: { drain?: boolean } = {}): Promise<void> {
    if (this.currentState === 'RUNNING') {
      this.setState('PENDING_SHUTDOWN')
      this.loop.disarm()
      try {
        if (options.drain ?? true) {
          // Tasks still restoring come back first, so that their records are processed too.
          await this.taskManager?.finishRestoring()
          await this.loop.drain()
        }
        await this.loop.commitAndWait()
        this.subscriptions.deliver()
        for (const task of this.tasks) task.close()
        this.globals?.close()
        this.setState('NOT_RUNNING')
        this.logger.info({ processedRecords: this.metrics().processedRecords }, 'stopped')
      } catch (err) {
        this.fail(err)
      }
      await this.closeStateDirectory()
    } else if (this.currentState === 'CREATED') {
      this.setState('NOT_RUNNING')
    }
    await this.metricsServer.close()
    if (this.failure !== undefined) throw this.failure
  }

  /** Where the metrics are served (the `metrics` setting), once listening; undefined without the setting. */
  metricsAddress(): Promise<MetricsAddress | undefined> {
    return this.metricsServer.address()
  }

  /**
   * Counters summed over every task this runtime ran, and each active task as it stands: stream time and
   * its lag behind the clock, record lateness, wall-clock punctuation lateness, pending timers, what each
   * suppression buffers; restores under way and commit times.
   */
  metrics(): RuntimeMetrics {
    return runtimeMetrics({ applicationId: this.config.applicationId, state: this.currentState, clock: this.clock, tasks: this.taskManager, commits: this.committer.stats() })
  }

  /**
   * @internal Commits, then closes tasks while running, as a rebalance that moves them away would;
   * resolves once that commit is durable.
   */
  async revokeTasks(ids: readonly string[]): Promise<void> {
    const manager = this.runningTaskManager('revokeTasks')
    await this.loop.settled()
    manager.revoke(ids, () => this.loop.commitNow())
    await this.loop.settled()
  }

  /**
   * @internal Closes tasks without a commit while running, as when another process takes them over
   * after this one stopped answering; a durable run only. Assigned again, they resume from their last
   * commit: their state is exact, and output written since that commit is written again (the embedded
   * log cannot take it back: at least once).
   */
  async loseTasks(ids: readonly string[]): Promise<void> {
    const manager = this.runningTaskManager('loseTasks')
    if (!this.committer.durable) throw new PunctualError('ILLEGAL_STATE', 'loseTasks: without a state directory a task has no commit to resume from; revoke it instead')
    await this.loop.settled()
    manager.lose(ids)
  }

  /**
   * @internal Builds, restores and starts tasks while running, as a rebalance that moves them here would;
   * from `changelogs(taskId)` when it gives records (what the changelog listener saw), else from what
   * the runtime kept.
   */
  async assignTasks(ids: readonly string[], changelogs?: (taskId: string) => ChangelogSource | Iterable<ChangelogRecord> | undefined): Promise<void> {
    const manager = this.runningTaskManager('assignTasks')
    // A task restores from the last durable commit.
    await this.loop.settled()
    manager.assign(ids, changelogs)
    this.loop.scheduleRun()
    this.loop.rearm()
    await manager.restored(ids)
  }

  /**
   * Resolves once the records appended so far are processed (no processing run is pending) and no
   * commit is being written: read the stores or move a manual clock after it, so that what a query sees
   * or what fires does not depend on how fast the machine is. Rejects with the error of a commit that
   * failed.
   */
  idle(): Promise<void> {
    return this.loop.idle()
  }

  /**
   * The tasks restoring, and how far each has come: empty, unless tasks were moved while the runtime
   * runs (`start()` restores every task from the state directory before it returns).
   */
  restoreProgress(): RestoreProgress[] {
    return this.taskManager?.restoreProgress() ?? []
  }

  /** @internal Resolves once no task is restoring (they restore after `start()` returns, between processing slices). */
  async restored(): Promise<void> {
    const manager = this.taskManager
    if (manager !== undefined) await manager.restored(manager.restoringIds())
  }

  private runningTaskManager(call: string): TaskManager {
    if (this.currentState !== 'RUNNING' || this.taskManager === undefined) throw new PunctualError('ILLEGAL_STATE', `${call}: the runtime is ${this.currentState}, not RUNNING`)
    return this.taskManager
  }

  /**
   * How many commits ran, how long each took until durable (with a state directory, until lmdb committed
   * it) and how long it held the event loop.
   */
  commitStats(): CommitStats {
    return this.committer.stats()
  }

  /** @internal The last committed checkpoint of each task. */
  committed(): ReadonlyMap<string, TaskCheckpoint> {
    return this.committer.committed()
  }

  /**
   * The end offset of each partition of `topic` as of the last commit. In a durable run this is what
   * survives a crash: a source that feeds the runtime resumes after these records.
   */
  committedEndOffsets(topic: string): number[] {
    if (this.durableTopics !== undefined) return this.durableTopics.committedEnds(topic)
    return this.topics.partitions(topic).map((l) => l.endOffset())
  }

  /**
   * A read-only view of store `name` for interactive queries (Kafka Streams' `KafkaStreams.store`):
   * key-value `get`, `range`, `all`, `approximateNumEntries`; window `fetch` and `fetchAll`; session
   * `fetch` and `findSessions`; versioned `get(key, asOf)`, as `type` says
   * (`QueryableStoreTypes.keyValueStore<K, V>()`, ...). It reads every task's instance of the store at
   * each call, between records, so it sees the state as processed so far (committed or not). Calls
   * while the runtime is not running fail with ILLEGAL_STATE; a store the topology does not have, one
   * that cannot be queried, or the wrong type fail here, naming the store.
   */
  store<T>(name: string, type: QueryableStoreType<T>): T {
    return queryableStore(this.topology, name, type, (storeName) => {
      if (this.currentState !== 'RUNNING') {
        throw new PunctualError('ILLEGAL_STATE', `store "${storeName}": the runtime is ${this.currentState}; stores can be queried while it runs`)
      }
      const global = this.globals?.get(storeName)
      return global === undefined ? localStores(this.tasks, storeName) : [global]
    }, (storeName) => this.tasksRestoring(storeName))
  }

  /** The tasks restoring here (assigned while running) whose sub-topology holds store `storeName`. */
  private tasksRestoring(storeName: string): string[] {
    const restoring = this.taskManager?.restoringIds() ?? []
    if (restoring.length === 0) return restoring
    const holding = new Set(this.topology.subtopologies().flatMap((sub, i) => (sub.stores.some((b) => b.name === storeName) ? [i] : [])))
    return restoring.filter((id) => holding.has(Number(id.slice(0, id.indexOf('_')))))
  }

  /** The tasks this runtime runs (`<subtopology>_<partition>`): one per input partition of each sub-topology. */
  taskIds(): string[] {
    return this.tasks.map((t) => t.taskId.toString())
  }

  /**
   * One commit: task checkpoints and, in a durable run, their changes, new records and input positions,
   * in one transaction. Once it is durable, memory frees the records every reader has committed past.
   */
  private writeCommit(): Promise<void> | undefined {
    const readTo = taskReadPositions(this.tasks, this.subscriptions, this.topics)
    const durable = this.durableTopics
    const written = this.committer.commit(this.tasks, durable === undefined ? undefined : (writer) => durable.write(writer, readTo, this.clock.now()))
    const release = (): void => {
      durable?.committed()
      // Without a state directory nothing reads a global topic again: what its store applied can go.
      // (With one, a restart reads it again from its start, so it stays.)
      if (durable === undefined) this.globals?.forEachPosition((input, offset) => readTo.set(input as PartitionLog, Math.min(offset, readTo.get(input as PartitionLog) ?? Infinity)))
      releaseConsumed(readTo, this.subscriptions, this.topics, durable)
    }
    if (written === undefined) {
      release()
      return undefined
    }
    return written.then(release)
  }

  /**
   * Closes the checkpoint store and releases the state directory once the store has closed (its writes
   * in flight ended): until then the directory stays locked, so that no runtime opens it meanwhile.
   * Undefined when there is nothing to wait for.
   */
  private closeStateDirectory(): Promise<void> | undefined {
    const closed = this.committer.close()
    const release = (): void => {
      this.stateDirectory?.release()
      this.stateDirectory = undefined
      if (this.ownsStateDir) rmSync(this.config.stateDir, { recursive: true, force: true })
    }
    if (closed === undefined) {
      release()
      return undefined
    }
    return closed.then(release, release)
  }

  /**
   * Stops on a failure while running: tells the `'error'` listeners (or logs it when there are none)
   * once the state directory is released, so a listener may open it again at once. A state directory
   * that failed to write is not waited for: lmdb's close after failed writes has crashed the process
   * (a double free), and a listener that exits at once leaves the close to the exit.
   */
  private fail(err: unknown): void {
    const { error, closed } = this.shutDownOnFailure(err)
    this.failure = error
    const writeFailed = error instanceof PunctualError && error.code === 'STATE_DIR'
    if (closed === undefined || writeFailed) this.events.failed(error)
    else void closed.then(() => this.events.failed(error))
  }

  /** Closes tasks and the state directory after a failure; the first failure is the one reported. */
  private shutDownOnFailure(err: unknown): { error: Error; closed: Promise<void> | undefined } {
    const error = err instanceof Error ? err : new Error(String(err))
    this.setState('ERROR')
    this.loop.disarm()
    for (const task of this.tasks) {
      try {
        task.close()
      } catch {
        // Close errors after the failure add nothing.
      }
    }
    return { error, closed: this.closeStateDirectory() }
  }
}
