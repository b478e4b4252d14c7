import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { timerHash, timerHashes } from '../../src/keyed/timer-index.js'
import type { StoreKey } from '../../src/processor/api.js'
import { HASH_SEED, mixString, mixStrings2 } from '../../src/util/hash.js'

// A flush hashes its batch two keys at a time; lookups (remove, a later duplicate) hash one key alone.
// Both must give the same number, or a registered timer could not be found again.
describe('timer hashes of a batch', () => {
  const key: fc.Arbitrary<StoreKey> = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 13 }),
    fc.constantFrom('', 'a', 'ab', 'abc'),
    fc.integer(),
    fc.double({ noNaN: true }),
    fc.boolean(),
    fc.bigInt(),
  )

  it('two at a time equals one at a time, for any mix of key types and lengths (property)', () => {
    const entry = fc.record({ owner: fc.nat(1000), key, ts: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }) })
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 40 }), (entries) => {
        const n = entries.length
        const owner = Int32Array.from(entries, (e) => e.owner)
        const time = Float64Array.from(entries, (e) => e.ts)
        const out = new Int32Array(n)
        timerHashes(owner, entries.map((e) => e.key), time, n, out)
        assert.deepEqual([...out], entries.map((e) => timerHash(e.owner, e.key, e.ts)))
      }),
      { numRuns: 2000 },
    )
  })

  it('mixing two strings side by side equals mixing each alone', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 20 }), fc.string({ unit: 'binary', maxLength: 20 }), (a, b) => {
        const out = new Int32Array(2)
        mixStrings2(HASH_SEED, a, HASH_SEED ^ 1, b, out)
        assert.deepEqual([...out], [mixString(HASH_SEED, a) | 0, mixString(HASH_SEED ^ 1, b) | 0])
      }),
      { numRuns: 2000 },
    )
  })
})
