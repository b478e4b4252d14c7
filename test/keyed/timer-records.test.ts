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

describe('TimerRecords pages', () => {
  it('reuses freed ids across pages and keeps the others intact', () => {
    const records = new TimerRecords()
    const n = 100_000
    for (let i = 0; i < n; i++) records.add(1, `k${i}`, i, i, i)
    // Free every third id (spread over every page), then add as many again: the freed ids come back.
    const freed = new Set<number>()
    for (let id = 0; id < n; id += 3) {
      records.kill(id)
      records.release(id)
      freed.add(id)
    }
    const reused = new Set<number>()
    for (let i = 0; i < freed.size; i++) reused.add(records.add(2, `r${i}`, -i, -i, -i))
    assert.deepEqual(reused, freed)
    assert.equal(records.idLimit(), n)
    for (let id = 0; id < n; id++) {
      if (freed.has(id)) {
        assert.equal(records.owner(id), 2)
        assert.ok(records.isLive(id))
      } else {
        assert.equal(records.key(id), `k${id}`)
        assert.ok(records.isTimer(id, 1, `k${id}`, id))
        assert.equal(records.isTimer(id, 2, `k${id}`, id), false)
      }
    }
    // The next new id is past the last page in use, in a page of its own.
    assert.equal(records.add(3, 'next', 0, 0, 0), n)
  })
})
