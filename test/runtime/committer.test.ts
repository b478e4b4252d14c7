import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { StreamTask } from '../../src/processor/internal/task.js'
import type { TaskCheckpoint } from '../../src/processor/internal/task-config.js'
import type { TaskChangelog } from '../../src/runtime/changelog.js'
import { Committer } from '../../src/runtime/committer.js'

/** Just what the committer asks of a task: a checkpoint, and no store or keyed state changes. */
function task(checkpoint: () => TaskCheckpoint): StreamTask {
  return {
    taskId: { subtopology: 0, partition: 1, toString: () => '0_1' },
    lightCheckpoint: checkpoint,
    keyedChanges: () => undefined,
    storeChanges: () => new Map(),
    storeBuilders: () => [],
    changesCommitted: () => {},
  } as unknown as StreamTask
}

describe('Committer', () => {
  it("writes a task's clocks and positions when they change, and whole again once it forgot the task (lost, or restored)", () => {
    const logged: TaskChangelog[] = []
    const committer = new Committer(undefined, (changes) => logged.push(...changes))
    const checkpoint: TaskCheckpoint = { streamTime: 100, lastFires: {}, positions: { 'in:1': 7 } }
    const t = task(() => checkpoint)
    const parts = (): string[] => (logged.pop()?.records ?? []).map((r) => `${r.store}/${Buffer.from(r.key).toString('latin1').replace(/[^\x20-\x7e]/g, '')}`).sort()
    committer.commit([t])
    assert.equal(parts().length, 2, 'the first commit writes stream time and the position')
    committer.commit([t])
    assert.deepEqual(parts(), [], 'nothing changed: nothing written')
    committer.forget('0_1')
    committer.commit([t])
    assert.equal(parts().length, 2, 'forgotten: written whole, though equal to what this committer last wrote')
  })
})
