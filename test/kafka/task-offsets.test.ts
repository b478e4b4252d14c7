import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { DurableTaskState } from '../../src/state/checkpoint-store.js'
import { taskOffsetSums } from '../../src/kafka/streams-group/task-offsets.js'

const checkpoint = (offsets: Record<string, number> | undefined): DurableTaskState => ({ streamTime: 0, lastFires: {}, positions: {}, ...(offsets === undefined ? {} : { changelog: { offsets, writtenAt: 0 } }) })

describe("a streams group member's task offsets", () => {
  it('sums each task’s changelog offsets: standbys from their readers, other tasks from their checkpoints, active tasks left out; ends only where a reader saw them', () => {
    const sums = taskOffsetSums(
      [
        ['0_0', checkpoint({ 'app-a-changelog': 10, 'app-b-changelog': 5 })],
        ['0_1', checkpoint({ 'app-a-changelog': 7 })],
        ['0_2', checkpoint({ 'app-a-changelog': 3 })],
        ['1_0', checkpoint(undefined)],
      ],
      [
        { taskId: '0_2', offsets: { 'app-a-changelog': 30, 'app-b-changelog': 4 }, ends: { 'app-a-changelog': 40, 'app-b-changelog': 4 } },
        { taskId: '0_3', offsets: { 'app-a-changelog': 2 }, ends: undefined },
      ],
      new Set(['0_1']),
    )
    assert.deepEqual([...sums.offsets].sort(), [['0_0', 15], ['0_2', 34], ['0_3', 2]])
    assert.deepEqual([...sums.endOffsets], [['0_2', 44]])
  })
})
