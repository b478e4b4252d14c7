import { checkDeadLetterTopic, checkLogger, checkStateDir, configInt, invalidConfig } from '../errors.js'
import { ErrorHandlers } from '../processor/errors.js'
import { checkTimestampExtractor } from '../processor/timestamp-extractor.js'
import type { TimestampExtractor } from '../processor/timestamp-extractor.js'
import { systemClock } from '../time/clock.js'
import { isScheduler, timerScheduler } from '../time/scheduler.js'
import { temporaryStateDir } from '../util/state-dir.js'
import type { ChangelogListener } from '../runtime/changelog.js'
import type { RuntimeConfig } from '../runtime/config.js'
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
 * Settings of an `EmbeddedRuntime`: those both runtimes take (`RuntimeConfig`), its topics, and how it
 * writes commits. Checked by the constructor: an invalid value throws `INVALID_CONFIG`, naming it.
 *
 * `stateDir`, given, makes the run durable: each commit writes the tasks' state, their input positions
 * and the topics to it, and a restart with the same directory resumes exactly where the last commit left
 * off. Without it nothing survives the process: the runtime uses a temporary directory (for spill files)
 * and deletes it on stop.
 */
export interface EmbeddedRuntimeConfig extends RuntimeConfig {
  /** Partitions of topics not created explicitly. @default 1 */
  defaultPartitions?: number
  /** Topics to create up front, with their partition counts. */
  topics?: Record<string, TopicConfig>
  /**
   * With a state directory: a commit with more writes than this (changed state entries and timers) is
   * written a slice of a few milliseconds per event-loop turn, so that it never holds the event loop
   * for long (wall-clock punctuations stay on time), at the cost of more work in all; smaller commits
   * are queued at once. 0 slices every commit. @default 4096
   */
  sliceCommitsAbove?: number
  /**
   * @internal Told what each commit changed in the tasks' state. The record format is not settled yet:
   * it becomes the changelog topics of the Kafka runtime.
   */
  changelog?: ChangelogListener
}

/** A validated configuration: every setting filled in but the optional listener. */
export type ValidEmbeddedConfig = Required<Omit<EmbeddedRuntimeConfig, 'topics' | 'changelog' | 'deadLetterTopic' | 'metrics' | 'defaultTimestampExtractor'>> &
  Pick<EmbeddedRuntimeConfig, 'changelog'> & { readonly defaultTimestampExtractor: TimestampExtractor | undefined; readonly deadLetterTopic: string | undefined; readonly metrics: Required<MetricsEndpoint> | undefined }

/** Validates once, at construction, and fills in defaults. */
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
  const logger = checkLogger(where, config.logger)
  const clock = config.clock ?? systemClock
  if (config.scheduler !== undefined && !isScheduler(config.scheduler)) throw invalidConfig(where, 'scheduler must have at(dueMs, callback) returning a cancel function')
  return {
    applicationId: config.applicationId,
    defaultPartitions: int('defaultPartitions', config.defaultPartitions, 1, 1),
    maxTaskIdleMs: int('maxTaskIdleMs', config.maxTaskIdleMs, 0, -1),
    defaultTimestampExtractor: checkTimestampExtractor(config.defaultTimestampExtractor, `${where}: defaultTimestampExtractor`),
    commitIntervalMs: int('commitIntervalMs', config.commitIntervalMs, 100, 1),
    commitMaxRecords: int('commitMaxRecords', config.commitMaxRecords, 20_000, 1),
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
