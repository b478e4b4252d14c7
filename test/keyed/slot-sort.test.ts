import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { radixSortable, sortSlots } from '../../src/keyed/slot-sort.js'

/** Writes (time, order, id) slots in TimerQueue's layout: 16 bytes each. */
function slotsOf(slots: ReadonlyArray<readonly [number, number, number]>): ArrayBuffer {
  const buffer = new ArrayBuffer(slots.length * 16)
  const time = new Float64Array(buffer)
  const word = new Uint32Array(buffer)
  slots.forEach(([t, o, id], s) => {
    time[2 * s] = t
    word[4 * s + 2] = o
    word[4 * s + 3] = id
  })
  return buffer
}

function read(buffer: ArrayBuffer, n: number): Array<[number, number, number]> {
  const time = new Float64Array(buffer)
  const word = new Uint32Array(buffer)
  return Array.from({ length: n }, (_, s) => [time[2 * s] as number, word[4 * s + 2] as number, word[4 * s + 3] as number])
}

const byTimeThenOrder = (a: readonly [number, number, number], b: readonly [number, number, number]): number => a[0] - b[0] || a[1] - b[1]

describe('sortSlots (radix sort of timer slots)', () => {
  it('sorts by timestamp, then order, across every digit (property)', () => {
    // Timestamps over the whole safe range and near today's epoch milliseconds (above 2^32, so the high
    // digits are sorted too), with ties; orders over the whole 32 bits.
    const time = fc.oneof(fc.nat(20), fc.integer({ min: 1_700_000_000_000, max: 1_700_000_000_050 }), fc.maxSafeNat())
    const order = fc.oneof(fc.nat(10), fc.integer({ min: 0, max: 0xffffffff }))
    fc.assert(
      fc.property(fc.uniqueArray(fc.tuple(time, order), { selector: (s) => `${s[0]}/${s[1]}`, maxLength: 300 }), (pairs) => {
        const slots = pairs.map(([t, o], id) => [t, o, id] as const)
        const buffer = slotsOf(slots)
        const sorted = sortSlots(buffer, new ArrayBuffer(buffer.byteLength), slots.length)
        assert.deepEqual(read(sorted, slots.length), [...slots].sort(byTimeThenOrder))
      }),
      { numRuns: 500 },
    )
  })

  it('sorts 100,000 slots with many ties', () => {
    const slots = Array.from({ length: 100_000 }, (_, i) => [1_750_000_000_000 + ((i * 7919) % 5000), (i * 104_729) % 100_000, i] as const)
    const buffer = slotsOf(slots)
    const sorted = sortSlots(buffer, new ArrayBuffer(buffer.byteLength), slots.length)
    assert.deepEqual(read(sorted, slots.length), [...slots].sort(byTimeThenOrder))
  })

  it('radixSortable: only non-negative safe integer timestamps', () => {
    assert.equal(radixSortable(new Float64Array([0, 0, 5, 0, Number.MAX_SAFE_INTEGER, 0]), 3), true)
    assert.equal(radixSortable(new Float64Array([0, 0, 1.5, 0]), 2), false)
    assert.equal(radixSortable(new Float64Array([-1, 0]), 1), false)
    assert.equal(radixSortable(new Float64Array([Infinity, 0]), 1), false)
  })
})
