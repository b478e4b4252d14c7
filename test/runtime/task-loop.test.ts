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

describe('task loop, durable backpressure', () => {
  it('fires a wall-clock punctuation on time while processing waits for the commit in flight', async () => {
    const clock = new ManualClock(0)
    const fires: number[] = []
    let due = 100
    // A task with endless input and a wall-clock schedule every 100 ms.
    const task = {
      process: (max: number) => max,
      nextWallClockDue: () => due,
      punctuateWallClock: (now: number) => {
        if (now < due) return 0
        fires.push(now)
        due += 100
        return 1
      },
    }
    let commits = 0
    let arms = 0
    const host: LoopHost = {
      tasks: [task as unknown as LoopHost['tasks'][number]],
      clock,
      // A loop that does not fire a due punctuation re-arms its alarm for a time already past, again and
      // again (on this clock, without end): a bound on re-arming turns that into a failure.
      scheduler: {
        at: (dueMs, callback) => {
          if (++arms > 100) throw new Error(`the alarm was armed ${arms} times; the punctuation due at ${due} did not fire`)
          return clock.at(dueMs, callback)
        },
      },
      commitIntervalMs: 10_000,
      commitMaxRecords: 10,
      isDurable: () => true,
      isRunning: () => true,
      // The commit is never durable in this test: processing must stop at commitMaxRecords.
      writeCommit: () => {
        commits++
        return new Promise<void>(() => {})
      },
      restoreStep: () => false,
      deliver: () => {},
      fail: (err) => assert.fail(err as Error),
    }
    const loop = new TaskLoop(host)
    loop.scheduleRun()
    await new Promise((resolve) => setImmediate(resolve))
    assert.equal(commits, 1, 'the first batch took a commit, which stays in flight')
    clock.advance(100)
    await new Promise((resolve) => setImmediate(resolve))
    clock.advance(100)
    await new Promise((resolve) => setImmediate(resolve))
    assert.deepEqual(fires, [100, 200], 'the punctuations fired at their due times, although processing waits')
    loop.disarm()
  })
})
