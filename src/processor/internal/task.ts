import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { PunctualError } from '../../errors.js'
import type { KeyedProcessorSupplier, StateDescriptor, StateKind, TimeDomain } from '../../keyed/api.js'
import { KeyedProcessorNode } from './keyed-node.js'
import type { KeyedTaskServices } from './keyed-node.js'
import type { StateTable } from '../../keyed/keyed-state.js'
import { KeyedTaskState } from '../../keyed/keyed-task-state.js'
import type { KeyedChanges, KeyedChangesLater, KeyedEntryOut } from '../../keyed/keyed-task-state.js'
import type { TimerService } from '../../keyed/timer-service.js'
import { TaskMetrics } from '../../metrics.js'
import type { PendingTimers, TaskMetricsSnapshot } from '../../metrics.js'
import type { Cancellable, ProcessorSupplier, Punctuator, RecordMetadata, ScheduleSpec, StateStore, StoreKey } from '../api.js'
import type { DropReason } from '../errors.js'
import { InputChooser } from './input-chooser.js'
import { DeadLetters } from './dead-letters.js'
import { TaskErrors } from './task-errors.js'
import { ProcessorContextImpl } from './context.js'
import type { TaskServices } from './context.js'
import { SinkNode, SourceNode, UserProcessorNode } from './nodes.js'
import type { ProcessorNode } from './nodes.js'
import { PartitionQueue } from './partition-queue.js'
import type { InputPartition } from '../record-io.js'
import type { Punctuation } from './punctuation.js'
import { TaskSchedules } from './task-schedules.js'
import { TaskStores } from './task-stores.js'
import type { StoreBuilder } from '../../state/stores.js'
import { TaskIdImpl } from './task-config.js'
import type { TaskCheckpoint, TaskConfig } from './task-config.js'

const NO_TIMERS: PendingTimers = { user: { event: 0, processing: 0 }, ttl: { event: 0, processing: 0 } }

