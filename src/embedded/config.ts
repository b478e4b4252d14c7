import { checkDeadLetterTopic, checkStateDir, configInt, invalidConfig } from '../errors.js'
import { ErrorHandlers } from '../processor/errors.js'
import type { ErrorHandler } from '../processor/errors.js'
import { checkTimestampExtractor } from '../processor/timestamp-extractor.js'
import type { TimestampExtractor } from '../processor/timestamp-extractor.js'
import { systemClock } from '../time/clock.js'
import type { Clock } from '../time/clock.js'
import { isScheduler, timerScheduler } from '../time/scheduler.js'
import type { Scheduler } from '../time/scheduler.js'
import { consoleLogger } from '../util/logger.js'
import type { Logger } from '../util/logger.js'
import { temporaryStateDir } from '../util/state-dir.js'
import type { ChangelogListener } from '../runtime/changelog.js'
import { SLICE_COMMITS_ABOVE } from '../state/checkpoint-store.js'
import { validateMetricsEndpoint } from '../monitoring/metrics-server.js'
import type { MetricsEndpoint } from '../monitoring/metrics-server.js'

/** A topic an embedded runtime creates up front (`EmbeddedRuntimeConfig.topics`). */
export interface TopicConfig {
  /** Its partition count, an integer >= 1: the tasks of a sub-topology that reads it are as many. */
  readonly partitions: number
  /**
   * With a state directory: how long records stay in the topic after the commit that made them durable
   * (Kafka's retention.ms, by append time), read or not. @default forever
   */
  readonly retentionMs?: number
}

/**
 * Settings of an {@link EmbeddedRuntime} (what Kafka Streams' `StreamsConfig` sets for a `KafkaStreams`).
 * Checked by the constructor: an invalid value throws `INVALID_CONFIG`, naming it.
 */
export interface EmbeddedRuntimeConfig {
  /** Names the application in logs (and, with durable state, its state directory). */
  applicationId: string
  /** Partitions of topics not created explicitly. @default 1 */
  defaultPartitions?: number
  /** Topics to create up front, with their partition counts. */
  topics?: Record<string, TopicConfig>
  /**
   * How long a task of several input partitions waits for an empty one before processing the others
   * (Kafka Streams' `max.task.idle.ms`); -1, as in Kafka Streams, never waits (here the same as 0: every
   * record appended is there to read). @default 0
   */
  maxTaskIdleMs?: number
  /**
   * Where the event time of records comes from, for sources that set no `timestampExtractor` (Kafka
   * Streams' `default.timestamp.extractor`). Default: each record's own timestamp.
   */
  defaultTimestampExtractor?: TimestampExtractor
  /** How often processed positions are committed. @default 100 */
  commitIntervalMs?: number
  /**
   * With a state directory: commit also after this many records, so one commit never holds too many
   * changes (commits run on the event loop; a big one delays everything else). @default 10000
   */
  commitMaxRecords?: number
  /**
   * With a state directory: a commit with more writes than this (changed state entries and timers) is
   * written a slice of a few milliseconds per event-loop turn, so that it never holds the event loop
   * for long (wall-clock punctuations stay on time), at the cost of more work in all; smaller commits
   * are queued at once. 0 slices every commit. @default 4096
   */
  sliceCommitsAbove?: number
  /** @default the system clock */
  clock?: Clock
  /**
   * Runs the runtime's one armed timer (wall-clock punctuations, processing-time timers, commits).
   * @default the clock, when it is a Scheduler too (punctual/testing's ManualClock is), else setTimeout
   */
  scheduler?: Scheduler
  /** @default ErrorHandlers.failOnUserCodeErrors(logger) */
  errorHandler?: ErrorHandler
  /**
   * Where input records go that the error handler lets pass (bad input, or a processing error it
   * continues after): their key and value bytes as read, with headers naming the error and the source
   * topic, partition and offset (Kafka Streams' KIP-1034 headers). It must not be a source topic.
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
  /**
   * The application's state directory. Given, it makes the run durable: each commit writes the tasks'
   * state, their input positions and the topics to it, and a restart with the same directory resumes
   * exactly where the last commit left off. It must be new, empty, or this application's (another
   * folder is refused), and one process holds it at a time. Without it nothing survives the process:
   * the runtime uses a temporary directory (for spill files) and deletes it on stop.
   * @default a temporary directory, removed on stop
   */
  stateDir?: string
  /**
   * @internal Told what each commit changed in the tasks' state. The record format is not settled yet:
   * it becomes the changelog topics of the Kafka runtime.
   */
  changelog?: ChangelogListener
}

