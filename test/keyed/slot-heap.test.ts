import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { SlotHeap } from '../../src/keyed/slot-heap.js'

type Slot = { t: number; o: number; id: number }
const byFiring = (a: Slot, b: Slot): number => a.t - b.t || a.o - b.o

function head(h: SlotHeap): Slot {
  return { t: h.time[0] as number, o: h.word[2] as number, id: h.word[3] as number }
}

function slots(h: SlotHeap): Slot[] {
  return Array.from({ length: h.size }, (_, s) => ({ t: h.time[2 * s] as number, o: h.word[4 * s + 2] as number, id: h.word[4 * s + 3] as number }))
}

describe('SlotHeap (the timer queue heap)', () => {
  it('pops, drains and compacts in (timestamp, order) order, like a sorted list (property)', () => {
    // Appended slots take increasing orders, as the queue gives them; pushed ones any order (the queue
    // pushes its run back into the heap when it renumbers, and those orders are smaller), so ties on the
    // timestamp are decided by the order either way.
    type Op = { op: 'append'; t: number } | { op: 'push'; t: number; o: number } | { op: 'pop' } | { op: 'drain' } | { op: 'compact'; m: number } | { op: 'renumber' }
    const op = fc.oneof(
      fc.record({ op: fc.constant<'append'>('append'), t: fc.nat(30) }),
      fc.record({ op: fc.constant<'push'>('push'), t: fc.nat(30), o: fc.nat(1000) }),
      fc.constantFrom<Op>({ op: 'pop' }, { op: 'drain' }, { op: 'renumber' }),
      fc.record({ op: fc.constant<'compact'>('compact'), m: fc.integer({ min: 2, max: 4 }) }),
    ) as fc.Arbitrary<Op>
    fc.assert(
      fc.property(fc.array(op, { maxLength: 300 }), (ops) => {
        const h = new SlotHeap()
        let model: Slot[] = []
        let order = 0
        let id = 0
        for (const o of ops) {
          if (o.op === 'append') {
            const s = { t: o.t, o: order++, id: id++ }
            h.append(s.t, s.o, s.id)
            model.push(s)
          } else if (o.op === 'push') {
            const s = { t: o.t, o: o.o, id: id++ }
            h.ensureHeap()
            h.push(s.t, s.o, s.id)
            model.push(s)
          } else if (o.op === 'pop') {
            if (model.length === 0) continue
            model.sort(byFiring)
            h.ensureHeap()
            // Slots equal in timestamp and order may come in either order.
            const top = head(h)
            assert.deepEqual([top.t, top.o], [model[0]!.t, model[0]!.o])
            h.removeHead()
            const at = model.findIndex((s) => s.id === top.id)
            assert.ok(at >= 0 && byFiring(model[at]!, model[0]!) === 0)
            model.splice(at, 1)
          } else if (o.op === 'drain') {
            const n = h.size
            const sorted = h.drainSorted()
            assert.ok(sorted !== undefined, 'integer timestamps are radix-sortable')
            const t = new Float64Array(sorted)
            const w = new Uint32Array(sorted)
            const got = Array.from({ length: n }, (_, s) => ({ t: t[2 * s] as number, o: w[4 * s + 2] as number, id: w[4 * s + 3] as number }))
            const key = (s: Slot): number[] => [s.t, s.o]
            assert.deepEqual(got.map(key), [...model].sort(byFiring).map(key))
            assert.deepEqual(got.map((s) => s.id).sort((a, b) => a - b), model.map((s) => s.id).sort((a, b) => a - b))
            assert.equal(h.size, 0)
            model = []
          } else if (o.op === 'compact') {
            h.compact((slotId) => slotId % o.m === 0)
            model = model.filter((s) => s.id % o.m !== 0)
            const byId = (a: Slot, b: Slot): number => a.id - b.id
            assert.deepEqual(slots(h).sort(byId), [...model].sort(byId))
          } else {
            // Orders become ranks 0..n-1 in firing order; later ones continue from n. (Slots equal in
            // timestamp and order get their ranks in either order: the model takes the heap's.)
            order = h.renumber()
            assert.equal(order, model.length)
            const rankOf = new Map(slots(h).map((s) => [s.id, s.o]))
            const before = [...model].sort(byFiring)
            for (const s of model) s.o = rankOf.get(s.id)!
            const after = [...model].sort(byFiring)
            assert.deepEqual(after.map((s) => s.o), after.map((_, rank) => rank))
            for (let i = 1; i < before.length; i++) if (byFiring(before[i - 1]!, before[i]!) < 0) assert.ok(before[i - 1]!.o < before[i]!.o, 'renumbering keeps the order')
          }
          assert.equal(h.size, model.length)
          assert.equal(h.earliest(), model.length === 0 ? Infinity : Math.min(...model.map((s) => s.t)))
        }
      }),
      { numRuns: 500 },
    )
  })

  it('will not drain timestamps the radix sort does not take, and pops them instead', () => {
    const h = new SlotHeap()
    h.append(2.5, 0, 0)
    h.append(1, 1, 1)
    assert.equal(h.allDueBy(3), true)
    assert.equal(h.drainSorted(), undefined)
    assert.equal(h.allDueBy(3), false, 'not tried again')
    h.ensureHeap()
    assert.deepEqual(head(h), { t: 1, o: 1, id: 1 })
  })
})

describe('SlotHeap growth', () => {
  it('keeps every slot through its growths: 200,000 appends and pushes, popped in order', () => {
    const h = new SlotHeap()
    let seed = 7
    const random = (): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % 1_000_000)
    const model: Slot[] = []
    for (let i = 0; i < 200_000; i++) {
      const s = { t: random(), o: i, id: i }
      if (i % 2 === 0) h.append(s.t, s.o, s.id)
      else {
        h.ensureHeap()
        h.push(s.t, s.o, s.id)
      }
      model.push(s)
    }
    model.sort(byFiring)
    h.ensureHeap()
    for (const expected of model) {
      assert.deepEqual(head(h), expected)
      h.removeHead()
    }
    assert.equal(h.size, 0)
  })
})
