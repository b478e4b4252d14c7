import { PunctualError } from '../errors.js'
import type { TopicRegistry } from '../log/topics.js'
import type { ErrorHandler } from '../processor/errors.js'
import { StreamTask } from '../processor/internal/task.js'
import type { TaskCheckpoint } from '../processor/internal/task-config.js'
import type { Subtopology, Topology } from '../processor/topology.js'
import type { Clock } from '../time/clock.js'
import type { Committer } from './committer.js'

export interface TaskFactoryConfig {
  readonly topics: TopicRegistry
  readonly clock: Clock
  readonly maxTaskIdleMs: number
  readonly errorHandler: ErrorHandler
  readonly stateDir: string
  /** Restored checkpoints and store disks, and whether tasks record their changes. */
  readonly committer: Committer
  readonly onWallClockChange: () => void
  /** Told when a task was restored, from its changelog records or the state directory. */
  readonly onRestored?: (report: RestoreReport) => void
}

/** How a task's state came back: from where, how much, how long it took. */
export interface RestoreReport {
  readonly taskId: string
  readonly from: 'changelog' | 'stateDirectory'
  /** Changelog records read, or entries loaded (keyed state keys, timers, store entries). */
  readonly count: number
  readonly ms: number
}

/** Entries a checkpoint holds: keyed state keys, timers and store entries. */
export function checkpointEntries(checkpoint: TaskCheckpoint): number {
  let n = checkpoint.keyed?.timers.length ?? 0
  for (const state of Object.values(checkpoint.keyed?.states ?? {})) n += state.entries.length
  for (const entries of Object.values(checkpoint.stores ?? {})) n += entries.length
  return n
}

/** A task the topology defines: one input partition of a sub-topology. */
export interface TaskDefinition {
  readonly id: string
  readonly subtopology: Subtopology
  readonly partition: number
}

/**
 * Every task of a topology over these topics: one per input partition of each sub-topology (Kafka
 * Streams' task model). Sink topics are created first, so keys are partitioned over their final count;
 * co-partitioned source topics must have equal partition counts.
 */
export function taskDefinitions(topology: Topology, topics: TopicRegistry): TaskDefinition[] {
  const out: TaskDefinition[] = []
  for (const sub of topology.subtopologies()) {
    for (const node of sub.nodes) if (node.kind === 'sink') topics.partitions(node.topic)
    const counts = sub.sourceTopics.map((t) => topics.partitions(t).length)
    const partitions = counts[0] ?? 0
    if (counts.some((c) => c !== partitions)) {
      throw new PunctualError(
        'INVALID_TOPOLOGY',
        `sub-topology ${sub.id}: co-partitioned topics must have the same number of partitions, got ${sub.sourceTopics.map((t, i) => `${t}=${counts[i]}`).join(', ')}`,
      )
    }
    for (let p = 0; p < partitions; p++) out.push({ id: `${sub.id}_${p}`, subtopology: sub, partition: p })
  }
  return out
}

/** A task's last commit in the state directory (a durable run), with its in-memory stores' entries. */
export function loadCheckpoint(def: TaskDefinition, config: TaskFactoryConfig): TaskCheckpoint | undefined {
  const inMemoryStores = def.subtopology.stores.filter((b) => b.persistent !== true).map((b) => b.name)
  return config.committer.restored(def.id, inMemoryStores)
}

/** Builds a task from a checkpoint (none: fresh). It is not initialized yet. */
export function createTask(def: TaskDefinition, config: TaskFactoryConfig, checkpoint: TaskCheckpoint | undefined): StreamTask {
  const { committer } = config
  return new StreamTask({
    subtopology: def.subtopology,
    partition: def.partition,
    ...config.topics.taskIo(),
    clock: config.clock,
    maxTaskIdleMs: config.maxTaskIdleMs,
    errorHandler: config.errorHandler,
    stateDir: config.stateDir,
    checkpoint,
    storeDisk: (store) => committer.storeDisk(def.id, store),
    trackChanges: committer.tracksChanges,
    onWallClockChange: config.onWallClockChange,
  })
}