/** Validates once, at construction, and fills in defaults. */
/** A validated configuration: every setting filled in but the optional listener. */
export type ValidEmbeddedConfig = Required<Omit<EmbeddedRuntimeConfig, 'topics' | 'changelog' | 'deadLetterTopic' | 'metrics' | 'defaultTimestampExtractor'>> &
  Pick<EmbeddedRuntimeConfig, 'changelog'> & { readonly defaultTimestampExtractor: TimestampExtractor | undefined; readonly deadLetterTopic: string | undefined; readonly metrics: Required<MetricsEndpoint> | undefined }

export function validateEmbeddedConfig(config: EmbeddedRuntimeConfig): ValidEmbeddedConfig {
  const where = 'EmbeddedRuntime config'
  if (config === null || typeof config !== 'object') throw invalidConfig(where, 'expected an object with at least applicationId')
  if (typeof config.applicationId !== 'string' || !/^[A-Za-z0-9._-]+$/.test(config.applicationId)) {
    throw invalidConfig(where, `applicationId must be a non-empty string of letters, digits, '.', '_' or '-', got ${JSON.stringify(config.applicationId)}`)
  }
  const int = (name: string, value: number | undefined, def: number, min: number): number => configInt(where, name, value, def, min)
  checkStateDir(where, config.stateDir)
  for (const [name, t] of Object.entries(config.topics ?? {})) {
    if (t.retentionMs !== undefined && (!Number.isSafeInteger(t.retentionMs) || t.retentionMs < 0)) {
      throw invalidConfig(where, `topic "${name}": retentionMs must be an integer >= 0, got ${JSON.stringify(t.retentionMs)}`)
    }
  }
  if (config.changelog !== undefined && typeof config.changelog !== 'function') {
    throw invalidConfig(where, `changelog must be a function (changes) => void, got ${typeof config.changelog}`)
  }
  const logger = config.logger ?? consoleLogger
  const clock = config.clock ?? systemClock
  if (config.scheduler !== undefined && !isScheduler(config.scheduler)) throw invalidConfig(where, 'scheduler must have at(dueMs, callback) returning a cancel function')
  return {
    applicationId: config.applicationId,
    defaultPartitions: int('defaultPartitions', config.defaultPartitions, 1, 1),
    maxTaskIdleMs: int('maxTaskIdleMs', config.maxTaskIdleMs, 0, -1),
    defaultTimestampExtractor: checkTimestampExtractor(config.defaultTimestampExtractor, `${where}: defaultTimestampExtractor`),
    commitIntervalMs: int('commitIntervalMs', config.commitIntervalMs, 100, 1),
    commitMaxRecords: int('commitMaxRecords', config.commitMaxRecords, 10_000, 1),
    sliceCommitsAbove: int('sliceCommitsAbove', config.sliceCommitsAbove, SLICE_COMMITS_ABOVE, 0),
    clock,
    scheduler: config.scheduler ?? (isScheduler(clock) ? clock : timerScheduler(clock)),
    errorHandler: config.errorHandler ?? ErrorHandlers.failOnUserCodeErrors(logger),
    deadLetterTopic: checkDeadLetterTopic(where, config.deadLetterTopic),
    logger,
    stateDir: config.stateDir ?? temporaryStateDir(config.applicationId),
    metrics: validateMetricsEndpoint(where, config.metrics),
    ...(config.changelog === undefined ? {} : { changelog: config.changelog }),
  }
}
