import { PunctualError } from '../errors.js'
import { readKey, readValue } from '../processor/record-io.js'
import type { PartitionLog } from '../embedded/log/partition-log.js'
import { TopicRegistry } from '../embedded/log/topics.js'
import { sumMetrics } from '../metrics.js'
import type { MetricsSnapshot, TaskMetricsSnapshot } from '../metrics.js'
import { NO_HEADERS } from '../processor/api.js'
import { topicArgument } from '../processor/topic.js'
import type { Topic } from '../processor/topic.js'
import type { Headers, KeyValueStore, StateStore, StoreKey, StreamRecord, VersionedKeyValueStore } from '../processor/api.js'
import { ErrorHandlers } from '../processor/errors.js'
import type { ErrorHandler } from '../processor/errors.js'
import { StreamTask } from '../processor/internal/task.js'
import type { TaskCheckpoint } from '../processor/internal/task-config.js'
import { checkWritable } from '../processor/serdes.js'
import type { Serde } from '../processor/serdes.js'
import type { KeyValue } from '../dsl/options.js'
import { checkTimestamp, topicSerdes } from '../processor/topic-access.js'
import type { Topology } from '../processor/topology.js'
import { checkAdvance, checkWallClockStart, ManualClock } from '../time/clock.js'
import { consoleLogger } from '../util/logger.js'
import { temporaryStateDir } from '../util/state-dir.js'
import { localStores, queryableStore } from '../query/queryable-stores.js'
import { GlobalStores } from '../processor/internal/global-stores.js'
import type { QueryableStoreType } from '../query/queryable-stores.js'
import { checkTimestampExtractor } from '../processor/timestamp-extractor.js'
import type { TimestampExtractor } from '../processor/timestamp-extractor.js'

/** Options of a {@link TopologyTestDriver}: its clock, and what the runtimes' config would set. */
export interface TestDriverOptions {
  /** Start of the manual wall clock, epoch ms: an integer >= 0. @default 0 */
  wallClockStartMs?: number
  /**
   * How long, on the manual clock, a task reading several topics waits for an empty one before it
   * processes the others (Kafka Streams' `max.task.idle.ms`): with 0 every piped record is processed at
   * once; with more, a record waits for the other topics or for `advanceWallClockTime`. @default 0
   */
  maxTaskIdleMs?: number
  /**
   * Where the event time of records comes from, for sources that set no `timestampExtractor`, as the
   * runtimes' `defaultTimestampExtractor`. Its `wallClockMs` is the driver's manual clock.
   * @default each record's own timestamp
   */
  defaultTimestampExtractor?: TimestampExtractor
  /** @default ErrorHandlers.failOnUserCodeErrors(): user code that throws fails the call that ran it; bad input is logged and skipped */
  errorHandler?: ErrorHandler
  /** Where tasks keep files (spilled suppression buffers). @default a new directory under the system temp dir */
  stateDir?: string
  /** Resume from a previous driver's `checkpoint()`: stream time, punctuation last-fire times, stores, keyed state and timers (topics start empty). */
  checkpoint?: DriverCheckpoint
}

declare const driverCheckpoint: unique symbol

/**
 * What a driver's tasks would commit now, per task: stream time, punctuation last-fire times, stores,
 * keyed state and timers (not the topics' records). Opaque: hand it to a new driver's `checkpoint`
 * option to test a restart.
 */
export interface DriverCheckpoint {
  /** Type-level only: makes the type opaque, so that only a driver's `checkpoint()` makes one. */
  readonly [driverCheckpoint]: 'DriverCheckpoint'
}

/** The per-task checkpoints inside a DriverCheckpoint. */
function tasksOf(c: DriverCheckpoint | undefined): Readonly<Record<string, TaskCheckpoint>> | undefined {
  return c as unknown as Readonly<Record<string, TaskCheckpoint>> | undefined
}

/**
 * Runs a topology synchronously on a manual clock, as Kafka Streams' TopologyTestDriver does: every
 * topic has one partition, each piped record is processed at once (then stream-time punctuations due
 * are fired), and wall-clock punctuations fire only in `advanceWallClockTime`.
 */
export class TopologyTestDriver {
  private readonly clock: ManualClock
  private readonly topics = new TopicRegistry(1)
  private readonly tasks: StreamTask[] = []
  /** The global stores, updated from their topics before the tasks process. */
  private readonly globals: GlobalStores
  private closed = false

