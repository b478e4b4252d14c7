import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../../helpers/fc.js'
import { PartitionLog } from '../../../src/embedded/log/partition-log.js'
import type { DiskReader } from '../../../src/embedded/log/partition-log.js'
import type { LogRecord } from '../../../src/processor/record-io.js'

const rec = (n: number): LogRecord => ({ key: `k${n}`, keySerde: undefined, value: n % 3 === 0 ? null : n * 1.5, valueSerde: undefined, timestamp: 1_767_225_600_000 + n, headers: [] })

describe('PartitionLog (records held in chunks of columns)', () => {
  it('reads, slices and truncates like an array of records (property)', () => {
    type Op = { t: 'append'; n: number } | { t: 'truncate'; at: number } | { t: 'read'; at: number }
    const op = fc.oneof(
      fc.record({ t: fc.constant<'append'>('append'), n: fc.integer({ min: 1, max: 3000 }) }),
      fc.record({ t: fc.constant<'truncate'>('truncate'), at: fc.nat(20_000) }),
      fc.record({ t: fc.constant<'read'>('read'), at: fc.nat(20_000) }),
    ) as fc.Arbitrary<Op>
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const log = new PartitionLog('t', 0)
        const model: LogRecord[] = []
        let start = 0
        const into = { ...rec(0) }
        for (const o of ops) {
          if (o.t === 'append') {
            for (let i = 0; i < o.n; i++) {
              const r = rec(model.length)
              assert.equal(i % 2 === 0 ? log.append(r) : log.appendFields(r.key, r.keySerde, r.value, r.valueSerde, r.timestamp, r.headers), model.length)
              model.push(r)
            }
          } else if (o.t === 'truncate') {
            log.truncateBefore(o.at)
            // Whole chunks are released, never past `at`, never the chunk being appended to.
            const s = log.startOffset()
            assert.ok(s >= start && s <= Math.max(start, Math.min(o.at, model.length)))
            start = s
          } else {
            const r = log.get(o.at)
            const expected = o.at >= start && o.at < model.length ? model[o.at] : undefined
            assert.deepEqual(r, expected)
            assert.equal(log.read(o.at, into), expected !== undefined)
            if (expected !== undefined) assert.deepEqual(into, expected)
          }
          assert.equal(log.endOffset(), model.length)
        }
        assert.deepEqual(log.slice(start, model.length), model.slice(start))
        assert.deepEqual(log.slice(start + 1, start + 5), model.slice(start + 1, start + 5))
      }),
      { numRuns: 300 },
    )
  })

  it('a large backlog goes into few chunks; reading in order after truncation still finds every record', () => {
    const log = new PartitionLog('t', 0)
    for (let i = 0; i < 200_000; i++) log.append(rec(i))
    log.truncateBefore(150_000)
    assert.ok(log.startOffset() <= 150_000 && log.startOffset() > 0)
    for (let i = log.startOffset(); i < 200_000; i += 997) assert.equal(log.get(i)?.timestamp, rec(i).timestamp)
    assert.equal(log.get(log.startOffset() - 1), undefined)
  })

  it('restore puts the loaded records under the appended ones, at the loaded offsets', () => {
    const log = new PartitionLog('t', 0)
    log.append(rec(100)) // appended before the restore (nobody has read it)
    const older: DiskReader = { get: (_t, _p, offset) => (offset >= 10 && offset < 50 ? rec(offset) : undefined) }
    log.restore(10, 60, 50, [rec(50), rec(51)], older)
    assert.equal(log.startOffset(), 10)
    assert.equal(log.endOffset(), 53)
    assert.deepEqual(log.get(12), rec(12), 'from disk')
    assert.deepEqual(log.get(51), rec(51), 'loaded')
    assert.deepEqual(log.get(52), rec(100), 'appended before the restore, now after the loaded records')
    assert.deepEqual(log.slice(50, 53), [rec(50), rec(51), rec(100)])
  })
})
