import { PunctualError } from '../errors.js'
import type { StateStore } from '../processor/api.js'
import type { ErrorHandler } from '../processor/errors.js'
import type { InputPartition, RecordCollector } from '../processor/record-io.js'
import { StreamTask } from '../processor/internal/task.js'
import type { TaskCheckpoint } from '../processor/internal/task-config.js'
import { partitionCounts } from '../processor/partition-counts.js'
import type { Subtopology, Topology } from '../processor/topology.js'
import type { Clock } from '../time/clock.js'
import type { TimestampExtractor } from '../processor/timestamp-extractor.js'
import type { Committer } from './committer.js'
import type { LocalTaskState } from './local-task-state.js'
import type { TaskEvent } from '../metrics.js'
import { KEYED_STATE_STORE_PREFIX } from './changelog-records.js'

/** What a runtime gives its tasks to read and write records: its input partitions and a collector. */
export interface TaskIo {
  /** A task's input partition (undefined: the runtime does not hold it). */
  readonly inputs: (topic: string, partition: number) => InputPartition | undefined
  readonly collector: RecordCollector
  /** A task's own collector, where its records need one (a producer per task); `collector` otherwise. */
  readonly collectorOf?: (taskId: string) => RecordCollector
}

export interface TaskFactoryConfig {
  readonly io: TaskIo
  readonly clock: Clock
  readonly maxTaskIdleMs: number
  readonly defaultTimestampExtractor?: TimestampExtractor | undefined
  readonly errorHandler: ErrorHandler
  /** Where input records skipped on an error go, if anywhere. */
  readonly deadLetterTopic?: string | undefined
  readonly stateDir: string
  /** Whether tasks record their changes, and their changelog records' codecs. */
  readonly committer: Committer<unknown>
  /**
   * Where tasks' state lives on this machine: their last local checkpoints, and the entries of their
   * persistent stores and keyed states (none: tasks restore from changelogs only, and hold their state
   * in memory).
   */
  readonly localState?: LocalTaskState | undefined
  readonly onWallClockChange: () => void
  /** Told when a task was restored, from its changelog records or the state directory. */
  readonly onRestored?: (report: RestoreReport) => void
  /** Told each step of a task's lifecycle (`TaskEvent`). */
  readonly onTaskEvent?: (event: TaskEvent) => void
  /** The application instance's global stores, which every task reads. */
  readonly globalStores?: (name: string) => StateStore | undefined
}

/** How a task's state came back: from where, how much, how long it took. */
export interface RestoreReport {
  readonly taskId: string
  readonly from: 'changelog' | 'stateDirectory'
  /** Changelog records read, or entries loaded (keyed state keys, timers, store entries). */
  readonly count: number
  readonly ms: number
}

/** A task the topology defines: one input partition of a sub-topology. */
export interface TaskDefinition {
  readonly id: string
  readonly subtopology: Subtopology
  readonly partition: number
}

/**
 * The topics a runtime keeps itself, as `taskDefinitions` sizes them (the embedded runtime's log): which
 * exist, their partition counts, and creating one.
 */
export interface TopicSizes {
  has(topic: string): boolean
  /** The partition count of `topic`; a topic that does not exist yet is created with the default count. */
  partitionsFor(topic: string): number
  /** Creates `topic` with `partitions` partitions. */
  create(topic: string, partitions: number): void
}

/**
 * Every task of a topology over topics the runtime keeps: one per input partition of each sub-topology
 * (Kafka Streams' task model). Repartition topics not created explicitly are sized as Kafka Streams
 * sizes them (partitionCounts), and every sink topic is created before any task runs, so keys are
 * partitioned over their final count; co-partitioned source topics must have equal partition counts.
 */
