import { rmSync } from 'node:fs'
import { PunctualError } from '../errors.js'
import { readKey, readValue } from '../log/log-record.js'
import type { PartitionLog } from '../log/partition-log.js'
import { TopicRegistry } from '../log/topics.js'
import { sumMetrics } from '../metrics.js'
import type { MetricsSnapshot } from '../metrics.js'
import { NO_HEADERS } from '../processor/api.js'
import type { Headers, StoreKey, StreamRecord } from '../processor/api.js'
import type { ErrorHandler } from '../processor/errors.js'
import { StreamTask } from '../processor/internal/task.js'
import type { TaskCheckpoint } from '../processor/internal/task.js'
import type { KeyedChanges } from '../keyed/keyed-task-state.js'
import { Serdes } from '../processor/serdes.js'
import type { Serde } from '../processor/serdes.js'
import type { Topology } from '../processor/topology.js'
import { CheckpointStore } from '../state/checkpoint-store.js'
import { StateDirectory } from '../state/state-directory.js'
import { Alarm } from '../time/alarm.js'
import type { Clock } from '../time/clock.js'
import type { Logger } from '../util/logger.js'
import { validateRuntimeConfig } from './config.js'
import type { EmbeddedRuntimeConfig } from './config.js'

export type RuntimeState = 'CREATED' | 'RUNNING' | 'PENDING_SHUTDOWN' | 'NOT_RUNNING' | 'ERROR'

/** Records a task processes before the loop looks at the clock again. */
const BATCH = 256
/** Longest stretch of processing before the loop yields to the event loop (timers, I/O). */
const SLICE_MS = 5

export interface Producer<K, V> {
  /** Appends a record; the timestamp defaults to the wall clock. Returns the partition written. */
  send(key: K | null, value: V | null, timestamp?: number, headers?: Headers): number
}

export type RecordListener<K, V> = (record: StreamRecord<K | null, V | null>, partition: number, offset: number) => void

interface Subscription {
  readonly logs: PartitionLog[]
  readonly positions: number[]
  readonly deliver: (log: PartitionLog, offset: number) => void
}

/**
 * Runs a topology in this process over in-memory partitioned topics: one task per input partition, the
 * task loop on the event loop in short slices, and one real timer armed for the earliest wall-clock due
 * time, so wall-clock punctuations fire on time with no input and nothing polls in between.
 */
export class EmbeddedRuntime {
  private readonly config: Required<Omit<EmbeddedRuntimeConfig, 'topics'>>
  private readonly clock: Clock
  private readonly logger: Logger
  private readonly errorHandler: ErrorHandler
  private readonly topics: TopicRegistry
  private readonly tasks: StreamTask[] = []
  private readonly alarm: Alarm
  private readonly subscriptions: Subscription[] = []
  private readonly errorListeners: Array<(err: Error) => void> = []
  private readonly checkpoints = new Map<string, TaskCheckpoint>()
  private runScheduled = false
  private inRun = false
  private nextCommitAt = 0
  /** Whether records were processed since the last commit: an idle runtime has nothing to commit. */
  private uncommitted = false
  /** Records processed since the last commit (durable mode bounds it with commitMaxRecords). */
  private recordsSinceCommit = 0
  private currentState: RuntimeState = 'CREATED'
  private failure: Error | undefined
  private stateDirectory: StateDirectory | undefined
  private readonly commitTimes = { commits: 0, totalMs: 0, maxMs: 0 }
  /** True when no stateDir was given: the runtime made a temporary one and removes it on stop. */
  private readonly ownsStateDir: boolean
  private checkpointStore: CheckpointStore | undefined

  constructor(
    private readonly topology: Topology,
    config: EmbeddedRuntimeConfig,
  ) {
    const valid = validateRuntimeConfig(config)
    this.ownsStateDir = config.stateDir === undefined
    this.config = valid
    this.clock = valid.clock
    this.logger = valid.logger
    this.errorHandler = valid.errorHandler
    this.topics = new TopicRegistry(valid.defaultPartitions, this.scheduleRun)
    for (const [name, t] of Object.entries(config.topics ?? {})) this.topics.create(name, t.partitions)
    this.alarm = new Alarm(this.clock, this.onAlarm)
  }

