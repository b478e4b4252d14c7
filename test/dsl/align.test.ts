import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { alignDown } from '../../src/windows/windows.js'

describe('alignDown (window start without a modulo)', () => {
  it('is the largest multiple of the step <= t, over the whole safe range (property, BigInt reference)', () => {
    const t = fc.oneof(fc.maxSafeNat(), fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 }), fc.nat(10_000))
    const step = fc.oneof(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 1, max: 2 ** 40 }), fc.constantFrom(60_000, 3_600_000, 86_400_000))
    fc.assert(
      fc.property(t, step, (time, size) => {
        const expected = Number(BigInt(time) - (BigInt(time) % BigInt(size)))
        assert.equal(alignDown(time, size), expected)
      }),
      { numRuns: 20_000 },
    )
  })

  it('near 2^53, with small and large steps', () => {
    for (let size = 2; size < 5000; size += 7) {
      for (const time of [Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER - 1, 2 ** 52 + 12_345, 2 ** 52 - 1]) {
        assert.equal(alignDown(time, size), Number(BigInt(time) - (BigInt(time) % BigInt(size))), `${time} / ${size}`)
      }
    }
    for (let e = 20; e <= 52; e++) {
      for (const size of [2 ** e - 1, 2 ** e, 2 ** e + 1]) {
        for (const time of [Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER - size + 1, Number.MAX_SAFE_INTEGER - 1]) {
          assert.equal(alignDown(time, size), Number(BigInt(time) - (BigInt(time) % BigInt(size))), `${time} / ${size}`)
        }
      }
    }
  })
})
