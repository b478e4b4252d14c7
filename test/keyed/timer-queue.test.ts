import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { TimerQueue } from '../../src/keyed/timer-queue.js'
import { timerSortKey } from '../../src/keyed/timer-service.js'
import type { TimerRecord } from '../../src/keyed/timer-service.js'

describe('TimerQueue (set-semantic priority queue)', () => {
  it('registering the same (owner, key, timestamp) twice keeps one timer', () => {
    const q = new TimerQueue()
    assert.equal(q.add(0, 'a', 10, 0), true)
    assert.equal(q.add(0, 'a', 10, 1), false)
    assert.equal(q.size, 1)
    assert.equal(q.add(1, 'a', 10, 2), true, 'another owner is another timer')
    assert.equal(q.add(0, 'b', 10, 3), true, 'another key is another timer')
    assert.equal(q.size, 3)
  })

  it('deleting an absent timer is a no-op; deleting a present one removes it', () => {
    const q = new TimerQueue()
    q.add(0, 'a', 10, 0)
    q.add(0, 'a', 20, 1)
    assert.equal(q.remove(0, 'a', 15), false)
    assert.equal(q.remove(0, 'a', 10), true)
    assert.deepEqual(q.list(0, 'a').map((e) => e.timestamp), [20])
    assert.equal(q.peekTime(), 20)
  })

  it('polls in timestamp order, ties in registration order, only what is due', () => {
    const q = new TimerQueue()
    q.add(0, 'x', 5, 0)
    q.add(0, 'y', 3, 1)
    q.add(0, 'z', 5, 2)
    q.add(0, 'w', 9, 3)
    const out: string[] = []
    for (let e = q.pollDue(5); e !== undefined; e = q.pollDue(5)) out.push(`${e.key}@${e.timestamp}`)
    assert.deepEqual(out, ['y@3', 'x@5', 'z@5'])
    assert.equal(q.size, 1)
  })

  it('matches a naive set for random add/remove/poll sequences (property)', () => {
    type Op = { t: 'add' | 'remove'; key: number; ts: number } | { t: 'poll'; ts: number }
    const op = fc.oneof(
      fc.record({ t: fc.constantFrom<'add' | 'remove'>('add', 'remove'), key: fc.nat(5), ts: fc.nat(20) }),
      fc.record({ t: fc.constant<'poll'>('poll'), ts: fc.nat(20) }),
    ) as fc.Arbitrary<Op>
    fc.assert(
      fc.property(fc.array(op, { maxLength: 80 }), (ops) => {
        const q = new TimerQueue()
        let model: Array<{ key: number; ts: number; seq: number }> = []
        let seq = 0
        for (const o of ops) {
          if (o.t === 'add') {
            const dup = model.some((m) => m.key === o.key && m.ts === o.ts)
            assert.equal(q.add(0, o.key, o.ts, seq), !dup)
            if (!dup) model.push({ key: o.key, ts: o.ts, seq })
            seq++
          } else if (o.t === 'remove') {
            const had = model.some((m) => m.key === o.key && m.ts === o.ts)
            assert.equal(q.remove(0, o.key, o.ts), had)
            model = model.filter((m) => !(m.key === o.key && m.ts === o.ts))
          } else {
            const due = model.filter((m) => m.ts <= o.ts).sort((a, b) => a.ts - b.ts || a.seq - b.seq)
            const got: Array<[unknown, number]> = []
            for (let e = q.pollDue(o.ts); e !== undefined; e = q.pollDue(o.ts)) got.push([e.key, e.timestamp])
            assert.deepEqual(got, due.map((m) => [m.key, m.ts]))
            model = model.filter((m) => m.ts > o.ts)
          }
          assert.equal(q.size, model.length)
        }
      }),
      { numRuns: 1000 },
    )
  })
})

describe('timerSortKey: the time-ordered layout for an ordered store', () => {
  it('byte order is firing order: domain, user before TTL, timestamp, registration order', () => {
    const rec = fc.record({
      kind: fc.constantFrom<'user' | 'ttl'>('user', 'ttl'),
      domain: fc.constantFrom<'event' | 'processing'>('event', 'processing'),
      timestamp: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
      seq: fc.nat(),
      owner: fc.constant('p'),
      key: fc.string(),
    })
    fc.assert(
      fc.property(rec, rec, (a: TimerRecord, b: TimerRecord) => {
        const byFields = a.domain !== b.domain ? (a.domain === 'event' ? -1 : 1) : a.kind !== b.kind ? (a.kind === 'user' ? -1 : 1) : a.timestamp !== b.timestamp ? Math.sign(a.timestamp - b.timestamp) : Math.sign(a.seq - b.seq)
        if (byFields !== 0) assert.equal(Math.sign(Buffer.compare(timerSortKey(a), timerSortKey(b))), byFields)
      }),
    )
  })
})
