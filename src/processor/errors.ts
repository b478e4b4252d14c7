import type { Logger } from '../util/logger.js'
import { consoleLogger } from '../util/logger.js'

/** Why a record did not make it through. Also the `reason` label of the dropped-records metric. */
export type DropReason = 'invalid-timestamp' | 'deserialization' | 'processing' | 'punctuation' | 'timer' | 'late'

export interface ErrorContext {
  readonly reason: DropReason
  readonly taskId: string
  /** Source position of the record; absent for punctuation errors. */
  readonly topic?: string
  readonly partition?: number
  readonly offset?: number
  /** The processor that threw (processing and punctuation errors). */
  readonly processorName?: string
  readonly error: unknown
  /** One readable line: what happened, where. */
  readonly message: string
}

export type ErrorHandlerResponse = 'continue' | 'fail'

/** Decides whether processing goes on after bad input or a failing processor. */
export type ErrorHandler = (context: ErrorContext) => ErrorHandlerResponse

export const ErrorHandlers = {
  /** Logs a warning and goes on with the next record (the default). */
  logAndContinue(logger: Logger = consoleLogger): ErrorHandler {
    return (ctx) => {
      logger.warn(`${ctx.message}; skipped and continuing`)
      return 'continue'
    }
  },
  /** Logs an error and stops the application. */
  logAndFail(logger: Logger = consoleLogger): ErrorHandler {
    return (ctx) => {
      logger.error(`${ctx.message}; stopping`)
      return 'fail'
    }
  },
} as const
