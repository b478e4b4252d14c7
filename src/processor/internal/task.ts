import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { PunctualError } from '../../errors.js'
import type { KeyedProcessorSupplier, StateDescriptor, StateKind, TimeDomain } from '../../keyed/api.js'
import { KeyedProcessorNode } from '../../keyed/keyed-node.js'
import type { KeyedTaskServices } from '../../keyed/keyed-node.js'
import type { StateTable } from '../../keyed/keyed-state.js'
import { KeyedTaskState } from '../../keyed/keyed-task-state.js'
import type { KeyedChanges, KeyedSnapshot } from '../../keyed/keyed-task-state.js'
import type { TimerService } from '../../keyed/timer-service.js'
import type { ErrorCode } from '../../errors.js'
import type { TopicRegistry } from '../../log/topics.js'
import { TaskMetrics } from '../../metrics.js'
import type { Clock } from '../../time/clock.js'
import type { Cancellable, ProcessorSupplier, Punctuator, RecordMetadata, ScheduleSpec, StateStore, StoreKey, TaskId } from '../api.js'
import type { DropReason, ErrorHandler } from '../errors.js'
import type { Subtopology } from '../topology.js'
import { ProcessorContextImpl } from './context.js'
import type { TaskServices } from './context.js'
import { SinkNode, SourceNode, UserProcessorNode } from './nodes.js'
import type { ProcessorNode } from './nodes.js'
import { PartitionQueue } from './partition-queue.js'
import type { Punctuation } from './punctuation.js'
import { TaskSchedules } from './task-schedules.js'
import { TaskStores } from './task-stores.js'
import type { StoreDisk } from '../../state/persistent-store.js'

/** Stream time before the first record. Timestamps are >= 0, so -1 keeps the field a plain number. */
const UNKNOWN = -1

export class TaskIdImpl implements TaskId {
  constructor(
    readonly subtopology: number,
    readonly partition: number,
  ) {}

  toString(): string {
    return `${this.subtopology}_${this.partition}`
  }
}

/** What a task commits; restoring it resumes the task where it stopped (durable with issue 5). */
export interface TaskCheckpoint {
  readonly streamTime: number | undefined
  /** Last fire time per schedule name, for the `fireOnce` missed-trigger policy. */
  readonly lastFires: Readonly<Record<string, number>>
  /** Next offset to read per input, keyed `topic:partition`. */
  readonly positions: Readonly<Record<string, number>>
  /** Timers and keyed state, when the task has keyed processors. */
  readonly keyed?: KeyedSnapshot
  /** Entries of the task's durable-capable stores, by store name. */
  readonly stores?: Readonly<Record<string, ReadonlyArray<[StoreKey, unknown]>>>
}

export interface TaskConfig {
  readonly subtopology: Subtopology
  readonly partition: number
  readonly topics: TopicRegistry
  readonly clock: Clock
  readonly maxTaskIdleMs: number
  readonly errorHandler: ErrorHandler
  readonly checkpoint?: TaskCheckpoint | undefined
  /** Durable runtimes: where persistent stores find their committed entries. */
  readonly storeDisk?: ((store: string) => StoreDisk | undefined) | undefined
  /** Durable mode: record keyed state and timer changes for incremental commits. */
  readonly trackChanges?: boolean
  /** The application's state directory; each task uses `<stateDir>/<task id>`. */
  readonly stateDir: string
  /** Called when the earliest wall-clock due time may have moved (to re-arm the runtime's timer). */
  readonly onWallClockChange?: (() => void) | undefined
}

/**
 * One task: one partition of each input topic of a sub-topology, its processors, stores, stream time
 * and punctuation queues. Single-threaded and synchronous: the runtime or the test driver decides when
 * it runs.
 */
export class StreamTask implements TaskServices, KeyedTaskServices {
  readonly taskId: TaskIdImpl
  readonly metrics = new TaskMetrics()
  private readonly queues: PartitionQueue[] = []
  private readonly nodes: ProcessorNode[] = []
  private readonly stores: TaskStores
  private readonly schedules: TaskSchedules
  private streamTime: number
  /** Where the record being processed came from; undefined in punctuations. */
  private current: PartitionQueue | undefined
  private state: 'created' | 'running' | 'closed' = 'created'
  /** Timers and keyed state; created when the sub-topology has a keyed processor. */
  private keyed: KeyedTaskState | undefined

