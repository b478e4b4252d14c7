import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { SpillIndex } from '../../src/suppress/spill-index.js'

/** The order times the index offers for `hash`, sorted (its candidates, in whatever slot order). */
function candidates(index: SpillIndex, hash: number): number[] {
  const out: number[] = []
  for (let slot = index.find(hash, index.home(hash)); slot >= 0; slot = index.find(hash, slot + 1)) out.push(index.orderTimeAt(slot))
  return out.sort((a, b) => a - b)
}

type Op = { add: boolean; hash: number; time: number }

describe('SpillIndex', () => {
  it('is a multiset of (hash, order time) pairs: adds, removes, growth and shrinking against a model (property)', () => {
    // Few distinct hashes and times: long probe runs, equal pairs, wrap-around at the table's end (the
    // top bits pick the home, so hashes near 2^32 sit at the end), growth past 768 and shrinking back.
    const hash = fc.constantFrom(0, 1, -1, 0x7fffffff, -0x80000000, 0x40000000, 12345, -2)
    const op = fc.record({ add: fc.boolean(), hash, time: fc.integer({ min: 0, max: 5 }) })
    const bulk = fc.record({ add: fc.boolean(), hash: fc.integer(), time: fc.integer({ min: 0, max: 1000 }) })
    fc.assert(
      fc.property(fc.array(fc.oneof(op, bulk), { maxLength: 3000 }), (ops: Op[]) => {
        const index = new SpillIndex()
        const model = new Map<number, number[]>()
        for (const o of ops) {
          const times = model.get(o.hash) ?? []
          if (o.add) {
            index.add(o.hash, o.time)
            model.set(o.hash, [...times, o.time].sort((a, b) => a - b))
          } else {
            const at = times.indexOf(o.time)
            assert.equal(index.remove(o.hash, o.time), at >= 0)
            if (at >= 0) model.set(o.hash, times.filter((_, i) => i !== at))
          }
          assert.deepEqual(candidates(index, o.hash), model.get(o.hash) ?? [])
        }
        let size = 0
        for (const [h, times] of model) {
          assert.deepEqual(candidates(index, h), times)
          size += times.length
        }
        assert.equal(index.size, size)
      }),
      { numRuns: 200 },
    )
  })

  it('shrinks when most entries are gone', () => {
    const index = new SpillIndex()
    const initial = index.bytes
    for (let i = 0; i < 100_000; i++) index.add(Math.imul(i, 0x9e3779b1), i)
    const grown = index.bytes
    assert.ok(grown >= (100_000 * 12 * 4) / 3, `${grown} bytes for 100 k entries`)
    for (let i = 0; i < 100_000; i++) assert.equal(index.remove(Math.imul(i, 0x9e3779b1), i), true)
    assert.equal(index.size, 0)
    assert.equal(index.bytes, initial)
  })
})
