import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { TimerIndex, timerHash } from '../../src/keyed/timer-index.js'
import { TimerRecords } from '../../src/keyed/timer-records.js'

/** A timer's identity, as the index sees it. */
interface Timer {
  readonly owner: number
  readonly key: string
  readonly timestamp: number
}

/** Records and index driven as a timer queue drives them, beside a model of what is pending. */
class Harness {
  readonly records = new TimerRecords()
  readonly index = new TimerIndex(this.records)
  readonly pending = new Map<string, number>()
  /** Calls during which a stepwise rebuild was under way. */
  stepwiseSeen = 0

  add(t: Timer): boolean {
    const h = timerHash(t.owner, t.key, t.timestamp)
    const found = this.index.findOrReserve(h, t.owner, t.key, t.timestamp, this.pending.size)
    if ((this.index as unknown as { old?: Int32Array }).old !== undefined) this.stepwiseSeen++
    const name = `${t.owner}/${t.key}/${t.timestamp}`
    if (found >= 0) {
      assert.equal(found, this.pending.get(name), `a duplicate of ${name} finds its timer`)
      return false
    }
    assert.equal(this.pending.has(name), false, `${name} is pending but the index misses it`)
    const id = this.records.add(t.owner, t.key, t.timestamp, 0, h)
    this.index.fill(found, h, id)
    this.pending.set(name, id)
    return true
  }

  /** Deletes the timer as a queue does: marked dead, its id freed (as when the heap drops its slot). */
  remove(t: Timer): void {
    const name = `${t.owner}/${t.key}/${t.timestamp}`
    const id = this.index.find(timerHash(t.owner, t.key, t.timestamp), t.owner, t.key, t.timestamp)
    assert.equal(id, this.pending.get(name) ?? -1, `find ${name}`)
    if (id < 0) return
    this.records.kill(id)
    this.records.release(id)
    this.pending.delete(name)
  }
}

const timer = (i: number): Timer => ({ owner: i % 3, key: `key-${i % 50_000}`, timestamp: 1_000 * Math.floor(i / 50_000) })

describe('TimerIndex', () => {
  it('finds every pending timer while a large table is rebuilt step by step from its old table', () => {
    const h = new Harness()
    for (let i = 0; i < 300_000; i++) {
      assert.ok(h.add(timer(i)))
      // Registering an earlier timer again finds it, wherever its entry is.
      if (i % 7 === 0) assert.equal(h.add(timer(i >>> 1)), false)
    }
    assert.ok(h.stepwiseSeen > 1000, `stepwise rebuild seen in ${h.stepwiseSeen} calls`)
    for (let i = 0; i < 300_000; i++) assert.equal(h.index.find(timerHash(timer(i).owner, timer(i).key, timer(i).timestamp), timer(i).owner, timer(i).key, timer(i).timestamp), h.pending.get(`${timer(i).owner}/${timer(i).key}/${timer(i).timestamp}`))
  })

  it('finds every pending timer while timers leave and ids are reused (the rebuild reads the records)', () => {
    const h = new Harness()
    let next = 0
    let oldest = 0
    for (let round = 0; round < 40; round++) {
      for (let i = 0; i < 20_000; i++) h.add(timer(next++))
      // Half of what was added leaves, oldest first, so that the table holds stale entries and ids come back.
      for (let i = 0; i < 10_000; i++) h.remove(timer(oldest++))
      for (let i = oldest; i < next; i += 997) h.remove(timer(i))
    }
    assert.ok(h.stepwiseSeen > 1000, `stepwise rebuild seen in ${h.stepwiseSeen} calls`)
    for (const [name, id] of h.pending) {
      const [owner, key, timestamp] = name.split('/') as [string, string, string]
      assert.equal(h.index.find(timerHash(Number(owner), key, Number(timestamp)), Number(owner), key, Number(timestamp)), id, name)
    }
    for (let i = 0; i < oldest; i++) assert.equal(h.index.find(timerHash(timer(i).owner, timer(i).key, timer(i).timestamp), timer(i).owner, timer(i).key, timer(i).timestamp), -1)
  })
})