  constructor(private readonly config: TaskConfig) {
    const { subtopology, partition, topics, checkpoint } = config
    this.taskId = new TaskIdImpl(subtopology.id, partition)
    this.streamTime = checkpoint?.streamTime ?? UNKNOWN
    this.schedules = new TaskSchedules(
      {
        taskId: this.taskId.toString(),
        streamTimeOrUndefined: () => this.streamTimeOrUndefined(),
        wallClockNow: () => this.config.clock.now(),
        run: this.runPunctuation,
        wallClockChanged: () => this.config.onWallClockChange?.(),
      },
      checkpoint?.lastFires,
    )
    this.stores = new TaskStores(subtopology.stores, checkpoint?.stores, config.trackChanges === true, config.storeDisk)

    const byName = new Map<string, ProcessorNode>()
    for (const def of subtopology.nodes) {
      let node: ProcessorNode
      if (def.kind === 'source') {
        const source = new SourceNode(def.name, def.keySerde, def.valueSerde)
        node = source
        for (const topic of def.topics) {
          const log = topics.partitions(topic)[partition]
          if (log === undefined) throw new PunctualError('INVALID_TOPOLOGY', `task ${this.taskId}: topic "${topic}" has no partition ${partition}`)
          const start = checkpoint?.positions[`${topic}:${partition}`] ?? log.startOffset()
          this.queues.push(new PartitionQueue(log, source, this.reportBadInput, start))
        }
      } else if (def.kind === 'processor' && def.keyed) {
        const keyed = this.keyedState()
        const supplier = def.supplier as KeyedProcessorSupplier<StoreKey, unknown, unknown, unknown>
        const kn = new KeyedProcessorNode(def.name, supplier(), keyed.nextOwner(), this, def.stores)
        keyed.addNode(kn)
        node = kn
      } else if (def.kind === 'processor') {
        const user = new UserProcessorNode(def.name, (def.supplier as ProcessorSupplier<unknown, unknown, unknown, unknown>)())
        user.context = new ProcessorContextImpl(this, user, def.stores)
        node = user
      } else {
        node = new SinkNode(def.name, def.topic, def.keySerde, def.valueSerde, def.partitioner, topics)
      }
      if (def.kind !== 'source') for (const p of def.parents) (byName.get(p) as ProcessorNode).addChild(node)
      byName.set(def.name, node)
      this.nodes.push(node)
    }
  }

  /** Initializes processors (which register schedules), then makes the `fireOnce` catch-up calls. */
  init(): void {
    for (const node of this.nodes) node.init()
    // States are registered in init; only then can timers be matched to their owners.
    this.keyed?.restoreTimers(this.config.checkpoint?.keyed?.timers ?? [])
    this.state = 'running'
    this.schedules.runCatchUps()
  }

  /**
   * Processes up to `max` records, choosing each from the partition whose head has the smallest
   * timestamp, and fires stream-time punctuations after each. Returns how many records it processed.
   */
  process(max: number): number {
    let n = 0
    while (n < max) {
      const q = this.choose()
      if (q === undefined) break
      const record = q.take()
      if (record.timestamp > this.streamTime) this.streamTime = record.timestamp
      this.current = q
      try {
        q.source.process(record)
      } catch (err) {
        // A configured stop (a full suppression buffer) is not bad input: no handler can skip it.
        if (err instanceof PunctualError && err.fatal) throw err
        this.handleError('processing', err, q, q.lastOffset)
      }
      this.current = undefined
      this.metrics.processedRecords++
      n++
      // Event-time timers first, then stream-time punctuations.
      const timers = this.keyed?.timerService
      if (timers !== undefined && timers.nextDue('event') <= this.streamTime) timers.advance('event', this.streamTime)
      if (this.schedules.nextStreamDue() <= this.streamTime) this.schedules.punctuateStream(this.streamTime)
    }
    return n
  }