  private readonly topology: Topology

  constructor(topology: Topology, options: TestDriverOptions = {}) {
    this.topology = topology
    checkWallClockStart('TopologyTestDriver', 'wallClockStartMs', options.wallClockStartMs ?? 0)
    this.clock = new ManualClock(options.wallClockStartMs ?? 0)
    const errorHandler = options.errorHandler ?? ErrorHandlers.failOnUserCodeErrors(consoleLogger)
    const stateDir = options.stateDir ?? temporaryStateDir('test-driver')
    for (const g of topology.globalStores()) this.topics.create(g.topic, 1)
    this.globals = new GlobalStores(
      topology.globalStores(),
      (topic) => this.topics.partitions(topic),
      () => this.clock.now(),
      (topic, partition, offset, error) => {
        throw new PunctualError('DESERIALIZATION', `global store topic ${topic}-${partition} offset ${offset}: ${(error as Error).message}`, { cause: error })
      },
    )
    const globals = this.globals
    for (const sub of topology.subtopologies()) {
      for (const t of sub.sourceTopics) this.topics.create(t, 1)
      this.tasks.push(
        new StreamTask({
          subtopology: sub,
          partition: 0,
          ...this.topics.taskIo(),
          clock: this.clock,
          maxTaskIdleMs: options.maxTaskIdleMs ?? 0,
          defaultTimestampExtractor: checkTimestampExtractor(options.defaultTimestampExtractor, 'TopologyTestDriver: defaultTimestampExtractor'),
          errorHandler,
          stateDir,
          checkpoint: withoutPositions(tasksOf(options.checkpoint)?.[`${sub.id}_0`]),
          globalStores: (name) => globals.get(name),
        }),
      )
    }
    for (const task of this.tasks) task.init()
    this.processAll()
  }

  /**
   * An input topic: one that a source of the topology reads (another name is refused, listing the
   * topology's topics), given as a `Topic` (whose types the compiler then checks) or by name. The serdes default to the ones the source reads with.
   */
  createInputTopic<K, V>(topic: Topic<K, V>): TestInputTopic<K, V>
  /** An input topic by name: `K` and `V` are what the caller says they are. */
  createInputTopic<K = unknown, V = unknown>(name: string, keySerde?: Serde<K>, valueSerde?: Serde<V>): TestInputTopic<K, V>
  createInputTopic<K, V>(topic: string | Topic<K, V>, keySerde?: Serde<K>, valueSerde?: Serde<V>): TestInputTopic<K, V> {
    const given = topicArgument('createInputTopic', topic, keySerde, valueSerde)
    const serdes = topicSerdes(this.topology, given.name, 'input', `createInputTopic("${given.name}")`, given.keySerde, given.valueSerde)
    return new TestInputTopic(this, given.name, serdes.keySerde, serdes.valueSerde)
  }

  /**
   * An output topic: one that a sink of the topology writes (another name is refused), given as a
   * `Topic` or by name. The serdes default
   * to the ones the sink writes with; a built-in serde other than the sink's is refused.
   */
  createOutputTopic<K, V>(topic: Topic<K, V>): TestOutputTopic<K, V>
  /** An output topic by name: `K` and `V` are what the caller says they are. */
  createOutputTopic<K = unknown, V = unknown>(name: string, keySerde?: Serde<K>, valueSerde?: Serde<V>): TestOutputTopic<K, V>
  createOutputTopic<K, V>(topic: string | Topic<K, V>, keySerde?: Serde<K>, valueSerde?: Serde<V>): TestOutputTopic<K, V> {
    const given = topicArgument('createOutputTopic', topic, keySerde, valueSerde)
    const serdes = topicSerdes(this.topology, given.name, 'output', `createOutputTopic("${given.name}")`, given.keySerde, given.valueSerde)
    return new TestOutputTopic(this.topics.partitions(given.name), given.name, serdes.keySerde, serdes.valueSerde)
  }

  /** Moves the manual wall clock forward by `ms` (an integer >= 0) and fires the wall-clock punctuations that became due. */
  advanceWallClockTime(ms: number): void {
    this.assertOpen()
    checkAdvance('advanceWallClockTime', ms)
    const now = this.clock.advance(ms)
    for (const task of this.tasks) task.punctuateWallClock(now)
    this.processAll()
  }

  /** Current wall-clock time of the manual clock. */
  wallClockTime(): number {
    return this.clock.now()
  }