  get state(): RuntimeState {
    return this.currentState
  }

  /** Creates a topic with a partition count (topics not created are made with `defaultPartitions`). */
  createTopic(name: string, partitions: number): void {
    this.topics.create(name, partitions)
  }

  producer<K = string, V = string>(topic: string, serdes: { keySerde?: Serde<K>; valueSerde?: Serde<V> } = {}): Producer<K, V> {
    const keySerde = serdes.keySerde ?? (Serdes.String() as unknown as Serde<K>)
    const valueSerde = serdes.valueSerde ?? (Serdes.String() as unknown as Serde<V>)
    this.topics.partitions(topic)
    return {
      send: (key, value, timestamp, headers = NO_HEADERS) =>
        this.topics.send(topic, undefined, key, keySerde as Serde<unknown>, value, valueSerde as Serde<unknown>, timestamp ?? this.clock.now(), headers),
    }
  }

  /**
   * Calls `listener` for every record of `topic` (from its start), in offset order per partition, right
   * after the processing slice that wrote it. Returns a function that ends the subscription.
   */
  subscribe<K = string, V = string>(topic: string, listener: RecordListener<K, V>, serdes: { keySerde?: Serde<K>; valueSerde?: Serde<V> } = {}): () => void {
    const keySerde = serdes.keySerde ?? (Serdes.String() as unknown as Serde<K>)
    const valueSerde = serdes.valueSerde ?? (Serdes.String() as unknown as Serde<V>)
    const logs = this.topics.partitions(topic)
    const sub: Subscription = {
      logs,
      positions: logs.map((l) => l.startOffset()),
      deliver: (log, offset) => {
        const raw = log.get(offset)
        if (raw === undefined) return
        listener(
          {
            key: readKey(raw, keySerde as Serde<unknown>, topic) as K | null,
            value: readValue(raw, valueSerde as Serde<unknown>, topic) as V | null,
            timestamp: raw.timestamp,
            headers: raw.headers,
          },
          log.partition,
          offset,
        )
      },
    }
    this.subscriptions.push(sub)
    this.scheduleRun()
    return () => {
      const i = this.subscriptions.indexOf(sub)
      if (i >= 0) this.subscriptions.splice(i, 1)
    }
  }

  on(event: 'error', listener: (err: Error) => void): this {
    if (event === 'error') this.errorListeners.push(listener)
    return this
  }

  start(): void {
    if (this.currentState !== 'CREATED') throw new PunctualError('ILLEGAL_STATE', `cannot start the runtime in state ${this.currentState}`)
    // Held from start to stop: a second process on the same directory is refused.
    this.stateDirectory = StateDirectory.open(this.config.stateDir, this.config.applicationId)
    try {
      // Durable only with a state directory the application chose: a temporary one dies with the process.
      if (!this.ownsStateDir) this.checkpointStore = CheckpointStore.open(this.config.stateDir)
      this.createTasks()
      for (const task of this.tasks) task.init()
    } catch (err) {
      this.fail(err)
      throw err
    }
    this.currentState = 'RUNNING'
    // What init restored or registered (schedules' baselines, catch-up fires) is durable from the start.
    this.commit()
    this.scheduleRun()
    this.rearm()
  }

  /**
   * Stops: by default first processes every record already in the input topics, then commits and closes
   * the processors. Rejects with the failure if the runtime had stopped on an error.
   */
  async stop(options: { drain?: boolean } = {}): Promise<void> {
    if (this.currentState === 'RUNNING') {
      this.currentState = 'PENDING_SHUTDOWN'
      this.alarm.disarm()
      try {
        if (options.drain ?? true) this.drain()
        this.commit()
        this.deliver()
        for (const task of this.tasks) task.close()
        this.currentState = 'NOT_RUNNING'
      } catch (err) {
        this.fail(err)
      }
      this.closeStateDirectory()
    } else if (this.currentState === 'CREATED') {
      this.currentState = 'NOT_RUNNING'
    }
    if (this.failure !== undefined) throw this.failure
  }

  metrics(): MetricsSnapshot {
    return sumMetrics(this.tasks.map((t) => t.metrics))
  }