  /** Fires the processing-time timers, then the wall-clock punctuations, due at `now`. */
  punctuateWallClock(now: number): number {
    const timers = this.keyed?.timerService
    const fired = timers !== undefined && timers.nextDue('processing') <= now ? timers.advance('processing', now) : 0
    return fired + this.schedules.punctuateWall(now)
  }

  /** Earliest wall-clock time this task needs to be woken for (timer, punctuation, end of an idle wait). */
  nextWallClockDue(): number {
    let due = Math.min(this.schedules.nextWallDue(), this.keyed?.timerService.nextDue('processing') ?? Infinity)
    for (const q of this.queues) if (q.idleDeadline >= 0 && q.idleDeadline < due) due = q.idleDeadline
    return due
  }

  /** Whether a record could be processed now. */
  hasProcessable(): boolean {
    return this.choose() !== undefined
  }

  streamTimeOrUndefined(): number | undefined {
    return this.streamTime === UNKNOWN ? undefined : this.streamTime
  }

  wallClockNow(): number {
    return this.config.clock.now()
  }

  recordMetadata(): RecordMetadata | undefined {
    const q = this.current
    return q === undefined ? undefined : { topic: q.topic, partition: q.partition, offset: q.lastOffset }
  }

  schedule(processorName: string, spec: ScheduleSpec, callback: Punctuator): Cancellable {
    if (this.state === 'closed') throw new PunctualError('ILLEGAL_STATE', `processor "${processorName}": cannot schedule after the task closed`)
    return this.schedules.schedule(processorName, spec, callback)
  }

  store(processorName: string, allowed: ReadonlySet<string>, name: string): StateStore {
    const store = this.stores.get(name)
    if (store === undefined || !allowed.has(name)) {
      throw new PunctualError('INVALID_TOPOLOGY', `processor "${processorName}" is not connected to a state store named "${name}"; connect it with Topology.addStateStore(builder, "${processorName}")`)
    }
    return store
  }

  droppedRecord(reason: 'late'): void {
    this.metrics.droppedRecords[reason]++
  }

  taskStateDir(): string {
    const dir = join(this.config.stateDir, this.taskId.toString())
    mkdirSync(dir, { recursive: true })
    return dir
  }

  /** Stores by name, for the test kit. */
  getStore(name: string): StateStore | undefined {
    return this.stores.get(name)
  }

  /** A full checkpoint, keyed state, timers and stores included (the test kit's restart). */
  checkpoint(): TaskCheckpoint {
    return { ...this.lightCheckpoint(), ...(this.keyed === undefined ? {} : { keyed: this.keyed.snapshot() }), stores: this.stores.snapshot() }
  }

  /** Changed store entries since the last call (durable mode), by store name. */
  storeChanges(): Map<string, Array<[StoreKey, unknown]>> {
    return this.stores.changes()
  }

  /** The cheap part of a checkpoint (no keyed snapshot): what every commit records. */
  lightCheckpoint(): TaskCheckpoint {
    const positions: Record<string, number> = {}
    for (const q of this.queues) positions[`${q.topic}:${q.partition}`] = q.committableOffset()
    return { streamTime: this.streamTimeOrUndefined(), lastFires: this.schedules.lastFireTimes(), positions }
  }

  /** Keyed state and timer changes since the last call (durable mode), or undefined without keyed processors. */
  keyedChanges(): KeyedChanges | undefined {
    return this.keyed?.takeChanges()
  }

  get timerService(): TimerService {
    return this.keyedState().timerService
  }

  stateTable(node: KeyedProcessorNode, descriptor: StateDescriptor<StateKind, unknown>): StateTable {
    return this.keyedState().stateTable(node, descriptor, this)
  }

  ttlNow(domain: TimeDomain): number {
    return domain === 'processing' ? this.config.clock.now() : Math.max(this.streamTime, 0)
  }

  /** Pending user timers of a keyed processor, for the test kit: per key, or counts per domain. */
  pendingTimers(processorName: string, key?: StoreKey): { event: number[]; processing: number[] } | { event: number; processing: number } | undefined {
    const node = this.keyed?.nodeByName(processorName)
    if (node === undefined) return undefined
    const ts = this.keyed!.timerService
    if (key === undefined) return { event: ts.userTimerCount('event', node.owner), processing: ts.userTimerCount('processing', node.owner) }
    return { event: ts.userTimers('event', node.owner, key), processing: ts.userTimers('processing', node.owner, key) }
  }