export function taskDefinitions(topology: Topology, topics: TopicSizes): TaskDefinition[] {
  const internal = topology.internalTopics()
  const sizes = partitionCounts(topology, (t) => (topics.has(t) ? topics.partitionsFor(t) : internal.has(t) ? undefined : topics.partitionsFor(t)))
  for (const [topic, count] of sizes.internal) if (!topics.has(topic)) topics.create(topic, count)
  for (const sub of topology.subtopologies()) for (const node of sub.nodes) if (node.kind === 'sink') topics.partitionsFor(node.topic)
  return tasksOf(topology, (sub) => {
    const counts = sub.sourceTopics.map((t) => topics.partitionsFor(t))
    const partitions = counts[0] ?? 0
    if (counts.some((c) => c !== partitions)) {
      throw new PunctualError(
        'INVALID_TOPOLOGY',
        `sub-topology ${sub.id}: co-partitioned topics must have the same number of partitions, got ${sub.sourceTopics.map((t, i) => `${t}=${counts[i]}`).join(', ')}`,
      )
    }
    return partitions
  })
}

/** The tasks of a topology whose sub-topologies have `partitions(sub)` input partitions each: `<sub>_<partition>`. */
export function tasksOf(topology: Topology, partitions: (sub: Subtopology) => number): TaskDefinition[] {
  const out: TaskDefinition[] = []
  for (const sub of topology.subtopologies()) {
    const n = partitions(sub)
    for (let p = 0; p < n; p++) out.push({ id: `${sub.id}_${p}`, subtopology: sub, partition: p })
  }
  return out
}

/** The stores of a task a restore loads into memory (persistent ones read their entries on disk). */
export function inMemoryStores(def: TaskDefinition): string[] {
  return def.subtopology.stores.filter((b) => b.persistent !== true).map((b) => b.name)
}

/**
 * Whether a store of a task (a state store, or a keyed state's `punctual.state.` store) reads its
 * committed entries on disk when the runtime keeps its changelog records there (`keepsChangelog`):
 * persistent stores and keyed states do; timers, in-memory stores and the task's clocks are read back.
 */
export function readsOnDisk(def: TaskDefinition): (store: string) => boolean {
  const persistent = new Set(def.subtopology.stores.filter((b) => b.persistent === true).map((b) => b.name))
  return (store) => persistent.has(store) || store.startsWith(KEYED_STATE_STORE_PREFIX)
}

/** Builds a task from a checkpoint (none: fresh). It is not initialized yet. */
export function createTask(def: TaskDefinition, config: TaskFactoryConfig, checkpoint: TaskCheckpoint | undefined): StreamTask {
  const { committer, localState } = config
  return new StreamTask({
    subtopology: def.subtopology,
    partition: def.partition,
    inputs: config.io.inputs,
    collector: config.io.collectorOf?.(def.id) ?? config.io.collector,
    clock: config.clock,
    maxTaskIdleMs: config.maxTaskIdleMs,
    defaultTimestampExtractor: config.defaultTimestampExtractor,
    errorHandler: config.errorHandler,
    deadLetterTopic: config.deadLetterTopic,
    stateDir: config.stateDir,
    checkpoint,
    storeDisk: localState === undefined ? undefined : (store) => localState.storeDisk(def.id, store),
    // Keyed state reads its committed keys there (a fresh task's, once some left memory); where the local
    // state keeps the changelog records, a restore never loads keyed state, so it is read there.
    keyedStateDisk: localState === undefined ? undefined : (state) => localState.keyedStateDisk(def.id, state),
    trackChanges: committer.tracksChanges,
    onWallClockChange: config.onWallClockChange,
    globalStores: config.globalStores,
  })
}

/** A dead-letter topic must not feed the topology: a record that failed would be read again, and fail again. */
export function checkDeadLetterTopicOf(topology: Topology, topic: string | undefined, where: string): void {
  if (topic === undefined) return
  if (topology.subtopologies().some((s) => s.sourceTopics.includes(topic))) {
    throw new PunctualError('INVALID_CONFIG', `${where}: deadLetterTopic "${topic}" is a source topic of the topology; records that failed would be read again`)
  }
}
