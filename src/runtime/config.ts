import type { MetricsEndpoint } from '../monitoring/metrics-server.js'
import type { ErrorHandler } from '../processor/errors.js'
import type { TimestampExtractor } from '../processor/timestamp-extractor.js'
import type { Clock } from '../time/clock.js'
import type { Scheduler } from '../time/scheduler.js'
import type { Logger } from '../util/logger.js'

/**
 * The settings both runtimes take, with the same meaning (what Kafka Streams' `StreamsConfig` sets for
 * a `KafkaStreams`): `EmbeddedRuntimeConfig` and the Kafka runtime's settings add their own. Where a
 * default or a detail differs between the runtimes, the setting says so. Checked by the runtime's
 * constructor: an invalid value throws `INVALID_CONFIG`, naming it.
 */
export interface RuntimeConfig {
  /**
   * Names the application: in logs and in its state directory; on Kafka, also its consumer group, the
   * prefix of its internal topics and its transactional ids (every instance of one application uses
   * the same id). Letters, digits, '.', '_' and '-'.
   */
  applicationId: string
  /** How often processed positions are committed. @default 100 (on Kafka at least once, 30000, as Kafka Streams) */
  commitIntervalMs?: number
  /**
   * Commit also after this many records, so that one commit never holds too many changes (commits run
   * on the event loop; a big one delays everything else). The embedded runtime counts only with a
   * state directory. @default 20000 (on Kafka, 50000)
   */
  commitMaxRecords?: number
  /**
   * How long a task of several input partitions waits for an empty one before processing the others
   * (Kafka Streams' `max.task.idle.ms`); -1 never waits. In the embedded runtime every record appended
   * is there to read, so -1 is the same as 0; on Kafka an empty partition with records on the broker
   * not yet fetched is waited for in any case, unless this is -1. @default 0
   */
  maxTaskIdleMs?: number
  /**
   * Where the event time of records comes from, for sources that set no `timestampExtractor` (Kafka
   * Streams' `default.timestamp.extractor`). Default: each record's own timestamp.
   */
  defaultTimestampExtractor?: TimestampExtractor
  /**
   * The application's state directory: new, empty, or this application's (another folder is refused),
   * held by one process at a time. In the embedded runtime it makes the run durable (see
   * `EmbeddedRuntimeConfig`); on Kafka it holds spill files and the tasks' local state, written at
   * every commit, so that a task assigned here again (a restart too) reads only its changelog's tail.
   * @default a temporary directory, removed on stop
   */
  stateDir?: string
  /** @default the system clock */
  clock?: Clock
  /**
   * Runs the runtime's one armed timer (wall-clock punctuations, processing-time timers, commits).
   * @default the embedded runtime: the clock, when it is a Scheduler too (punctual/testing's ManualClock
   * is), else setTimeout on it; on Kafka, setTimeout on the clock
   */
  scheduler?: Scheduler
  /** @default ErrorHandlers.failOnUserCodeErrors(logger) */
  errorHandler?: ErrorHandler
  /**
   * Where input records go that the error handler lets pass (bad input, or a processing error it
   * continues after): their key and value bytes as read, with headers naming the error and the source
   * topic, partition and offset (Kafka Streams' KIP-1034 headers). It must not be a source topic; on
   * Kafka it must exist, and is written in the same transaction as the task's output under
   * exactly-once.
   * @default none: such records are only counted and reported to the handler
   */
  deadLetterTopic?: string
  /** @default writes to stderr */
  logger?: Logger
  /**
   * Serves the metrics over HTTP, opt-in: `GET http://host:port/metrics` in Prometheus' text format
   * (`metricsAddress()` tells where, with port 0 a free one). @default none
   */
  metrics?: MetricsEndpoint
}
