import { consoleLogger, guardedLogger, notALogger } from './util/logger.js'
import type { Logger } from './util/logger.js'
/**
 * Every error punctual raises carries a code from this one list, so callers can branch on `err.code`
 * instead of parsing messages.
 */
export const ERROR_CODES = [
  /** A configuration value is invalid (interval < 1, bad cron expression, unknown time zone, ...). */
  'INVALID_CONFIG',
  /** The topology graph is malformed (unknown parent, duplicate name, unconnected store, ...). */
  'INVALID_TOPOLOGY',
  /** A key or value could not be deserialized. */
  'DESERIALIZATION',
  /** A record's timestamp is negative or not an integer. */
  'INVALID_TIMESTAMP',
  /** User code threw while processing a record or a punctuation. */
  'PROCESSING',
  /** A call got an argument it cannot take (a negative timer timestamp, ...). */
  'INVALID_ARGUMENT',
  /** An operation was called at a moment it is not allowed (after close, outside init, ...). */
  'ILLEGAL_STATE',
  /** A suppression buffer exceeded its bound and is configured to stop (shutDownWhenFull). */
  'BUFFER_FULL',
  /** A state directory cannot be used: corrupt, another application's, another format version. */
  'STATE_DIR',
  /** Another running process holds the state directory. */
  'STATE_DIR_LOCKED',
  /** A conformance scenario file is malformed. */
  'SCENARIO_INVALID',
  /** A feature is not supported yet. */
  'UNSUPPORTED',
  /** An optional dependency a feature needs is not installed (the error names the install command). */
  'DEPENDENCY_MISSING',
  /**
   * A queried store is not ready on this instance: a task holding it is still restoring (Kafka Streams'
   * `InvalidStateStoreException`). Retriable: the same query succeeds once the task runs.
   */
  'STORE_NOT_READY',
] as const

/** One of {@link ERROR_CODES}: what a {@link PunctualError} is about, for code to branch on. */
export type ErrorCode = (typeof ERROR_CODES)[number]

/** The optional parts of a {@link PunctualError}. */
export interface PunctualErrorOptions {
  /** The error that led to this one (an exception user code threw, a client's error); becomes `Error.cause`. */
  cause?: unknown
  /** Whether trying the same operation again may succeed. */
  retriable?: boolean
  /** Stops the application whatever the error handler says (not bad input: a configured stop). */
  fatal?: boolean
}

/**
 * The error punctual throws and fails with: a message naming what failed and the value at fault, a
 * {@link ErrorCode} to branch on, and the original error as `cause` where there is one.
 */
export class PunctualError extends Error {
  /** What the error is about; stable across versions, unlike the message. */
  readonly code: ErrorCode
  /** Whether trying the same operation again may succeed (a store still restoring). @default false */
  readonly retriable: boolean
  /** Whether it stops the application whatever the error handler answers (a full suppression buffer set to shut down). @default false */
  readonly fatal: boolean

  constructor(code: ErrorCode, message: string, options: PunctualErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'PunctualError'
    this.code = code
    this.retriable = options.retriable ?? false
    this.fatal = options.fatal ?? false
  }
}

export function invalidConfig(where: string, message: string): PunctualError {
  return new PunctualError('INVALID_CONFIG', `${where}: ${message}`)
}

/** A runtime config's integer setting: `value`, else `def`; an INVALID_CONFIG error naming it when below `min`. */
export function configInt(where: string, name: string, value: number | undefined, def: number, min: number): number {
  const v = value ?? def
  if (!Number.isSafeInteger(v) || v < min) throw invalidConfig(where, `${name} must be an integer >= ${min}, got ${JSON.stringify(value)}`)
  return v
}

/** A runtime config's optional `stateDir`: a non-empty path when given. */
export function checkStateDir(where: string, stateDir: unknown): void {
  if (stateDir !== undefined && (typeof stateDir !== 'string' || stateDir.length === 0)) throw invalidConfig(where, `stateDir must be a non-empty path, got ${JSON.stringify(stateDir)}`)
}

/** A runtime config's optional `deadLetterTopic`: a non-empty topic name when given. */
export function checkDeadLetterTopic(where: string, topic: unknown): string | undefined {
  if (topic !== undefined && (typeof topic !== 'string' || topic.length === 0)) throw invalidConfig(where, `deadLetterTopic must be a non-empty topic name, got ${JSON.stringify(topic)}`)
  return topic
}

/** A runtime config's optional `logger`: a pino-compatible one, guarded (`guardedLogger`); the default writes readable lines. */
export function checkLogger(where: string, logger: unknown): Logger {
  if (logger === undefined) return consoleLogger
  const bad = notALogger(logger)
  if (bad !== undefined) throw invalidConfig(where, `logger must be a pino-compatible logger, with the methods debug, info, warn and error: ${bad}`)
  return guardedLogger(logger as Logger)
}
