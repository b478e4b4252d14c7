import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ManualClock } from '../../src/testing/index.js'
import { TaskLoop } from '../../src/runtime/task-loop.js'
import type { LoopHost } from '../../src/runtime/task-loop.js'

describe('task loop', () => {
  it('a failure handing over output once a commit is durable fails the runtime (not an unhandled rejection)', async () => {
    const clock = new ManualClock(0)
    const failures: unknown[] = []
    let durable!: () => void
    const host: LoopHost = {
      tasks: [],
      clock,
      scheduler: clock,
      commitIntervalMs: 1000,
      commitMaxRecords: 1000,
      isDurable: () => true,
      isRunning: () => failures.length === 0,
      writeCommit: () => new Promise<void>((resolve) => (durable = resolve)),
      restoreStep: () => false,
      deliver: () => {
        throw new Error('the log is corrupt')
      },
      fail: (err) => void failures.push(err),
    }
    const loop = new TaskLoop(host)
    loop.commit()
    durable()
    await loop.settled()
    assert.equal(failures.length, 1)
    assert.match((failures[0] as Error).message, /the log is corrupt/)
  })
})
