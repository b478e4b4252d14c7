import type { DurableTaskState } from '../../state/checkpoint-store.js'
import type { TaskOffsetSums } from './member.js'

/** Where a standby task's local state stands in its changelogs, and their ends where known. */
export interface StandbyPosition {
  readonly taskId: string
  /** Per changelog topic: the offset its local state reaches. */
  readonly offsets: Readonly<Record<string, number>>
  /** Per changelog topic: its end, when the reader has seen it; undefined until then. */
  readonly ends: Readonly<Record<string, number>> | undefined
}

/**
 * The task offset sums a streams group member reports, as Kafka Streams' task manager makes them: each
 * task with local state here that is not active here, its changelog offsets summed (a standby's from
 * where its reader stands, any other from its last checkpoint on disk); and the sums of the changelog
 * ends a standby's reader has seen. The coordinator sees a task's lag on a member as the difference.
 */
export function taskOffsetSums(checkpointed: Iterable<readonly [string, DurableTaskState]>, standbys: readonly StandbyPosition[], active: ReadonlySet<string>): TaskOffsetSums {
  const offsets = new Map<string, number>()
  const endOffsets = new Map<string, number>()
  for (const [taskId, state] of checkpointed) {
    if (!active.has(taskId) && state.changelog !== undefined) offsets.set(taskId, sum(state.changelog.offsets))
  }
  for (const s of standbys) {
    if (active.has(s.taskId)) continue
    offsets.set(s.taskId, sum(s.offsets))
    if (s.ends !== undefined) endOffsets.set(s.taskId, sum(s.ends))
  }
  return { offsets, endOffsets }
}

function sum(offsets: Readonly<Record<string, number>>): number {
  let n = 0
  for (const topic in offsets) n += offsets[topic] as number
  return n
}
