import type { PartitionLog } from './log/partition-log.js'
import type { TopicRegistry } from './log/topics.js'
import type { StreamTask } from '../processor/internal/task.js'
import type { DurableTopics } from './durable-topics.js'
import type { Subscriptions } from './subscriptions.js'

/**
 * Per partition a task reads: the lowest committed position of its readers (tasks, and subscribers of
 * that topic). What a commit may delete from disk, and what memory may release.
 */
export function taskReadPositions(tasks: readonly StreamTask[], subscriptions: Subscriptions, topics: TopicRegistry): Map<PartitionLog, number> {
  const readTo = new Map<PartitionLog, number>()
  for (const task of tasks) {
    for (const { input, offset } of task.committedPositions()) {
      const log = topics.partitions(input.topic)[input.partition] as PartitionLog
      readTo.set(log, Math.min(offset, readTo.get(log) ?? Infinity))
    }
  }
  subscriptions.positions((log, offset) => {
    const prev = readTo.get(log)
    if (prev !== undefined && offset < prev) readTo.set(log, offset)
  })
  return readTo
}

/**
 * Frees memory of records every reader (tasks, subscribers) has passed. In memory, a topic nobody reads
 * keeps everything; in a durable run, what is on disk can go (readers that need it read it there).
 */
export function releaseConsumed(taskReadTo: ReadonlyMap<PartitionLog, number>, subscriptions: Subscriptions, topics: TopicRegistry, durable: DurableTopics | undefined): void {
  const readTo = new Map(taskReadTo)
  subscriptions.positions((log, offset) => readTo.set(log, Math.min(offset, readTo.get(log) ?? Infinity)))
  if (durable === undefined) {
    for (const [log, offset] of readTo) log.truncateBefore(offset)
    return
  }
  for (const topic of topics.names()) {
    for (const log of topics.partitions(topic)) {
      const onDisk = durable.diskEnd(log)
      log.truncateBefore(Math.min(readTo.get(log) ?? onDisk, onDisk))
    }
  }
}
