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
  /** Told when a task finished restoring from changelog records (how many it read). */
  readonly onRestored?: (taskId: string, records: number) => void
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

/**
 * Builds a task from `from` (a checkpoint rebuilt from its changelog records) or else from its last
 * commit in the state directory (a durable run). It is not initialized yet.
 */
export function createTask(def: TaskDefinition, config: TaskFactoryConfig, from?: TaskCheckpoint): StreamTask {
  const { committer } = config
  const inMemoryStores = def.subtopology.stores.filter((b) => b.persistent !== true).map((b) => b.name)
  return new StreamTask({
    subtopology: def.subtopology,
    partition: def.partition,
    ...config.topics.taskIo(),
    clock: config.clock,
    maxTaskIdleMs: config.maxTaskIdleMs,
    errorHandler: config.errorHandler,
    stateDir: config.stateDir,
    checkpoint: from ?? committer.restored(def.id, inMemoryStores),
    storeDisk: (store) => committer.storeDisk(def.id, store),
    trackChanges: committer.tracksChanges,
    onWallClockChange: config.onWallClockChange,
  })
}