  /** Input partitions with the offset every record before which is done with. */
  committedPositions(): Array<{ queue: PartitionQueue; offset: number }> {
    return this.queues.map((queue) => ({ queue, offset: queue.committableOffset() }))
  }

  close(): void {
    if (this.state === 'closed') return
    this.state = 'closed'
    let first: unknown
    for (const node of this.nodes) {
      try {
        node.close()
      } catch (err) {
        first ??= err
      }
    }
    this.stores.close()
    if (first !== undefined) throw new PunctualError('PROCESSING', `task ${this.taskId}: a processor failed to close: ${(first as Error).message}`, { cause: first })
  }

  private keyedState(): KeyedTaskState {
    if (this.keyed === undefined) {
      this.keyed = new KeyedTaskState(
        () => this.config.onWallClockChange?.(),
        (reason, error, where) => this.handleError(reason, error, undefined, -1, undefined, where),
        this.config.checkpoint?.keyed,
      )
      if (this.config.trackChanges === true) this.keyed.trackChanges()
    }
    return this.keyed
  }

  private choose(): PartitionQueue | undefined {
    const queues = this.queues
    if (queues.length === 1) {
      const q = queues[0] as PartitionQueue
      return q.head() === undefined ? undefined : q
    }
    let best: PartitionQueue | undefined
    let bestTs = Infinity
    let anyEmpty = false
    for (let i = 0; i < queues.length; i++) {
      const q = queues[i] as PartitionQueue
      const h = q.head()
      if (h === undefined) {
        anyEmpty = true
        continue
      }
      q.idleDeadline = -1
      // Strictly smaller: ties go to the earlier queue (lower partition, then source order).
      if (h.timestamp < bestTs) {
        best = q
        bestTs = h.timestamp
      }
    }
    if (best === undefined || !anyEmpty || this.config.maxTaskIdleMs <= 0) return best
    // Some partition is empty: wait up to maxTaskIdleMs for it before processing the others.
    const now = this.config.clock.now()
    let ready = true
    for (const q of queues) {
      if (q.head() !== undefined) continue
      if (q.idleDeadline < 0) q.idleDeadline = now + this.config.maxTaskIdleMs
      if (q.idleDeadline > now) ready = false
    }
    if (!ready) this.config.onWallClockChange?.()
    return ready ? best : undefined
  }

  private readonly runPunctuation = (p: Punctuation, now: number): void => {
    this.metrics.punctuations++
    try {
      p.callback(now)
    } catch (err) {
      if (err instanceof PunctualError && err.fatal) throw err
      this.handleError('punctuation', err, undefined, -1, p)
    }
  }

  private readonly reportBadInput = (reason: DropReason, q: PartitionQueue, offset: number, error: unknown): void => {
    this.handleError(reason, error, q, offset)
  }

  private handleError(reason: DropReason, error: unknown, q: PartitionQueue | undefined, offset: number, p?: Punctuation, at?: string): void {
    this.metrics.droppedRecords[reason]++
    const where = at ?? (q === undefined ? `punctuation "${p?.name}" of processor "${p?.processorName}"` : `topic ${q.topic} partition ${q.partition} offset ${offset}`)
    const detail = error instanceof Error ? error.message : String(error)
    const message = `task ${this.taskId}: ${reason} error at ${where}: ${detail}`
    const response = this.config.errorHandler({
      reason,
      taskId: this.taskId.toString(),
      ...(q === undefined ? {} : { topic: q.topic, partition: q.partition, offset }),
      ...(p === undefined ? {} : { processorName: p.processorName }),
      error,
      message,
    })
    if (response === 'fail') throw new PunctualError(CODE_OF[reason], message, { cause: error })
  }
}

const CODE_OF: Record<DropReason, ErrorCode> = {
  'invalid-timestamp': 'INVALID_TIMESTAMP',
  deserialization: 'DESERIALIZATION',
  processing: 'PROCESSING',
  punctuation: 'PROCESSING',
  timer: 'PROCESSING',
  late: 'PROCESSING',
}