  /**
   * The store `name` itself (Kafka Streams' `TopologyTestDriver.getStateStore`), for reading and writing
   * in a test; the first task's when several hold one. Undefined when no task holds it.
   */
  getStateStore<S extends StateStore = StateStore>(name: string): S | undefined {
    for (const task of this.tasks) {
      const store = task.getStore(name)
      if (store !== undefined) return store as S
    }
    return undefined
  }

  /**
   * A read-only view of store `name`, as the runtimes' interactive queries give it
   * (`EmbeddedRuntime.store`): `QueryableStoreTypes.keyValueStore<K, V>()`, `windowStore`,
   * `sessionStore` or `versionedKeyValueStore`, in the application's keys and values.
   */
  store<T>(name: string, type: QueryableStoreType<T>): T {
    return queryableStore(this.topology, name, type, (storeName) => {
      this.assertOpen()
      const global = this.globals.get(storeName)
      return global === undefined ? localStores(this.tasks, storeName) : [global]
    })
  }

  /** {@link TopologyTestDriver.getStateStore} typed as a key-value store (Kafka Streams' `getKeyValueStore`); the type is not checked. */
  getKeyValueStore<K extends StoreKey, V>(name: string): KeyValueStore<K, V> | undefined {
    return this.getStateStore<KeyValueStore<K, V>>(name)
  }

  /** {@link TopologyTestDriver.getStateStore} typed as a versioned store (Kafka Streams' `getVersionedKeyValueStore`); the type is not checked. */
  getVersionedKeyValueStore<K extends StoreKey, V>(name: string): VersionedKeyValueStore<K, V> | undefined {
    return this.getStateStore<VersionedKeyValueStore<K, V>>(name)
  }

  /** Pending user timers of a keyed processor for one key, per domain, in firing order. */
  pendingTimers(processorName: string, key: StoreKey): { event: number[]; processing: number[] } {
    for (const task of this.tasks) {
      const t = task.pendingTimers(processorName, key)
      if (t !== undefined) return t as { event: number[]; processing: number[] }
    }
    throw new PunctualError('ILLEGAL_STATE', `no keyed processor named "${processorName}" in this topology`)
  }

  /** How many user timers a keyed processor has pending, per domain, over all keys. */
  pendingTimerCount(processorName: string): { event: number; processing: number } {
    for (const task of this.tasks) {
      const t = task.pendingTimers(processorName)
      if (t !== undefined) return t as { event: number; processing: number }
    }
    throw new PunctualError('ILLEGAL_STATE', `no keyed processor named "${processorName}" in this topology`)
  }

  /** Counters summed over the tasks, and each task as it stands (as a runtime's `metrics()` gives them). */
  metrics(): MetricsSnapshot & { readonly tasks: readonly TaskMetricsSnapshot[] } {
    return { ...sumMetrics(this.tasks.map((t) => t.metrics)), tasks: this.tasks.map((t) => t.metricsSnapshot()) }
  }

  /** What the tasks would commit now; pass it to a new driver to simulate a restart. */
  checkpoint(): DriverCheckpoint {
    return Object.fromEntries(this.tasks.map((t) => [t.taskId.toString(), t.checkpoint()])) as unknown as DriverCheckpoint
  }

  /**
   * Closes the tasks (each processor's `close`) and the stores (Kafka Streams' `TopologyTestDriver.close`).
   * Piping, advancing time and reading stores throw `ILLEGAL_STATE` afterwards; closing twice is a no-op.
   */
  close(): void {
    if (this.closed) return
    this.closed = true
    for (const task of this.tasks) task.close()
    this.globals.close()
  }

  /** @internal */
  append(topic: string, key: unknown, keySerde: Serde<unknown>, value: unknown, valueSerde: Serde<unknown>, timestamp: number, headers: Headers): void {
    this.assertOpen()
    this.topics.send(topic, 0, key, keySerde, value, valueSerde, timestamp, headers)
    this.processAll()
  }

