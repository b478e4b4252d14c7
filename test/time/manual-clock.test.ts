import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Alarm } from '../../src/time/alarm.js'
import { ManualClock } from '../../src/testing/index.js'

describe('ManualClock as a scheduler', () => {
  it('advance runs what comes due in due-time order, each with the clock at its due time', () => {
    const clock = new ManualClock(100)
    const seen: string[] = []
    clock.at(130, () => seen.push(`b@${clock.now()}`))
    clock.at(110, () => seen.push(`a@${clock.now()}`))
    clock.at(130, () => seen.push(`c@${clock.now()}`))
    clock.at(200, () => seen.push(`late@${clock.now()}`))
    assert.equal(clock.advance(50), 150)
    assert.deepEqual(seen, ['a@110', 'b@130', 'c@130'], 'ties in the order scheduled; 200 still waits')
    assert.equal(clock.scheduledCount, 1)
  })

  it('runs a callback scheduled by a callback when it is due within the same advance', () => {
    const clock = new ManualClock(0)
    const seen: number[] = []
    clock.at(10, () => {
      seen.push(clock.now())
      clock.at(15, () => seen.push(clock.now()))
      clock.at(99, () => seen.push(clock.now()))
    })
    clock.advance(20)
    assert.deepEqual(seen, [10, 15])
  })

  it('a cancelled callback never runs; one due in the past runs at the next advance, even by 0', () => {
    const clock = new ManualClock(50)
    const seen: string[] = []
    const cancel = clock.at(60, () => seen.push('cancelled'))
    clock.at(40, () => seen.push(`past@${clock.now()}`))
    cancel()
    clock.advance(0)
    clock.advance(20)
    assert.deepEqual(seen, ['past@50'])
  })
})

describe('Alarm', () => {
  it('keeps one scheduled callback, for the earliest time it is armed for, and never fires early', () => {
    const clock = new ManualClock(0)
    let calls = 0
    let fired = 0
    const scheduler = { at: (due: number, cb: () => void) => (calls++, clock.at(due, cb)) }
    const alarm = new Alarm(clock, scheduler, () => fired++)
    alarm.armAt(100)
    alarm.armAt(100)
    assert.equal(calls, 1, 'arming for the time already armed schedules nothing')
    alarm.armAt(50)
    assert.equal(clock.scheduledCount, 1, 're-arming cancels the earlier callback')
    clock.advance(49)
    assert.equal(fired, 0)
    clock.advance(1)
    assert.equal(fired, 1)
    assert.equal(alarm.armedAt, Infinity)
  })

  it('re-arms instead of firing when the scheduler calls it before the due time', () => {
    const clock = new ManualClock(0)
    let fired = 0
    let early: (() => void) | undefined
    const alarm = new Alarm(clock, { at: (due, cb) => ((early ??= cb), clock.at(due, cb)) }, () => fired++)
    alarm.armAt(100)
    early!() // a real timer waking a fraction of a millisecond early
    assert.equal(fired, 0)
    assert.equal(alarm.armedAt, 100)
    clock.advance(100)
    assert.equal(fired, 1)
  })
})
