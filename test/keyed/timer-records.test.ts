import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { TimerRecords } from '../../src/keyed/timer-records.js'

describe('TimerRecords', () => {
  it('keeps every record through its growths: 200,000 timers read back', () => {
    const records = new TimerRecords()
    const ids: number[] = []
    for (let i = 0; i < 200_000; i++) ids.push(records.add(i % 7, `k${i}`, 1_000_000 + i * 3, i, i ^ 0x5a5a))
    for (let i = 0; i < 200_000; i++) {
      const id = ids[i] as number
      assert.equal(records.timestamp(id), 1_000_000 + i * 3)
      assert.equal(records.seq(id), i)
      assert.equal(records.key(id), `k${i}`)
      assert.equal(records.owner(id), i % 7)
      assert.equal(records.hash(id), i ^ 0x5a5a)
      assert.ok(records.isLiveOf(id, i % 7))
    }
  })
})