  /** How many commits ran and how long they took (with a state directory they include the lmdb write). */
  commitStats(): { readonly commits: number; readonly meanMs: number; readonly maxMs: number } {
    const c = this.commitTimes
    return { commits: c.commits, meanMs: c.commits === 0 ? 0 : c.totalMs / c.commits, maxMs: c.maxMs }
  }

  /** The last committed checkpoint of each task. */
  committed(): ReadonlyMap<string, TaskCheckpoint> {
    return this.checkpoints
  }

  /** Number of tasks: one per input partition of each sub-topology. */
  taskIds(): string[] {
    return this.tasks.map((t) => t.taskId.toString())
  }

  private createTasks(): void {
    for (const sub of this.topology.subtopologies()) {
      // Sink topics exist before the first record, so keys are partitioned over the final count.
      for (const node of sub.nodes) if (node.kind === 'sink') this.topics.partitions(node.topic)
      const counts = sub.sourceTopics.map((t) => this.topics.partitions(t).length)
      const partitions = counts[0] ?? 0
      if (counts.some((c) => c !== partitions)) {
        throw new PunctualError(
          'INVALID_TOPOLOGY',
          `sub-topology ${sub.id}: co-partitioned topics must have the same number of partitions, got ${sub.sourceTopics.map((t, i) => `${t}=${counts[i]}`).join(', ')}`,
        )
      }
      for (let p = 0; p < partitions; p++) {
        this.tasks.push(
          new StreamTask({
            subtopology: sub,
            partition: p,
            topics: this.topics,
            clock: this.clock,
            maxTaskIdleMs: this.config.maxTaskIdleMs,
            errorHandler: this.errorHandler,
            stateDir: this.config.stateDir,
            checkpoint: this.restored(`${sub.id}_${p}`),
            trackChanges: this.checkpointStore !== undefined,
            onWallClockChange: this.onWallClockChange,
          }),
        )
      }
    }
  }

  /** The durable part of a task's last checkpoint (input positions are not durable yet). */
  private restored(taskId: string): TaskCheckpoint | undefined {
    const store = this.checkpointStore
    if (store === undefined) return undefined
    const state = store.load(taskId)
    const keyed = store.loadKeyed(taskId)
    const stores = store.loadStores(taskId)
    if (state === undefined && keyed === undefined && stores === undefined) return undefined
    return {
      streamTime: state?.streamTime,
      lastFires: state?.lastFires ?? {},
      positions: {},
      ...(keyed === undefined ? {} : { keyed }),
      ...(stores === undefined ? {} : { stores }),
    }
  }

  private readonly scheduleRun = (): void => {
    if (this.runScheduled || this.currentState !== 'RUNNING') return
    this.runScheduled = true
    setImmediate(this.run)
  }

  private readonly run = (): void => {
    this.runScheduled = false
    if (this.currentState !== 'RUNNING') return
    this.inRun = true
    let more: boolean
    try {
      more = this.runSlice()
      this.deliver()
    } catch (err) {
      this.fail(err)
      return
    } finally {
      this.inRun = false
    }
    if (more) this.scheduleRun()
    this.rearm()
  }

  /** Processes in batches for at most SLICE_MS; returns whether records are left to process. */
  private runSlice(): boolean {
    const sliceEnd = this.clock.now() + SLICE_MS
    for (;;) {
      let more = false
      for (const task of this.tasks) {
        const n = task.process(BATCH)
        if (n > 0) {
          this.uncommitted = true
          this.recordsSinceCommit += n
        }
        if (n === BATCH) more = true
      }
      const now = this.clock.now()
      if (now >= this.nextWallClockDue()) this.punctuateWallClock(now)
      if (this.uncommitted && (now >= this.nextCommitAt || (this.checkpointStore !== undefined && this.recordsSinceCommit >= this.config.commitMaxRecords))) this.commit()
      if (!more || now >= sliceEnd) return more
    }
  }

  private readonly onAlarm = (): void => {
    if (this.currentState !== 'RUNNING') return
    if (this.runScheduled) return // the scheduled run fires what is due
    this.run()
  }

  private readonly onWallClockChange = (): void => {
    if (!this.inRun && this.currentState === 'RUNNING') this.rearm()
  }

