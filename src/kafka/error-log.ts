import { ErrorHandlers } from '../processor/errors.js'
import type { ErrorHandler } from '../processor/errors.js'
import { silentLogger } from '../util/logger.js'
import type { Logger } from '../util/logger.js'

/**
 * The Kafka runtime's default error handler: the decisions of `ErrorHandlers.failOnUserCodeErrors`
 * (user code's exceptions fail, bad input is skipped), with each record it skips logged as one warning
 * line: the task, the record's topic, partition and offset, the error's message, and the dead-letter
 * topic it goes to. Bad input can come by the thousand, so the error's stack is logged only at debug.
 */
export function kafkaErrorHandler(logger: Logger, deadLetterTopic: string | undefined): ErrorHandler {
  const decide = ErrorHandlers.failOnUserCodeErrors(silentLogger)
  return (ctx) => {
    const answer = decide(ctx)
    if (answer !== 'continue') return answer
    // An input record (one with a position) that the handler lets pass goes to the dead-letter topic.
    const deadLetter = ctx.topic === undefined ? undefined : deadLetterTopic
    const fields = {
      reason: ctx.reason,
      taskId: ctx.taskId,
      processor: ctx.processorName,
      topic: ctx.topic,
      partition: ctx.partition,
      offset: ctx.offset,
      deadLetterTopic: deadLetter,
    }
    logger.warn(fields, `${ctx.message}; skipped${deadLetter === undefined ? '' : `, written to dead-letter topic ${deadLetter}`} and continuing`)
    logger.debug({ ...fields, err: ctx.error }, `the error of the record skipped at ${ctx.topic ?? '?'}-${ctx.partition ?? '?'} offset ${ctx.offset ?? '?'}`)
    return answer
  }
}
