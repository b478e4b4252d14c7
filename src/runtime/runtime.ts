import type { CommitStats, RestoreProgress, RuntimeMetrics, TaskEvent } from '../metrics.js'
import type { MetricsAddress } from '../monitoring/metrics-server.js'
import type { QueryableStoreType } from '../query/queryable-stores.js'

/**
 * A runtime's lifecycle, as Kafka Streams' `KafkaStreams.State` names it: `CREATED` until `start()`,
 * `RUNNING`, `PENDING_SHUTDOWN` while `stop()` commits and closes, then `NOT_RUNNING`; `ERROR` after a
 * failure stopped it (while running, or during `start()`).
 */
export type RuntimeState = 'CREATED' | 'RUNNING' | 'PENDING_SHUTDOWN' | 'NOT_RUNNING' | 'ERROR'

/**
 * What both runtimes are, the embedded one (`EmbeddedRuntime`: every task in this process, over
 * in-memory topics kept in its state directory) and the Kafka one (`KafkaRuntime`: the tasks a consumer
 * group assigns this instance, over a cluster's topics), with the same shapes (Kafka Streams'
 * `KafkaStreams`): start and stop, the state and its listeners, metrics, commits, interactive queries,
 * tasks and their restores. Code written against it runs on either; where the runtimes differ, the
 * member says how. Each runtime adds its own: the embedded one its producers and subscriptions, the
 * Kafka one its lookups of the instance that holds a key.
 */
export interface StreamsRuntime {
  /** CREATED, RUNNING, PENDING_SHUTDOWN, NOT_RUNNING or ERROR. */
  readonly state: RuntimeState

  /**
   * Starts processing; resolves once the runtime is `RUNNING`. A failure here (an invalid schedule, a
   * state directory that cannot be used, a cluster out of reach) rejects this promise, and only it: it
   * is not also emitted as `'error'`, and a later `stop()` resolves. A runtime starts once; a second
   * call rejects with ILLEGAL_STATE.
   *
   * - The embedded runtime opens the state directory, restores every task from it and starts within
   *   the call, synchronously: when `start()` returns, the runtime is `RUNNING` (or the returned
   *   promise rejects), its tasks restored, and producers, queries and `resumed` may be used at once.
   * - The Kafka runtime connects, checks the topology against the cluster, creates its internal topics
   *   and joins the group; it resolves once this instance is in the group. Tasks come with the
   *   assignment, each restored from its changelog before it processes.
   */
  start(): Promise<void>

  /**
   * Commits what was processed, closes the tasks and releases the state directory; resolves once
   * `NOT_RUNNING`. Rejects with the failure if the runtime had stopped on an error. A runtime never
   * started goes to `NOT_RUNNING` at once.
   *
   * `drain` (default true) is the embedded runtime's: it first finishes the restores under way and
   * processes every record already in its input topics; with `drain: false` it commits what it has
   * processed, and the records left stay in the topics (a durable run processes them after a restart).
   * On Kafka `drain` changes nothing: the input stays on the cluster's topics, and what this instance
   * did not process, the next owner of its partitions processes from the committed offsets; the
   * runtime commits, then leaves the group.
   */
  stop(options?: { drain?: boolean }): Promise<void>

  /**
   * Calls `listener` when the runtime stops on a failure while running (Kafka Streams'
   * `StreamsUncaughtExceptionHandler`, as a listener; not for a failing `start()`, which rejects). A
   * listener of any event that throws is logged.
   */
  on(event: 'error', listener: (err: Error) => void): this
  /** Calls `listener` with the new state and the previous one at each change of `state` (Kafka Streams' `StateListener`). */
  on(event: 'stateChange', listener: (next: RuntimeState, previous: RuntimeState) => void): this
  /** Calls `listener` at each step of a task's lifecycle: assigned, restoring (with progress), running, revoked or lost. */
  on(event: 'task', listener: (event: TaskEvent) => void): this

  /**
   * Counters summed over every task this runtime ran, and each active task as it stands: stream time and
   * its lag behind the clock, record lateness, wall-clock punctuation lateness, pending timers, what each
   * suppression buffers; restores under way and commit times.
   */
  metrics(): RuntimeMetrics

  /** Where the metrics are served (the `metrics` setting), once listening; undefined without the setting. */
  metricsAddress(): Promise<MetricsAddress | undefined>

  /**
   * How many commits ran, how long each took until durable and how long it held the event loop; no
   * commits before `start()`. Durable means: in the embedded runtime with a state directory, once lmdb
   * committed it (without one, once taken); on Kafka, once the transaction (at least once, the offsets)
   * committed.
   */
  commitStats(): CommitStats

  /**
   * A read-only view of store `name` for interactive queries (Kafka Streams' `KafkaStreams.store`):
   * key-value `get`, `range`, `all`, `approximateNumEntries`; window `fetch` and `fetchAll`; session
   * `fetch` and `findSessions`; versioned `get(key, asOf)`, as `type` says
   * (`QueryableStoreTypes.keyValueStore<K, V>()`, ...). It reads the store's instance in each task the
   * runtime runs, at each call, between records: the state as processed so far (committed or not).
   * Calls while the runtime is not running fail with ILLEGAL_STATE; a store the topology does not
   * have, one that cannot be queried, or the wrong type fail here, naming the store. While a task
   * holding the store restores, a lookup that finds nothing, and every range or scan, fails with
   * STORE_NOT_READY (retriable).
   *
   * The embedded runtime runs every task, so it holds every key. A Kafka instance holds the keys of
   * the tasks the group assigned it: another instance's key is not found here (`queryMetadataForKey`
   * names the instance that has it).
   */
  store<T>(name: string, type: QueryableStoreType<T>): T

  /**
   * The tasks this runtime runs now (restored and processing), as `<subtopology>_<partition>`: in the
   * embedded runtime every task of the topology, one per input partition of each sub-topology; on
   * Kafka those of the partitions the group assigned this instance.
   */
  taskIds(): string[]

  /**
   * The tasks restoring, and how far each has come. The embedded runtime restores its tasks within
   * `start()`, so this is empty unless tasks were moved while it runs; a Kafka instance restores each
   * task the group assigns it from its changelog (after its local state, when it has some).
   */
  restoreProgress(): RestoreProgress[]
}