/** Stream time before the first record. Timestamps are >= 0, so -1 keeps the field a plain number. */
const UNKNOWN = -1

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
  private readonly chooser: InputChooser
  private readonly errors: TaskErrors
  private streamTime: number
  /** Where the record being processed came from; undefined in punctuations. */
  private current: PartitionQueue | undefined
  private state: 'created' | 'running' | 'closed' = 'created'
  /** Timers and keyed state; created when the sub-topology has a keyed processor. */
  private keyed: KeyedTaskState | undefined

  constructor(private readonly config: TaskConfig) {
    const { subtopology, partition, inputs, collector, checkpoint } = config
    this.taskId = new TaskIdImpl(subtopology.id, partition)
    this.errors = new TaskErrors(this.taskId.toString(), this.metrics, config.errorHandler, config.deadLetterTopic === undefined ? undefined : new DeadLetters(config.deadLetterTopic, config.collector, config.clock))
    this.streamTime = checkpoint?.streamTime ?? UNKNOWN
    this.schedules = new TaskSchedules(
      {
        taskId: this.taskId.toString(),
        streamTimeOrUndefined: () => this.streamTimeOrUndefined(),
        wallClockNow: () => this.config.clock.now(),
        run: this.runPunctuation,
        wallClockChanged: () => this.config.onWallClockChange?.(),
        wallClockLateness: (ms) => this.metrics.punctuationLateness.observe(ms),
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
          const input = inputs(topic, partition)
          if (input === undefined) throw new PunctualError('INVALID_TOPOLOGY', `task ${this.taskId}: topic "${topic}" has no partition ${partition}`)
          const start = checkpoint?.positions[`${topic}:${partition}`] ?? input.startOffset()
          // An internal topic's source (null) keeps the timestamps its records were written with.
          const extractor = def.timestampExtractor === null ? undefined : (def.timestampExtractor ?? config.defaultTimestampExtractor)
          this.queues.push(new PartitionQueue(input, source, this.reportBadInput, start, extractor, config.clock))
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
        node = new SinkNode(def.name, def.topic, def.keySerde, def.valueSerde, def.partitioner, collector, this.metrics)
      }
      if (def.kind !== 'source') for (const p of def.parents) (byName.get(p) as ProcessorNode).addChild(node)
      byName.set(def.name, node)
      this.nodes.push(node)
    }
    this.chooser = new InputChooser(this.queues, config.maxTaskIdleMs, config.clock, () => this.config.onWallClockChange?.())
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
    const m = this.metrics
    // One read of each clock per slice: the slice's records share its wall-clock time for end-to-end
    // latency, and its duration is spread over them for process latency.
    const started = performance.now()
    const now = this.config.clock.now()
    let n = 0
    while (n < max) {
      const q = this.chooser.choose()
      if (q === undefined) break
      const record = q.take()
      const ts = record.timestamp
      if (ts > this.streamTime) this.streamTime = ts
      else {
        const lateness = this.streamTime - ts
        m.recordLatenessSumMs += lateness
        if (lateness > m.recordLatenessMaxMs) m.recordLatenessMaxMs = lateness
      }
      const e2e = now - ts
      m.e2eLatencySumMs += e2e
      if (e2e < m.e2eLatencyMinMs) m.e2eLatencyMinMs = e2e
      if (e2e > m.e2eLatencyMaxMs) m.e2eLatencyMaxMs = e2e
      this.current = q
      try {
        q.source.process(record)
      } catch (err) {
        // A configured stop (a full suppression buffer) is not bad input: no handler can skip it.
        if (err instanceof PunctualError && err.fatal) throw err
        this.errors.report('processing', err, { queue: q, offset: q.lastOffset })
      }
      this.current = undefined
      m.processedRecords++
      n++
      // Event-time timers first, then stream-time punctuations.
      const timers = this.keyed?.timerService
      if (timers !== undefined && timers.nextDue('event') <= this.streamTime) timers.advance('event', this.streamTime)
      if (this.schedules.nextStreamDue() <= this.streamTime) this.schedules.punctuateStream(this.streamTime)
    }
    if (n > 0) m.processTimeMs += performance.now() - started
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
    return Math.min(this.schedules.nextWallDue(), this.keyed?.timerService.nextProcessingDueToArm() ?? Infinity, this.chooser.nextIdleDeadline())
  }

  /** The task's metrics as they stand: its counters, clocks, pending timers and suppression buffers. */
  metricsSnapshot(): TaskMetricsSnapshot {
    const m = this.metrics
    const streamTime = this.streamTimeOrUndefined()
    const nextStream = this.schedules.nextStreamDue()
    const nextWall = this.schedules.nextWallDue()
    const timers = this.keyed?.timerService
    const due = (domain: TimeDomain): number | undefined => {
      const at = timers?.nextDue(domain) ?? Infinity
      return at === Infinity ? undefined : at
    }
    const perRecord = (sum: number): number => (m.processedRecords === 0 ? 0 : sum / m.processedRecords)
    return {
      taskId: this.taskId.toString(),
      processedRecords: m.processedRecords,
      emittedRecords: m.emittedRecords,
      punctuations: m.punctuations,
      droppedRecords: { ...m.droppedRecords },
      processLatencyAvgMs: perRecord(m.processTimeMs),
      punctuateLatency: { avgMs: m.punctuations === 0 ? 0 : m.punctuateTimeMs / m.punctuations, maxMs: m.punctuateMaxMs },
      e2eLatency: m.processedRecords === 0 ? undefined : { avgMs: perRecord(m.e2eLatencySumMs), minMs: m.e2eLatencyMinMs, maxMs: m.e2eLatencyMaxMs },
      ttlExpired: this.keyed?.expiredEntries ?? 0,
      inputs: this.queues.map((q) => q.metrics()),
      processors: this.nodes.map((n) => ({ name: n.name, records: n.received })),
      streamTime,
      streamTimeLagMs: streamTime === undefined ? undefined : this.config.clock.now() - streamTime,
      recordLateness: { avgMs: perRecord(m.recordLatenessSumMs), maxMs: m.recordLatenessMaxMs },
      punctuationLateness: m.punctuationLateness.snapshot(),
      pendingTimers: timers?.pending() ?? NO_TIMERS,
      nextTimer: { event: due('event'), processing: due('processing') },
      nextPunctuation: { streamTime: nextStream === Infinity ? undefined : nextStream, wallClock: nextWall === Infinity ? undefined : nextWall },
      suppressionBuffers: this.stores.suppressionBuffers(),
    }
  }

  /** Whether a record could be processed now. */
  hasProcessable(): boolean {
    return this.chooser.choose() !== undefined
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
    const store = this.stores.get(name) ?? this.config.globalStores?.(name)
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

  /** The sub-topology's store builders: names, and the serdes of their changelogs. */
  storeBuilders(): readonly StoreBuilder[] {
    return this.config.subtopology.stores
  }

  /** Stores by name, for the test kit. */
  getStore(name: string): StateStore | undefined {
    return this.stores.get(name)
  }

  /** A full checkpoint, keyed state, timers and stores included (the test kit's restart). */
  checkpoint(): TaskCheckpoint {
    return { ...this.lightCheckpoint(), ...(this.keyed === undefined ? {} : { keyed: this.keyed.snapshot() }), stores: this.stores.snapshot() }
  }

  /** The changes last taken (`storeChanges`, `keyedChanges`) are durable now. */
  changesCommitted(): void {
    if (this.state === 'closed') return
    this.stores.committed()
    this.keyed?.committed()
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

  /**
   * The same for a commit that gets each changed state entry later, through `out` (see
   * `KeyedTaskState.takeChangesLater`); undefined without keyed processors.
   */
  keyedChangesLater(out: KeyedEntryOut): KeyedChangesLater | undefined {
    return this.keyed?.takeChangesLater(out)
  }

  get timerService(): TimerService {
    return this.keyedState().timerService
  }

  stateTable(node: KeyedProcessorNode, descriptor: StateDescriptor<StateKind, unknown>): StateTable {
    return this.keyedState().stateTable(node, descriptor, (domain) => this.ttlNow(domain))
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
  committedPositions(): Array<{ input: InputPartition; offset: number }> {
    return this.queues.map((queue) => ({ input: queue.input, offset: queue.committableOffset() }))
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
        (reason, error, at, processorName) => this.errors.report(reason, error, processorName === undefined ? { at } : { at, processorName }),
        this.config.checkpoint?.keyed,
        this.config.keyedStateDisk,
      )
      if (this.config.trackChanges === true) this.keyed.trackChanges()
    }
    return this.keyed
  }

  private readonly runPunctuation = (p: Punctuation, now: number): void => {
    const m = this.metrics
    m.punctuations++
    const started = performance.now()
    try {
      p.callback(now)
    } catch (err) {
      if (err instanceof PunctualError && err.fatal) throw err
      this.errors.report('punctuation', err, { punctuation: p })
    } finally {
      const took = performance.now() - started
      m.punctuateTimeMs += took
      if (took > m.punctuateMaxMs) m.punctuateMaxMs = took
    }
  }

  private readonly reportBadInput = (reason: DropReason, q: PartitionQueue, offset: number, error: unknown): void => {
    this.errors.report(reason, error, { queue: q, offset })
  }
}
