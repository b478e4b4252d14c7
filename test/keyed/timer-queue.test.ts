import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { TimerQueue } from '../../src/keyed/timer-queue.js'

/** Polls everything due at `time`, as `key@timestamp/seq`. */
function drain(q: TimerQueue, time: number): string[] {
  const out: string[] = []
  for (let e = q.pollDue(time); e !== undefined; e = q.pollDue(time)) out.push(`${String(e.key)}@${e.timestamp}/${e.seq}`)
  return out
}

describe('TimerQueue (set-semantic priority queue)', () => {
  it('registering the same (owner, key, timestamp) twice keeps one timer', () => {
    const q = new TimerQueue()
    assert.equal(q.add(0, 'a', 10, 0), true)
    assert.equal(q.add(0, 'a', 10, 1), false)
    assert.equal(q.size, 1)
    assert.equal(q.add(1, 'a', 10, 2), true, 'another owner is another timer')
    assert.equal(q.add(0, 'b', 10, 3), true, 'another key is another timer')
    assert.equal(q.add(0, 1, 10, 4), true, 'the number 1 is another key than the string "1"')
    assert.equal(q.add(0, '1', 10, 5), true)
    assert.equal(q.size, 5)
  })

  it('deleting an absent timer is a no-op; deleting a present one removes it and gives its sequence', () => {
    const q = new TimerQueue()
    q.add(0, 'a', 10, 0)
    q.add(0, 'a', 20, 1)
    assert.equal(q.remove(0, 'a', 15), -1)
    assert.equal(q.remove(0, 'a', 10), 0)
    assert.equal(q.remove(0, 'a', 10), -1, 'already removed')
    assert.deepEqual(q.list(0, 'a').map((e) => e.timestamp), [20])
    assert.equal(q.peekTime(), 20)
  })

  it('polls in timestamp order, ties in registration order, only what is due', () => {
    const q = new TimerQueue()
    q.add(0, 'x', 5, 0)
    q.add(0, 'y', 3, 1)
    q.add(0, 'z', 5, 2)
    q.add(0, 'w', 9, 3)
    assert.deepEqual(drain(q, 5), ['y@3/1', 'x@5/0', 'z@5/2'])
    assert.equal(q.size, 1)
    assert.equal(q.peekTime(), 9)
  })

  // Short runs stay within the first arrays; long ones over few keys and times grow them and leave long
  // probe runs in the hash set, which removals then shift back. Peeking drops deleted timers from the head
  // of the heap: without a peek after each operation, they stay there until a poll or a compaction. With
  // many distinct timers and more polls, the arrays fill and then shrink as polls drain them.
  const shapes = [
    { name: 'short runs', ops: 80, keys: 5, times: 20, runs: 1000, peekEachOp: true, addWeight: 6, pollWeight: 1 },
    { name: 'long runs, growing past the first arrays', ops: 600, keys: 40, times: 30, runs: 150, peekEachOp: true, addWeight: 6, pollWeight: 1 },
    { name: 'no peeks between operations, few timers', ops: 200, keys: 2, times: 5, runs: 1000, peekEachOp: false, addWeight: 6, pollWeight: 1 },
    { name: 'arrays filled and drained, so they shrink', ops: 1500, keys: 100, times: 40, runs: 60, peekEachOp: false, addWeight: 40, pollWeight: 1 },
  ]
  for (const shape of shapes) {
    it(`matches a naive set for random add/remove/poll sequences (property, ${shape.name})`, () => {
      // Two owners: a timer's owner is kept apart from its heap slot, and must come back with it.
      type Op = { t: 'add' | 'remove'; owner: number; key: number; ts: number } | { t: 'poll' | 'pollOne'; ts: number } | { t: 'check' }
      const op = fc.oneof(
        { weight: shape.addWeight, arbitrary: fc.record({ t: fc.constantFrom<'add' | 'remove'>('add', 'add', 'remove'), owner: fc.nat(1), key: fc.nat(shape.keys), ts: fc.nat(shape.times) }) },
        { weight: shape.pollWeight, arbitrary: fc.record({ t: fc.constantFrom<'poll' | 'pollOne'>('poll', 'pollOne'), ts: fc.nat(shape.times) }) },
        { weight: 1, arbitrary: fc.constant<Op>({ t: 'check' }) },
      ) as fc.Arbitrary<Op>
      fc.assert(
        fc.property(fc.array(op, { maxLength: shape.ops }), (ops) => {
          const q = new TimerQueue()
          let model: Array<{ owner: number; key: number; ts: number; seq: number }> = []
          let seq = 0
          const firing = (a: { ts: number; seq: number }, b: { ts: number; seq: number }): number => a.ts - b.ts || a.seq - b.seq
          const earliest = (): number => (model.length === 0 ? Infinity : Math.min(...model.map((m) => m.ts)))
          for (const o of ops) {
            if (o.t === 'add') {
              const dup = model.some((m) => m.owner === o.owner && m.key === o.key && m.ts === o.ts)
              assert.equal(q.add(o.owner, o.key, o.ts, seq), !dup)
              if (!dup) model.push({ owner: o.owner, key: o.key, ts: o.ts, seq })
              seq++
            } else if (o.t === 'remove') {
              const same = (m: (typeof model)[number]): boolean => m.owner === o.owner && m.key === o.key && m.ts === o.ts
              assert.equal(q.remove(o.owner, o.key, o.ts), model.find(same)?.seq ?? -1)
              model = model.filter((m) => !same(m))
            } else if (o.t === 'check') {
              assert.equal(q.size, model.length)
              assert.equal(q.peekTime(), earliest())
              for (const m of model) assert.equal(q.add(m.owner, m.key, m.ts, -1), false, 'every pending timer is found')
            } else {
              const due = model.filter((m) => m.ts <= o.ts).sort(firing)
              const expected = o.t === 'poll' ? due : due.slice(0, 1)
              const got: Array<[number, unknown, number, number]> = []
              for (let e = q.pollDue(o.ts); e !== undefined; e = o.t === 'poll' ? q.pollDue(o.ts) : undefined) got.push([e.owner, e.key, e.timestamp, e.seq])
              assert.deepEqual(got, expected.map((m) => [m.owner, m.key, m.ts, m.seq]))
              model = model.filter((m) => !expected.includes(m))
            }
            if (shape.peekEachOp) assert.equal(q.peekTime(), earliest())
          }
          assert.equal(q.size, model.length)
          for (let owner = 0; owner <= 1; owner++) {
            for (let key = 0; key <= shape.keys; key++) {
              const pending = model.filter((m) => m.owner === owner && m.key === key).sort(firing)
              assert.deepEqual(q.list(owner, key).map((e) => [e.timestamp, e.seq]), pending.map((m) => [m.ts, m.seq]))
            }
            assert.equal(q.countOwner(owner), model.filter((m) => m.owner === owner).length)
          }
          assert.deepEqual(q.entries().sort((a, b) => a.seq - b.seq).map((e) => [e.owner, e.key, e.timestamp, e.seq]), [...model].sort((a, b) => a.seq - b.seq).map((m) => [m.owner, m.key, m.ts, m.seq]))
        }),
        { numRuns: shape.runs, seed: 44 },
      )
    })
  }

  it('a burst with duplicates fires each timer once, in order', () => {
    // A window end that 300 keys register three times each, and pairs and triples of timers elsewhere.
    const q = new TimerQueue()
    const expected = new Map<string, { ts: number; seq: number; key: string }>()
    let seq = 0
    const register = (key: string, ts: number): void => {
      assert.equal(q.add(0, key, ts, seq), !expected.has(`${key}@${ts}`))
      if (!expected.has(`${key}@${ts}`)) expected.set(`${key}@${ts}`, { ts, seq, key })
      seq++
    }
    for (let round = 0; round < 3; round++) {
      for (let k = 0; k < 300; k++) register(`k${k}`, 1000)
      for (let k = 0; k < 200; k++) register(`k${k % 7}`, k % 50)
    }
    assert.equal(q.size, expected.size)
    const want = [...expected.values()].sort((a, b) => a.ts - b.ts || a.seq - b.seq)
    assert.deepEqual(drain(q, Infinity), want.map((e) => `${e.key}@${e.ts}/${e.seq}`))
    assert.equal(q.size, 0)
  })

  it('the same timers registered once per record stay one timer each', () => {
    const q = new TimerQueue()
    for (let i = 0; i < 100_000; i++) q.add(0, `k${i % 100}`, 3_600_000, i)
    assert.equal(q.size, 100)
    assert.deepEqual(drain(q, Infinity).slice(0, 2), ['k0@3600000/0', 'k1@3600000/1'])
  })

  it('while due timers are polled, a pending one registered again is a duplicate and a fired one is new', () => {
    const q = new TimerQueue()
    for (let i = 0; i < 10; i++) q.add(0, `k${i}`, i, i)
    assert.equal(q.pollDue(Infinity)?.key, 'k0')
    assert.equal(q.add(0, 'k5', 5, 100), false, 'k5@5 is pending')
    assert.equal(q.add(0, 'k0', 0, 101), true, 'k0@0 has fired')
    assert.deepEqual(drain(q, Infinity), ['k0@0/101', 'k1@1/1', 'k2@2/2', 'k3@3/3', 'k4@4/4', 'k5@5/5', 'k6@6/6', 'k7@7/7', 'k8@8/8', 'k9@9/9'])
  })

  it('finds every pending timer while the set grows and timers leave and ids are reused', () => {
    // Half of what is added leaves, oldest first, plus a spread of others: the hash set grows many times
    // and removals shift its entries back, while ids come back into use.
    const q = new TimerQueue()
    const timer = (i: number): [number, string, number] => [i % 3, `key-${i % 50_000}`, 1_000 * Math.floor(i / 50_000)]
    const pending = new Set<number>()
    let next = 0
    let oldest = 0
    for (let round = 0; round < 20; round++) {
      for (let i = 0; i < 20_000; i++) {
        assert.equal(q.add(...timer(next), next), true)
        pending.add(next++)
      }
      for (let i = 0; i < 10_000; i++, oldest++) {
        assert.equal(q.remove(...timer(oldest)), pending.has(oldest) ? oldest : -1)
        pending.delete(oldest)
      }
      for (let i = oldest + (round % 997); i < next; i += 997) {
        assert.equal(q.remove(...timer(i)), pending.has(i) ? i : -1)
        pending.delete(i)
      }
    }
    assert.equal(q.size, pending.size)
    for (let i = 0; i < next; i++) assert.equal(q.add(...timer(i), -1), !pending.has(i), `timer ${i}`)
  })

  it('keeps long-lived timers through a flow of short-lived ones', () => {
    const q = new TimerQueue()
    let seq = 0
    for (let i = 0; i < 10; i++) assert.equal(q.add(0, `long-${i}`, 1_000_000 + i, seq++), true)
    for (let round = 0; round < 200; round++) {
      for (let i = 0; i < 50; i++) q.add(0, `short-${i}`, round * 100 + i, seq++)
      assert.equal(drain(q, round * 100 + 99).length, 50)
    }
    for (let i = 0; i < 10; i++) assert.equal(q.add(0, `long-${i}`, 1_000_000 + i, seq++), false, `long-${i} is still pending`)
    for (let i = 0; i < 10; i++) assert.ok(q.remove(0, `long-${i}`, 1_000_000 + i) >= 0, `long-${i} is found`)
    assert.equal(q.size, 0)
  })

  for (const leave of ['fired', 'deleted'] as const) {
    it(`gives back the memory of a burst once its timers are ${leave}, and keeps the ones still pending`, () => {
      const q = new TimerQueue()
      let seq = 0
      for (let i = 0; i < 10; i++) q.add(1, `long-${i}`, 1_000_000 + i, seq++)
      for (let i = 0; i < 100_000; i++) q.add(0, `k${i}`, i, seq++)
      assert.ok(q.capacityNow >= 100_010)
      if (leave === 'fired') assert.equal(drain(q, 99_999).length, 100_000)
      else for (let i = 0; i < 100_000; i++) assert.equal(q.remove(0, `k${i}`, i), 10 + i)
      assert.equal(q.size, 10)
      assert.equal(q.capacityNow, 64, 'back to the first arrays')
      for (let i = 0; i < 10; i++) assert.equal(q.add(1, `long-${i}`, 1_000_000 + i, -1), false, `long-${i} is still pending`)
      assert.equal(q.remove(1, 'long-3', 1_000_003), 3)
      assert.deepEqual(q.list(1, 'long-4').map((e) => [e.timestamp, e.seq]), [[1_000_004, 4]])
      assert.equal(q.add(0, 'again', 5, seq), true, 'a new timer, earlier than the rest')
      const rest = [0, 1, 2, 4, 5, 6, 7, 8, 9].map((i) => `long-${i}@${1_000_000 + i}/${i}`)
      assert.deepEqual(drain(q, Infinity), [`again@5/${seq}`, ...rest])
    })
  }

  it('a large queue, all due, fires in order while timers are registered and deleted mid-way', () => {
    const q = new TimerQueue()
    const n = 50_000
    let seq = 0
    // Epoch-millisecond timestamps (above 2^32) with many ties, so order within a timestamp matters.
    const base = 1_767_225_600_000
    const at = (i: number): number => base + ((i * 7919) % 1000)
    for (let i = 0; i < n; i++) q.add(0, `k${i}`, at(i), seq++)
    const fired: Array<[number, number]> = []
    let e = q.pollDue(Infinity)
    for (let i = 0; e !== undefined; i++) {
      fired.push([e.timestamp, e.seq])
      if (i === 100) {
        // An earlier one and a tie registered while firing: the tie goes after those registered before it.
        q.add(0, 'late-early', e.timestamp, seq++)
        q.add(0, 'late-tie', base + 500, seq++)
        assert.ok(q.remove(0, `k${n - 1}`, at(n - 1)) >= 0)
        assert.equal(q.add(0, `k${n - 2}`, at(n - 2), seq++), false, 'still pending')
      }
      e = q.pollDue(Infinity)
    }
    assert.equal(fired.length, n + 2 - 1)
    for (let i = 1; i < fired.length; i++) {
      const [t0, s0] = fired[i - 1]!
      const [t1, s1] = fired[i]!
      assert.ok(t0 < t1 || (t0 === t1 && s0 < s1), `out of order at ${i}: ${t0}/${s0} then ${t1}/${s1}`)
    }
    assert.equal(q.size, 0)
  })
})
