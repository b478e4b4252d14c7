import { PunctualError } from '../../errors.js'
import type {
  Cancellable,
  ProcessorContext,
  PunctuationType,
  Punctuator,
  RecordMetadata,
  ScheduleSpec,
  StateStore,
  StreamRecord,
  TaskId,
} from '../api.js'
import type { ProcessorNode } from './nodes.js'

/** What a processor context needs from its task: passed in, so contexts never reach into task internals. */
export interface TaskServices {
  readonly taskId: TaskId
  streamTimeOrUndefined(): number | undefined
  wallClockNow(): number
  recordMetadata(): RecordMetadata | undefined
  schedule(processorName: string, spec: ScheduleSpec, callback: Punctuator): Cancellable
  store(processorName: string, allowed: ReadonlySet<string>, name: string): StateStore
  droppedRecord(reason: 'late'): void
  taskStateDir(): string
}

/** The context handed to one processor node of one task. */
export class ProcessorContextImpl implements ProcessorContext<unknown, unknown> {
  constructor(
    private readonly task: TaskServices,
    private readonly node: ProcessorNode,
    private readonly stores: ReadonlySet<string>,
  ) {}

  get taskId(): TaskId {
    return this.task.taskId
  }

  get processorName(): string {
    return this.node.name
  }

  forward(record: StreamRecord<unknown, unknown>, childName?: string): void {
    // Checked here, as producers and sinks check theirs, so that the processor that made the timestamp
    // is named: downstream, NaN or 1e20 would be dropped as late by a window and -5 fail at a sink.
    const ts = record.timestamp
    if (!Number.isSafeInteger(ts) || ts < 0) {
      throw new PunctualError('INVALID_TIMESTAMP', `processor "${this.node.name}" forwarded a record with timestamp ${String(ts)}: a timestamp is an integer epoch millisecond >= 0`)
    }
    if (childName === undefined) {
      this.node.forwardToChildren(record)
      return
    }
    const child = this.node.childByName.get(childName)
    if (child === undefined) {
      throw new PunctualError('INVALID_TOPOLOGY', `processor "${this.node.name}" has no child named "${childName}" (children: ${[...this.node.childByName.keys()].join(', ') || 'none'})`)
    }
    child.process(record)
  }

  schedule(spec: ScheduleSpec, callback: Punctuator): Cancellable
  schedule(intervalMs: number, type: PunctuationType, callback: Punctuator): Cancellable
  schedule(specOrInterval: ScheduleSpec | number, type?: PunctuationType | Punctuator, callback?: Punctuator): Cancellable {
    if (typeof specOrInterval === 'number') {
      return this.task.schedule(this.node.name, { intervalMs: specOrInterval, type: type as PunctuationType }, callback as Punctuator)
    }
    const cb = type as Punctuator
    if (typeof cb !== 'function') {
      throw new PunctualError('INVALID_CONFIG', `processor "${this.node.name}" schedule: the callback must be a function`)
    }
    return this.task.schedule(this.node.name, specOrInterval, cb)
  }

  currentStreamTimeMs(): number | undefined {
    return this.task.streamTimeOrUndefined()
  }

  currentSystemTimeMs(): number {
    return this.task.wallClockNow()
  }

  recordMetadata(): RecordMetadata | undefined {
    return this.task.recordMetadata()
  }

  getStateStore<S extends StateStore>(name: string): S {
    return this.task.store(this.node.name, this.stores, name) as S
  }

  droppedRecord(reason: 'late'): void {
    this.task.droppedRecord(reason)
  }

  stateDir(): string {
    return this.task.taskStateDir()
  }
}
