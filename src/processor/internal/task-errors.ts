import { PunctualError } from '../../errors.js'
import type { ErrorCode } from '../../errors.js'
import type { TaskMetrics } from '../../metrics.js'
import type { DropReason, ErrorContext, ErrorHandler } from '../errors.js'
import type { DeadLetters } from './dead-letters.js'
import { failedNodeOf } from './node-failure.js'
import type { PartitionQueue } from './partition-queue.js'
import type { Punctuation } from './punctuation.js'

const CODE_OF: Record<DropReason, ErrorCode> = {
  'invalid-timestamp': 'INVALID_TIMESTAMP',
  deserialization: 'DESERIALIZATION',
  processing: 'PROCESSING',
  punctuation: 'PROCESSING',
  timer: 'PROCESSING',
  late: 'PROCESSING',
}

/** Where a failure happened: the input record, the punctuation, or a described place (a timer). */
export type FailureSite =
  | { readonly queue: PartitionQueue; readonly offset: number }
  | { readonly punctuation: Punctuation }
  | { readonly at: string; readonly processorName?: string }

/**
 * A task's bad input and failures: counts the drop, tells the application's error handler what happened
 * and where (task, processor node, topic, partition and offset, or the punctuation or timer), and throws
 * a `PunctualError` with the original error as its cause if the handler says `fail`. An input record
 * the handler lets pass goes to the dead-letter topic, when there is one.
 */
export class TaskErrors {
  constructor(
    private readonly taskId: string,
    private readonly metrics: TaskMetrics,
    private readonly handler: ErrorHandler,
    /** Where input records the handler lets pass go, when the application has a dead-letter topic. */
    private readonly deadLetters?: DeadLetters,
  ) {}

  report(reason: DropReason, error: unknown, site: FailureSite): void {
    this.metrics.droppedRecords[reason]++
    // The innermost node the error passed through threw it; a punctuation's own callback is its processor's.
    const processorName = failedNodeOf(error) ?? ('punctuation' in site ? site.punctuation.processorName : 'at' in site ? site.processorName : undefined)
    const detail = error instanceof Error ? error.message : String(error)
    const inNode = processorName === undefined ? '' : ` in processor "${processorName}"`
    let message: string
    let context: ErrorContext
    if ('queue' in site) {
      const { queue, offset } = site
      message = `task ${this.taskId}: ${reason} error${inNode} at topic ${queue.topic} partition ${queue.partition} offset ${offset}: ${detail}`
      context = { reason, taskId: this.taskId, topic: queue.topic, partition: queue.partition, offset, processorName, error, message }
    } else {
      const where = 'punctuation' in site ? `punctuation "${site.punctuation.name}"` : site.at
      message = `task ${this.taskId}: ${reason} error${inNode} in ${where}: ${detail}`
      context = { reason, taskId: this.taskId, processorName, error, message }
    }
    if (this.handler(context) === 'fail') throw new PunctualError(CODE_OF[reason], message, { cause: error })
    if (this.deadLetters !== undefined && 'queue' in site) this.deadLetters.send(site.queue.rawRecord, { topic: site.queue.topic, partition: site.queue.partition, offset: site.offset }, error)
  }
}