  private punctuateWallClock(now: number): void {
    let fired = 0
    for (const task of this.tasks) fired += task.punctuateWallClock(now)
    // Last fire times must be durable before the next fire could be missed: commit right away.
    if (fired > 0) this.commit()
    // Punctuations may have written records, and tasks waiting on an empty partition may be ready now.
    this.scheduleRun()
  }

  private nextWallClockDue(): number {
    let due = Infinity
    for (const task of this.tasks) {
      const d = task.nextWallClockDue()
      if (d < due) due = d
    }
    return due
  }

  private rearm(): void {
    if (this.currentState !== 'RUNNING') return
    this.alarm.armAt(Math.min(this.nextWallClockDue(), this.uncommitted ? this.nextCommitAt : Infinity))
  }

  /** Processes everything already written; durable runs commit every commitMaxRecords on the way. */
  private drain(): void {
    const chunk = this.checkpointStore === undefined ? Infinity : this.config.commitMaxRecords
    for (let progressed = true; progressed; ) {
      progressed = false
      for (const task of this.tasks) {
        const n = task.process(chunk)
        if (n === 0) continue
        progressed = true
        this.uncommitted = true
        if (this.checkpointStore !== undefined) this.commit()
      }
    }
  }

  private commit(): void {
    const started = performance.now()
    const keyedChanges = new Map<string, KeyedChanges>()
    const storeChanges = new Map<string, Map<string, Array<[StoreKey, unknown]>>>()
    for (const task of this.tasks) {
      const id = task.taskId.toString()
      this.checkpoints.set(id, task.lightCheckpoint())
      const changes = task.keyedChanges()
      if (changes !== undefined && (changes.states.length > 0 || changes.timers.length > 0)) keyedChanges.set(id, changes)
      const stores = task.storeChanges()
      if (stores.size > 0) storeChanges.set(id, stores)
    }
    this.checkpointStore?.save(this.checkpoints, keyedChanges, storeChanges)
    const ms = performance.now() - started
    this.commitTimes.commits++
    this.commitTimes.totalMs += ms
    if (ms > this.commitTimes.maxMs) this.commitTimes.maxMs = ms
    this.releaseConsumed()
    this.uncommitted = false
    this.recordsSinceCommit = 0
    this.nextCommitAt = this.clock.now() + this.config.commitIntervalMs
  }

  /** Frees records every reader of a log (tasks, subscribers) has passed; unread topics keep everything. */
  private releaseConsumed(): void {
    const readTo = new Map<PartitionLog, number>()
    const reader = (log: PartitionLog, offset: number): void => {
      const prev = readTo.get(log)
      readTo.set(log, prev === undefined ? offset : Math.min(prev, offset))
    }
    for (const task of this.tasks) for (const { queue, offset } of task.committedPositions()) reader(queue.log, offset)
    for (const sub of this.subscriptions) sub.logs.forEach((log, p) => reader(log, sub.positions[p] as number))
    for (const [log, offset] of readTo) log.truncateBefore(offset)
  }

  private deliver(): void {
    for (const sub of this.subscriptions) {
      for (let p = 0; p < sub.logs.length; p++) {
        const log = sub.logs[p] as PartitionLog
        const end = log.endOffset()
        let pos = sub.positions[p] as number
        while (pos < end) sub.deliver(log, pos++)
        sub.positions[p] = pos
      }
    }
  }

  private closeStateDirectory(): void {
    this.checkpointStore?.close()
    this.checkpointStore = undefined
    this.stateDirectory?.release()
    this.stateDirectory = undefined
    if (this.ownsStateDir) rmSync(this.config.stateDir, { recursive: true, force: true })
  }

  private fail(err: unknown): void {
    const error = err instanceof Error ? err : new Error(String(err))
    this.failure = error
    this.currentState = 'ERROR'
    this.alarm.disarm()
    for (const task of this.tasks) {
      try {
        task.close()
      } catch {
        // The first failure is the one reported; close errors after it add nothing.
      }
    }
    this.closeStateDirectory()
    if (this.errorListeners.length === 0) this.logger.error(`runtime ${this.config.applicationId} stopped: ${error.message}`)
    for (const l of this.errorListeners) l(error)
  }
}
