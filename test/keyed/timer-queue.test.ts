import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { TimerQueue } from '../../src/keyed/timer-queue.js'

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
    assert.equal(q.remove(0, 'a', 15), -1)
    assert.ok(q.remove(0, 'a', 10) >= 0)
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

  // The small options reach what large queues do: renumbering orders, sorting the heap into a run (and
  // registering while the run is drained), compacting dead slots, full batches of held registrations,
  // sampling an unindexed heap for duplicates. Without a listener a queue that empties stops indexing
  // (duplicates are then dropped when the heap is indexed or sorted into a run); with one it never does.
  const variants = [
    { name: 'defaults', options: {} },
    { name: 'renumbering at order 7', options: { maxOrder: 7 } },
    { name: 'sorted runs from 2 timers', options: { drainMin: 2 } },
    { name: 'batches of 3', options: { batch: 3 } },
    { name: 'duplicates sampled from 4 slots', options: { duplicateCheckMin: 4, drainMin: 3 } },
    { name: 'all paths at once', options: { maxOrder: 5, drainMin: 1, compactMin: 1, batch: 2, duplicateCheckMin: 2 } },
  ]
  for (const { name, options } of variants) for (const listening of [true, false]) {
    it(`matches a naive set for random add/enqueue/remove/poll sequences (property, ${name}, ${listening ? 'with' : 'no'} listener)`, () => {
      // Two owners: a timer's owner is kept apart from its record, and must come back with it.
      type Op = { t: 'add' | 'enqueue' | 'remove'; owner: number; key: number; ts: number } | { t: 'poll' | 'pollOne'; ts: number } | { t: 'peek' } | { t: 'check' }
      const op = fc.oneof(
        fc.record({ t: fc.constantFrom<'add' | 'enqueue' | 'remove'>('add', 'enqueue', 'enqueue', 'remove'), owner: fc.nat(1), key: fc.nat(5), ts: fc.nat(20) }),
        fc.record({ t: fc.constantFrom<'poll' | 'pollOne'>('poll', 'pollOne'), ts: fc.nat(20) }),
        fc.constantFrom<Op>({ t: 'peek' }, { t: 'check' }),
      ) as fc.Arbitrary<Op>
      fc.assert(
        fc.property(fc.array(op, { maxLength: 80 }), (ops) => {
          const q = new TimerQueue(options)
          // What the listener hears must be exactly the enqueued registrations that were not duplicates, in order.
          const heard: Array<[number, unknown, number, number]> = []
          const accepted: Array<[number, unknown, number, number]> = []
          if (listening) q.listen((owner, key, ts, s) => void heard.push([owner, key, ts, s]))
          let model: Array<{ owner: number; key: number; ts: number; seq: number }> = []
          let seq = 0
          const firing = (a: { ts: number; seq: number }, b: { ts: number; seq: number }): number => a.ts - b.ts || a.seq - b.seq
          const earliest = (): number => (model.length === 0 ? Infinity : Math.min(...model.map((m) => m.ts)))
          for (const o of ops) {
            if (o.t === 'add' || o.t === 'enqueue') {
              const dup = model.some((m) => m.owner === o.owner && m.key === o.key && m.ts === o.ts)
              if (o.t === 'add') assert.equal(q.add(o.owner, o.key, o.ts, seq), !dup)
              else {
                q.enqueue(o.owner, o.key, o.ts, seq)
                if (!dup && listening) accepted.push([o.owner, o.key, o.ts, seq])
              }
              if (!dup) model.push({ owner: o.owner, key: o.key, ts: o.ts, seq })
              seq++
            } else if (o.t === 'remove') {
              const same = (m: (typeof model)[number]): boolean => m.owner === o.owner && m.key === o.key && m.ts === o.ts
              assert.equal(q.remove(o.owner, o.key, o.ts) >= 0, model.some(same))
              model = model.filter((m) => !same(m))
            } else if (o.t === 'peek') {
              // Counts held registrations without indexing them.
              assert.equal(q.peekTime(), earliest())
            } else if (o.t === 'check') {
              assert.equal(q.size, model.length)
              assert.deepEqual(heard, accepted)
            } else {
              const due = model.filter((m) => m.ts <= o.ts).sort(firing)
              const expected = o.t === 'poll' ? due : due.slice(0, 1)
              const got: Array<[number, unknown, number, number]> = []
              for (let e = q.pollDue(o.ts); e !== undefined; e = o.t === 'poll' ? q.pollDue(o.ts) : undefined) got.push([e.owner, e.key, e.timestamp, e.seq])
              assert.deepEqual(got, expected.map((m) => [m.owner, m.key, m.ts, m.seq]))
              model = model.filter((m) => !expected.includes(m))
            }
            assert.equal(q.peekTime(), earliest())
          }
          assert.equal(q.size, model.length)
          assert.deepEqual(heard, accepted)
          for (let owner = 0; owner <= 1; owner++) {
            for (let key = 0; key <= 5; key++) {
              const pending = model.filter((m) => m.owner === owner && m.key === key).sort(firing)
              assert.deepEqual(q.list(owner, key).map((e) => [e.timestamp, e.seq]), pending.map((m) => [m.ts, m.seq]))
            }
            assert.equal(q.countOwner(owner), model.filter((m) => m.owner === owner).length)
          }
          assert.equal(q.entries().length, model.length)
        }),
        { numRuns: 1000 },
      )
    })
  }

  it('unindexed registrations: a burst with duplicates, sorted into a run, fires each timer once, in order', () => {
    // Small and large groups of one timestamp: a window end that 300 keys register three times each, and
    // pairs and triples elsewhere. No listener, no delete: the burst is never indexed.
    const q = new TimerQueue({ drainMin: 2 })
    const expected = new Map<string, { ts: number; seq: number; key: string }>()
    let seq = 0
    const register = (key: string, ts: number): void => {
      q.enqueue(0, key, ts, seq)
      if (!expected.has(`${key}@${ts}`)) expected.set(`${key}@${ts}`, { ts, seq, key })
      seq++
    }
    for (let round = 0; round < 3; round++) {
      for (let k = 0; k < 300; k++) register(`k${k}`, 1000)
      for (let k = 0; k < 200; k++) register(`k${k % 7}`, k % 50)
    }
    assert.ok(q.slots > expected.size, 'the duplicates are held unindexed')
    const fired: Array<{ ts: number; seq: number; key: string }> = []
    for (let e = q.pollDue(Infinity); e !== undefined; e = q.pollDue(Infinity)) fired.push({ ts: e.timestamp, seq: e.seq, key: e.key as string })
    const want = [...expected.values()].sort((a, b) => a.ts - b.ts || a.seq - b.seq)
    assert.deepEqual(fired, want)
    assert.equal(q.slots, 0)
  })

  it('unindexed registrations: the same timers registered again and again get indexed, so their slots stay few', () => {
    // Once per record, 100 keys register the end of their window: without the sampling the heap would
    // hold a slot per registration.
    const q = new TimerQueue({ duplicateCheckMin: 1024 })
    for (let i = 0; i < 100_000; i++) q.enqueue(0, `k${i % 100}`, 3_600_000, i)
    assert.ok(q.slots <= 2048, `${q.slots} slots for 100 timers`)
    assert.equal(q.size, 100)
    // Distinct timers are never taken for duplicates: they stay unindexed.
    const d = new TimerQueue({ duplicateCheckMin: 1024, drainMin: 2 })
    for (let i = 0; i < 100_000; i++) d.enqueue(0, `k${i % 100}`, i, i)
    assert.equal(d.slots, 100_000)
    let fired = 0
    while (d.pollDue(Infinity) !== undefined) fired++
    assert.equal(fired, 100_000)
  })

  it('unindexed registrations: a duplicate of a timer in the run is dropped when the heap is indexed', () => {
    const q = new TimerQueue({ drainMin: 2 })
    for (let i = 0; i < 10; i++) q.enqueue(0, `k${i}`, i, i)
    const first = q.pollDue(Infinity)
    assert.equal(first?.key, 'k0')
    // k5@5 is pending in the run: registering it again while the run is fired is a duplicate.
    q.enqueue(0, 'k5', 5, 100)
    q.enqueue(0, 'k0', 0, 101) // k0@0 has fired: a new timer
    const rest: string[] = []
    for (let e = q.pollDue(Infinity); e !== undefined; e = q.pollDue(Infinity)) rest.push(`${e.key as string}@${e.timestamp}/${e.seq}`)
    assert.deepEqual(rest, ['k0@0/101', 'k1@1/1', 'k2@2/2', 'k3@3/3', 'k4@4/4', 'k5@5/5', 'k6@6/6', 'k7@7/7', 'k8@8/8', 'k9@9/9'])
  })

  it('the index keeps every pending timer through rebuilds among stale entries', () => {
    // Long-lived timers take the first ids; a flow of short-lived ones fills the index with stale
    // entries (of fired timers) and makes it rebuild many times while the long-lived ones stay.
    const q = new TimerQueue()
    let seq = 0
    for (let i = 0; i < 10; i++) assert.equal(q.add(0, `long-${i}`, 1_000_000 + i, seq++), true)
    for (let round = 0; round < 200; round++) {
      for (let i = 0; i < 50; i++) q.add(0, `short-${i}`, round * 100 + i, seq++)
      let fired = 0
      while (q.pollDue(round * 100 + 99) !== undefined) fired++
      assert.equal(fired, 50)
    }
    for (let i = 0; i < 10; i++) assert.equal(q.add(0, `long-${i}`, 1_000_000 + i, seq++), false, `long-${i} is still pending`)
    for (let i = 0; i < 10; i++) assert.ok(q.remove(0, `long-${i}`, 1_000_000 + i) >= 0, `long-${i} is found`)
    assert.equal(q.size, 0)
  })

  it('a large heap, all due, fires in order while timers are registered and deleted mid-way', () => {
    const q = new TimerQueue()
    const n = 50_000
    let seq = 0
    // Timestamps with many ties, so order within a timestamp matters.
    for (let i = 0; i < n; i++) q.add(0, `k${i}`, (i * 7919) % 1000, seq++)
    const fired: Array<[number, number]> = []
    let e = q.pollDue(Infinity)
    for (let i = 0; e !== undefined; i++) {
      fired.push([e.timestamp, e.seq])
      if (i === 100) {
        // Registered while the run is being fired: an earlier one goes first, a tie goes after the run's.
        q.add(0, 'late-early', e.timestamp, seq++)
        q.add(0, 'late-tie', 500, seq++)
        assert.ok(q.remove(0, `k${n - 1}`, ((n - 1) * 7919) % 1000) >= 0)
        assert.equal(q.add(0, `k${n - 2}`, ((n - 2) * 7919) % 1000, seq++), false, 'still pending, in the run')
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
