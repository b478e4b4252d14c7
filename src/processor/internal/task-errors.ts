import { PunctualError } from '../../errors.js'
import type { ErrorCode } from '../../errors.js'
import type { TaskMetrics } from '../../metrics.js'
import type { DropReason, ErrorHandler } from '../errors.js'
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

/**
 * A task's bad input and failures: counts the drop, tells the application's error handler where it
 * happened (input position, punctuation, or a named place) and throws if the handler says `fail`.
 */
export class TaskErrors {
  constructor(
    private readonly taskId: string,
    private readonly metrics: TaskMetrics,
    private readonly handler: ErrorHandler,
  ) {}

  report(reason: DropReason, error: unknown, q: PartitionQueue | undefined, offset: number, p?: Punctuation, at?: string): void {
    this.metrics.droppedRecords[reason]++
    const where = at ?? (q === undefined ? `punctuation "${p?.name}" of processor "${p?.processorName}"` : `topic ${q.topic} partition ${q.partition} offset ${offset}`)
    const detail = error instanceof Error ? error.message : String(error)
    const message = `task ${this.taskId}: ${reason} error at ${where}: ${detail}`
    const response = this.handler({
      reason,
      taskId: this.taskId,
      ...(q === undefined ? {} : { topic: q.topic, partition: q.partition, offset }),
      ...(p === undefined ? {} : { processorName: p.processorName }),
      error,
      message,
    })
    if (response === 'fail') throw new PunctualError(CODE_OF[reason], message, { cause: error })
  }
}
