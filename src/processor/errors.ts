import type { LogFields, Logger } from '../util/logger.js'
import { consoleLogger } from '../util/logger.js'

/** Why a record did not make it through. Also the `reason` label of the dropped-records metric. */
export type DropReason = 'invalid-timestamp' | 'deserialization' | 'processing' | 'punctuation' | 'timer' | 'late'

/** What an {@link ErrorHandler} is told about one failure: what went wrong, where, and what was thrown. */
export interface ErrorContext {
  /** The kind of failure; a record the handler lets pass counts under it in the dropped-records metric. */
  readonly reason: DropReason
  /** The task it happened in, `<subtopology>_<partition>`. */
  readonly taskId: string
  /** Source position of the record; absent for punctuation and timer errors. */
  readonly topic?: string | undefined
  /** The record's partition; absent for punctuation and timer errors. */
  readonly partition?: number | undefined
  /** The record's offset; absent for punctuation and timer errors. */
  readonly offset?: number | undefined
  /** The processor node that threw (processing, punctuation and timer errors), where known. */
  readonly processorName?: string | undefined
  /** What was thrown, as it was thrown (an Error keeps its stack). */
  readonly error: unknown
  /** One readable line: what happened, where. */
  readonly message: string
}

/**
 * An {@link ErrorHandler}'s answer (Kafka Streams' `CONTINUE` and `FAIL`): `continue` skips the record
 * (or the punctuation's or timer's call) and counts it as dropped; `fail` stops the application.
 */
export type ErrorHandlerResponse = 'continue' | 'fail'

/**
 * Decides whether processing goes on after bad input or a failing processor. Called with the context
 * of each failure; `'fail'` stops the application with a `PunctualError` whose cause is the error.
 */
export type ErrorHandler = (context: ErrorContext) => ErrorHandlerResponse

/** Exceptions thrown by user code (process, punctuation, timer and expiry callbacks), as opposed to bad input. */
const USER_CODE: ReadonlySet<DropReason> = new Set(['processing', 'punctuation', 'timer'])

/** The context as structured log fields, the error under `err` (pino's convention). */
function fields(ctx: ErrorContext): LogFields {
  return { reason: ctx.reason, taskId: ctx.taskId, processor: ctx.processorName, topic: ctx.topic, partition: ctx.partition, offset: ctx.offset, err: ctx.error }
}

/**
 * Ready-made error handlers (Kafka Streams' `LogAndContinueExceptionHandler` and `LogAndFailExceptionHandler`, one handler
 * here for bad input and failing user code alike). Each logs to the logger given, by default
 * {@link consoleLogger}.
 */
export const ErrorHandlers = {
  /**
   * The default. An exception thrown by user code fails the application (as Kafka Streams does since
   * KIP-1033); the runtime reports the failure once, with the context and the original error as cause.
   * A bad input record (invalid timestamp, key or value that does not deserialize) is logged with its
   * context and skipped: punctual's choice, where Kafka Streams' default deserialization handler fails.
   */
  failOnUserCodeErrors(logger: Logger = consoleLogger): ErrorHandler {
    return (ctx) => {
      if (USER_CODE.has(ctx.reason)) return 'fail'
      logger.warn(fields(ctx), `${ctx.message}; skipped and continuing`)
      return 'continue'
    }
  },
  /** Logs a warning with the context and the error's stack, and goes on with the next record. */
  logAndContinue(logger: Logger = consoleLogger): ErrorHandler {
    return (ctx) => {
      logger.warn(fields(ctx), `${ctx.message}; skipped and continuing`)
      return 'continue'
    }
  },
  /** Logs an error with the context and stops the application, on bad input too. */
  logAndFail(logger: Logger = consoleLogger): ErrorHandler {
    return (ctx) => {
      logger.error(fields(ctx), `${ctx.message}; stopping`)
      return 'fail'
    }
  },
} as const
