import { PunctualError } from '../../errors.js'
import type { StoreKey, StreamRecord } from '../api.js'
import { ProcessorContextImpl } from './context.js'
import type { TaskServices } from './context.js'
import { markFailedNode } from './node-failure.js'
import { ProcessorNode } from './nodes.js'
import type {
  ExpiredEntry,
  KeyedProcessor,
  KeyedProcessorContext,
  ListState,
  ListStateDescriptor,
  MapState,
  MapStateDescriptor,
  StateDescriptor,
  StateKind,
  TimeDomain,
  TimerService,
  ValueState,
  ValueStateDescriptor,
} from '../../keyed/api.js'
import type { KeyedNodeHandle } from '../../keyed/keyed-task-state.js'
import type { StateTable } from '../../keyed/keyed-state.js'
import type { TimerService as TaskTimerService } from '../../keyed/timer-service.js'

/** What a keyed node needs from its task, beyond what every processor gets. */
export interface KeyedTaskServices extends TaskServices {
  readonly timerService: TaskTimerService
  /** Registers (or finds) a state of this node; validates the descriptor. */
  stateTable(node: KeyedProcessorNode, descriptor: StateDescriptor<StateKind, unknown>): StateTable
  ttlNow(domain: TimeDomain): number
}

const isStoreKey = (k: unknown): k is StoreKey => typeof k === 'string' || typeof k === 'number' || typeof k === 'bigint' || typeof k === 'boolean'

/** A keyed processor in a task: it sets the current key around `process`, `onTimer` and `onExpire`. */
export class KeyedProcessorNode extends ProcessorNode implements KeyedNodeHandle {
  private key: StoreKey | undefined
  readonly context: KeyedContextImpl

  constructor(
    name: string,
    readonly processor: KeyedProcessor<StoreKey, unknown, unknown, unknown>,
    /** Index of this node among the task's keyed nodes: the owner of its user timers. */
    readonly owner: number,
    task: KeyedTaskServices,
    stores: ReadonlySet<string>,
  ) {
    super(name)
    this.context = new KeyedContextImpl(task, this, stores)
  }

  currentKey(): StoreKey {
    const k = this.key
    if (k === undefined) {
      throw new PunctualError('ILLEGAL_STATE', `keyed processor "${this.name}": no current key here; timers and keyed state can only be used while processing a record, a timer or an expiry`)
    }
    return k
  }

  process(record: StreamRecord<unknown, unknown>): void {
    this.received++
    const key = record.key
    if (!isStoreKey(key)) {
      throw markFailedNode(new PunctualError('PROCESSING', `keyed processor "${this.name}" needs a string, number, bigint or boolean key, got ${key === null ? 'null' : typeof key}`), this.name)
    }
    const previous = this.key
    this.key = key
    try {
      this.processor.process(record as StreamRecord<StoreKey, unknown>)
    } catch (err) {
      throw markFailedNode(err, this.name)
    } finally {
      this.key = previous
    }
  }

  fireTimer(key: StoreKey, timestamp: number, domain: TimeDomain): void {
    const onTimer = this.processor.onTimer
    if (onTimer === undefined) return
    const previous = this.key
    this.key = key
    try {
      onTimer.call(this.processor, { key, timestamp, domain })
    } catch (err) {
      throw markFailedNode(err, this.name)
    } finally {
      this.key = previous
    }
  }

  expired(entry: ExpiredEntry<StoreKey>): void {
    const onExpire = this.processor.onExpire
    if (onExpire === undefined) return
    const previous = this.key
    this.key = entry.key
    try {
      onExpire.call(this.processor, entry)
    } catch (err) {
      throw markFailedNode(err, this.name)
    } finally {
      this.key = previous
    }
  }

  override init(): void {
    this.processor.init?.(this.context as KeyedProcessorContext<StoreKey, unknown, unknown>)
  }

  override close(): void {
    this.processor.close?.()
  }
}

class KeyedContextImpl extends ProcessorContextImpl implements KeyedProcessorContext<StoreKey, unknown, unknown>, TimerService {
  constructor(
    private readonly keyedTask: KeyedTaskServices,
    private readonly keyedNode: KeyedProcessorNode,
    stores: ReadonlySet<string>,
  ) {
    super(keyedTask, keyedNode, stores)
  }

  currentKey(): StoreKey {
    return this.keyedNode.currentKey()
  }

  get timers(): TimerService {
    return this
  }

  registerEventTimeTimer(timestamp: number): void {
    this.keyedTask.timerService.registerUser('event', this.keyedNode.owner, this.currentKey(), this.checkTime(timestamp, 'registerEventTimeTimer'))
  }

  registerProcessingTimeTimer(timestamp: number): void {
    this.keyedTask.timerService.registerUser('processing', this.keyedNode.owner, this.currentKey(), this.checkTime(timestamp, 'registerProcessingTimeTimer'))
  }

  deleteEventTimeTimer(timestamp: number): void {
    this.keyedTask.timerService.deleteUser('event', this.keyedNode.owner, this.currentKey(), this.checkTime(timestamp, 'deleteEventTimeTimer'))
  }

  deleteProcessingTimeTimer(timestamp: number): void {
    this.keyedTask.timerService.deleteUser('processing', this.keyedNode.owner, this.currentKey(), this.checkTime(timestamp, 'deleteProcessingTimeTimer'))
  }

  pending(domain: TimeDomain): number[] {
    return this.keyedTask.timerService.userTimers(domain, this.keyedNode.owner, this.currentKey())
  }

  getState<T>(descriptor: ValueStateDescriptor<T>): ValueState<T> {
    return this.table(descriptor, 'value') as unknown as ValueState<T>
  }

  getMapState<UK extends StoreKey, UV>(descriptor: MapStateDescriptor<UK, UV>): MapState<UK, UV> {
    return this.table(descriptor, 'map') as unknown as MapState<UK, UV>
  }

  getListState<T>(descriptor: ListStateDescriptor<T>): ListState<T> {
    return this.table(descriptor, 'list') as unknown as ListState<T>
  }

  private table(descriptor: StateDescriptor<StateKind, unknown>, kind: StateKind): StateTable {
    if (descriptor === null || typeof descriptor !== 'object' || descriptor.kind !== kind) {
      throw new PunctualError('INVALID_CONFIG', `keyed processor "${this.keyedNode.name}": expected a ${kind} state descriptor, got ${JSON.stringify(descriptor)}`)
    }
    return this.keyedTask.stateTable(this.keyedNode, descriptor)
  }

  private checkTime(timestamp: number, call: string): number {
    if (typeof timestamp !== 'number' || !Number.isSafeInteger(timestamp) || timestamp < 0) {
      throw new PunctualError('INVALID_ARGUMENT', `keyed processor "${this.keyedNode.name}": ${call} needs an integer epoch millisecond >= 0, got ${String(timestamp)}`)
    }
    return timestamp
  }
}
