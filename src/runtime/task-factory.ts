import { PunctualError } from '../errors.js'
import type { TopicRegistry } from '../log/topics.js'
import type { ErrorHandler } from '../processor/errors.js'
import { StreamTask } from '../processor/internal/task.js'
import type { Topology } from '../processor/topology.js'
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
}

/**
 * One task per input partition of each sub-topology (Kafka Streams' task model), each resuming from its
 * committed checkpoint. Sink topics are created first, so keys are partitioned over their final count;
 * co-partitioned source topics must have equal partition counts.
 */
export function createTasks(topology: Topology, config: TaskFactoryConfig): StreamTask[] {
  const { topics, committer } = config
  const tasks: StreamTask[] = []
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
    const inMemoryStores = sub.stores.filter((b) => b.persistent !== true).map((b) => b.name)
    for (let p = 0; p < partitions; p++) {
      const taskId = `${sub.id}_${p}`
      tasks.push(
        new StreamTask({
          subtopology: sub,
          partition: p,
          ...topics.taskIo(),
          clock: config.clock,
          maxTaskIdleMs: config.maxTaskIdleMs,
          errorHandler: config.errorHandler,
          stateDir: config.stateDir,
          checkpoint: committer.restored(taskId, inMemoryStores),
          storeDisk: (store) => committer.storeDisk(taskId, store),
          trackChanges: committer.tracksChanges,
          onWallClockChange: config.onWallClockChange,
        }),
      )
    }
  }
  return tasks
}
