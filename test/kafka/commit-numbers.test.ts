import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { afterRestore, commitHeaderValue, covers, formatCommitMark, NO_COMMIT, parseCommitMark, readCommitHeader } from '../../src/kafka/commit-numbers.js'

describe('at-least-once commit numbers', () => {
  it('a mark reads back as written (property); anything else is no mark', () => {
    const range = fc.tuple(fc.nat(1e12), fc.nat(1e6)).map(([a, d]) => [a, a + d] as [number, number])
    fc.assert(
      fc.property(fc.nat(2 ** 48), fc.array(range, { maxLength: 5 }), (n, voids) => {
        assert.deepEqual(parseCommitMark(formatCommitMark({ n, voids })), { n, voids })
      }),
    )
    assert.equal(formatCommitMark({ n: 12, voids: [[3, 4], [8, 8]] }), 'punctual.commit=12;void=3-4,8-8')
    for (const bad of [undefined, '', 'punctual.commit=', 'punctual.commit=x', 'punctual.commit=-1', 'punctual.commit=5;void=4-3', 'punctual.commit=5;void=a-b', 'other']) {
      assert.equal(parseCommitMark(bad), undefined, String(bad))
    }
  })

  it('covers numbers up to its own, outside its void ranges', () => {
    const mark = { n: 10, voids: [[3, 4]] as const }
    assert.deepEqual([1, 2, 3, 4, 5, 10, 11].map((n) => covers(mark, n)), [true, true, false, false, true, true, false])
    assert.equal(covers(NO_COMMIT, 1), false, 'before a first complete commit, nothing numbered is')
  })

  it('after a restore that left numbers out, goes on past them and keeps them void, the newest ranges kept', () => {
    assert.deepEqual(afterRestore({ n: 5, voids: [] }, 0), { n: 5, voids: [] }, 'nothing left out')
    assert.deepEqual(afterRestore({ n: 5, voids: [] }, 6), { n: 6, voids: [[6, 6]] })
    let mark = { n: 0, voids: [] as ReadonlyArray<readonly [number, number]> }
    for (let i = 0; i < 100; i++) mark = afterRestore({ n: mark.n + 1, voids: mark.voids }, mark.n + 2)
    assert.equal(mark.voids.length, 64)
    assert.deepEqual(mark.voids.at(-1), [mark.n, mark.n])
    assert.ok(formatCommitMark(mark).length < 4096, 'within Kafka’s offset.metadata.max.bytes')
  })

  it('the header holds the number in six bytes', () => {
    for (const n of [0, 1, 255, 2 ** 32 + 7, 2 ** 48 - 1]) assert.equal(readCommitHeader(commitHeaderValue(n)), n)
    assert.equal(readCommitHeader(new Uint8Array(4)), undefined)
  })
})
