import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import {
  afterRestore,
  claimMark,
  commitHeaderValue,
  covers,
  epochOf,
  EPOCH_SIZE,
  formatCommitMark,
  MAX_EPOCH,
  NO_COMMIT,
  parseCommitMark,
  readCommitHeader,
  SEQ_MAX,
  seqOf,
} from '../../src/kafka/commit-numbers.js'
import type { CommitMark } from '../../src/kafka/commit-numbers.js'

/** Commit `seq` of owner epoch `epoch`. */
const num = (epoch: number, seq: number): number => epoch * EPOCH_SIZE + seq

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

  it('the header holds the number in six bytes, the last epoch’s last commit included', () => {
    for (const n of [0, 1, 255, 2 ** 32 + 7, 2 ** 48 - 1, num(MAX_EPOCH, SEQ_MAX)]) assert.equal(readCommitHeader(commitHeaderValue(n)), n)
    assert.equal(num(MAX_EPOCH, SEQ_MAX), 2 ** 48 - 1)
    assert.ok(Number.isSafeInteger(num(MAX_EPOCH, SEQ_MAX)))
    assert.equal(readCommitHeader(new Uint8Array(4)), undefined)
  })
})

describe('owner epochs', () => {
  it('a number is its epoch and its place in it; numbers of marks written before epochs are of epoch 0', () => {
    assert.equal(EPOCH_SIZE, 2 ** 28)
    assert.deepEqual([epochOf(0), seqOf(0)], [0, 0])
    assert.deepEqual([epochOf(0x10), seqOf(0x10)], [0, 0x10])
    assert.deepEqual([epochOf(num(1, 0)), seqOf(num(1, 0))], [1, 0])
    assert.deepEqual([epochOf(num(1, SEQ_MAX)), seqOf(num(1, SEQ_MAX))], [1, SEQ_MAX])
    assert.deepEqual([epochOf(num(MAX_EPOCH, 5)), seqOf(num(MAX_EPOCH, 5))], [MAX_EPOCH, 5])
    // A mark as the versions before epochs wrote it.
    const old = parseCommitMark('punctual.commit=16;void=3-4') as CommitMark
    assert.deepEqual(old, { n: 16, voids: [[3, 4]] })
    assert.equal(epochOf(old.n), 0)
    assert.deepEqual(claimMark(old), { n: num(1, 0), voids: [[3, 4], [17, num(1, 0) - 1]] })
  })

  it('a claim is the next epoch with no commit yet, everything past the previous mark void', () => {
    assert.deepEqual(claimMark(NO_COMMIT), { n: num(1, 0), voids: [[1, num(1, 0) - 1]] })
    assert.deepEqual(claimMark({ n: 0x10, voids: [] }), { n: num(1, 0), voids: [[0x11, num(1, 0) - 1]] })
    assert.deepEqual(claimMark({ n: num(3, 7), voids: [[num(2, 4), num(2, 4)]] }), { n: num(4, 0), voids: [[num(2, 4), num(2, 4)], [num(3, 8), num(4, 0) - 1]] })
    assert.deepEqual(claimMark({ n: num(3, SEQ_MAX), voids: [] }), { n: num(4, 0), voids: [] }, 'nothing of epoch 3 is past the mark: no void')
    assert.throws(() => claimMark({ n: num(MAX_EPOCH, 3), voids: [] }), /owner epochs are used up/)
    assert.equal(claimMark({ n: num(MAX_EPOCH - 1, 3), voids: [] }).n, num(MAX_EPOCH, 0))
  })

  it('claims in a row with no commit between keep one void range', () => {
    let mark = claimMark({ n: 0x10, voids: [[3, 4]] })
    for (let i = 0; i < 200; i++) mark = claimMark(mark)
    assert.deepEqual(mark, { n: num(201, 0), voids: [[3, 4], [0x11, num(201, 0) - 1]] })
    // A commit in between: the next claim's range starts past it.
    const next = claimMark({ n: mark.n + 1, voids: mark.voids })
    assert.deepEqual(next.voids.slice(-2), [[0x11, num(201, 0) - 1], [num(201, 2), num(202, 0) - 1]])
  })

  it('voids are trimmed to the newest 64, and a mark of the largest numbers stays within offset.metadata.max.bytes', () => {
    let mark: CommitMark = NO_COMMIT
    for (let i = 0; i < 100; i++) mark = claimMark({ n: mark.n + 1, voids: mark.voids })
    assert.equal(mark.voids.length, 64)
    assert.deepEqual(mark.voids.at(-1), [num(99, 2), num(100, 0) - 1])
    const largest: CommitMark = { n: 2 ** 48 - 1, voids: Array.from({ length: 64 }, () => [2 ** 48 - 2, 2 ** 48 - 2] as const) }
    assert.ok(formatCommitMark(largest).length < 4096, 'within Kafka’s offset.metadata.max.bytes')
  })

  it('the zombie sequence: what the previous owner writes past its mark stays void once the new owner’s commits pass it', () => {
    const previous = { n: 0x10, voids: [] }
    const claimed = claimMark(previous)
    // The new owner's commits: claimed.n + 1, + 2, ... (the backend numbers one past its mark).
    let mark: CommitMark = claimed
    for (let i = 0; i < 9; i++) mark = { n: mark.n + 1, voids: mark.voids }
    assert.equal(mark.n, num(1, 9))
    assert.equal(covers(mark, 0x10), true, 'the previous owner’s last complete commit')
    assert.equal(covers(mark, 0x11), false, 'the zombie’s next commit')
    assert.equal(covers(mark, 0x19), false)
    assert.equal(covers(mark, num(1, 0)), true, 'the claim’s own number: no commit carries it')
    assert.deepEqual([1, 5, 9].map((s) => covers(mark, num(1, s))), [true, true, true])
    assert.equal(covers(mark, num(1, 10)), false)
    // A restore that left the zombie's records out goes on from the claim: the next commit is the epoch's first.
    assert.equal(afterRestore(claimed, 0x11), claimed)
    assert.equal(afterRestore(claimed, 0), claimed)
  })

  it('a claim covers what the previous mark covered and nothing it did not, numbers the next epoch, and reads back (property)', () => {
    const epoch = fc.nat(MAX_EPOCH - 1)
    const seq = fc.nat(SEQ_MAX)
    const number = fc.tuple(epoch, seq).map(([e, s]) => num(e, s))
    const anyMark = fc.tuple(number, fc.array(fc.tuple(number, fc.nat(1000)), { maxLength: 10 })).map(([n, ranges]): CommitMark => ({
      n,
      voids: ranges.filter(([a]) => a <= n).map(([a, d]) => [a, Math.min(n, a + d)] as const),
    }))
    // Or one of an owner that claimed, then made 0 to 2 commits (no commit: the claims' ranges join).
    const claimedMark = fc.tuple(anyMark, fc.nat(2)).filter(([m]) => epochOf(m.n) < MAX_EPOCH - 1).map(([m, k]): CommitMark => {
      const c = claimMark(m)
      return { n: c.n + k, voids: c.voids }
    })
    const previousMark = fc.oneof(anyMark, claimedMark)
    fc.assert(
      fc.property(previousMark, fc.array(number, { maxLength: 20 }), fc.nat(1000), (previous, probes, commits) => {
        const claimed = claimMark(previous)
        assert.equal(epochOf(claimed.n), epochOf(previous.n) + 1)
        assert.equal(seqOf(claimed.n), 0)
        assert.deepEqual(parseCommitMark(formatCommitMark(claimed)), claimed)
        // The new owner's commits, then any number the previous owner (a zombie) may write.
        const later: CommitMark = { n: claimed.n + 1 + commits, voids: claimed.voids }
        const edges = [previous.n, previous.n + 1, claimed.n - 1, claimed.n + 1, ...previous.voids.flat()]
        // Numbers a commit carries (a claim's own, seq 0, none does).
        for (const n of [...probes, ...edges].filter((x) => seqOf(x) !== 0 && x < claimed.n)) {
          assert.equal(covers(claimed, n), covers(previous, n), `claim covers ${n} as the previous mark did`)
          assert.equal(covers(later, n), covers(previous, n), `later commits of the new owner do not cover ${n} past the previous mark`)
        }
        for (let s = 1; s <= Math.min(commits + 1, 5); s++) assert.equal(covers(later, claimed.n + s), true)
      }),
    )
  })
})