  /** Runs tasks until none has work left (outputs of one may be inputs of another). */
  private processAll(): void {
    let progressed = true
    while (progressed) {
      progressed = this.globals.update() > 0
      for (const task of this.tasks) if (task.process(Infinity) > 0) progressed = true
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new PunctualError('ILLEGAL_STATE', 'the TopologyTestDriver is closed')
  }
}

/** A new driver starts with empty topics, so only stream time and punctuation state carry over. */
function withoutPositions(c: TaskCheckpoint | undefined): TaskCheckpoint | undefined {
  return c === undefined ? undefined : { ...c, positions: {} }
}

/** Records piped into an input topic (from `driver.createInputTopic`). */
export class TestInputTopic<K, V> {
  /** @internal */
  constructor(
    private readonly driver: TopologyTestDriver,
    /** The topic's name. */
    readonly name: string,
    private readonly keySerde: Serde<K>,
    private readonly valueSerde: Serde<V>,
  ) {}

  /**
   * Pipes one record; the timestamp defaults to the driver's wall-clock time. A timestamp that is not an
   * integer epoch millisecond >= 0, and a key or value a built-in serde cannot write (a number key on a
   * String topic), are refused at the call.
   */
  pipeInput(key: K | null, value: V | null, timestamp?: number, headers: Headers = NO_HEADERS): void {
    const ts = timestamp ?? this.driver.wallClockTime()
    const caller = `pipeInput on "${this.name}"`
    checkTimestamp(caller, ts)
    checkWritable(this.keySerde as Serde<unknown>, 'key', key, key, 'topic', this.name, caller)
    checkWritable(this.valueSerde as Serde<unknown>, 'value', value, key, 'topic', this.name, caller)
    this.driver.append(this.name, key, this.keySerde as Serde<unknown>, value, this.valueSerde as Serde<unknown>, ts, headers)
  }

  /** Pipes each record in turn, as {@link TestInputTopic.pipeInput} (Kafka Streams' `pipeRecordList`). */
  pipeRecordList(records: Iterable<{ key: K | null; value: V | null; timestamp?: number }>): void {
    for (const r of records) this.pipeInput(r.key, r.value, r.timestamp)
  }
}

/** The records a sink wrote to an output topic, read in order (from `driver.createOutputTopic`). */
export class TestOutputTopic<K, V> {
  private position = 0

  /** @internal */
  constructor(
    private readonly logs: PartitionLog[],
    /** The topic's name. */
    readonly name: string,
    private readonly keySerde: Serde<K>,
    private readonly valueSerde: Serde<V>,
  ) {}

  private get log(): PartitionLog {
    return this.logs[0] as PartitionLog
  }

  /** How many records wait to be read. */
  getQueueSize(): number {
    return this.log.endOffset() - this.position
  }

  /** Whether no record waits to be read. */
  isEmpty(): boolean {
    return this.getQueueSize() === 0
  }

  /**
   * Reads the next record: key and value through the topic's serdes, timestamp and headers as written.
   * @throws PunctualError `ILLEGAL_STATE` when no record waits (Kafka Streams throws NoSuchElementException).
   */
  readRecord(): StreamRecord<K | null, V | null> {
    const raw = this.log.get(this.position)
    if (raw === undefined) throw new PunctualError('ILLEGAL_STATE', `output topic "${this.name}" has no record to read`)
    this.position++
    return {
      key: readKey(raw, this.keySerde as Serde<unknown>, this.name) as K | null,
      value: readValue(raw, this.valueSerde as Serde<unknown>, this.name) as V | null,
      timestamp: raw.timestamp,
      headers: raw.headers,
    }
  }

  /**
   * Reads the next record's key and value.
   * @throws PunctualError as {@link TestOutputTopic.readRecord}.
   */
  readKeyValue(): KeyValue<K | null, V | null> {
    const r = this.readRecord()
    return { key: r.key, value: r.value }
  }

  /**
   * Reads the next record's value.
   * @throws PunctualError as {@link TestOutputTopic.readRecord}.
   */
  readValue(): V | null {
    return this.readRecord().value
  }

  /** Reads every record waiting (an empty array when none does). */
  readRecordsToList(): Array<StreamRecord<K | null, V | null>> {
    const out: Array<StreamRecord<K | null, V | null>> = []
    while (!this.isEmpty()) out.push(this.readRecord())
    return out
  }

  /** Reads every record waiting, keys and values (Kafka Streams' `readKeyValuesToList`). */
  readKeyValuesToList(): Array<KeyValue<K | null, V | null>> {
    return this.readRecordsToList().map((r) => ({ key: r.key, value: r.value }))
  }

  /** Reads every record waiting, values only (Kafka Streams' `readValuesToList`). */
  readValuesToList(): Array<V | null> {
    return this.readRecordsToList().map((r) => r.value)
  }
}
