import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { FetchedPartition } from '../../src/kafka/fetched-partition.js'
import type { FetchedMessage } from '../../src/kafka/fetched-partition.js'
import type { MutableLogRecord } from '../../src/processor/record-io.js'

function record(): MutableLogRecord {
  return { key: null, keySerde: undefined, value: null, valueSerde: undefined, timestamp: 0, headers: [] }
}

function message(offset: number): FetchedMessage {
  return { offset, key: Buffer.from(`k${offset}`), value: Buffer.from(`v${offset}`), timestamp: 1000 + offset }
}

describe('a fetched partition, as a task reads it', () => {
  it('reads every fetched record once, in offset order, across batches and offset gaps (property)', () => {
    // Gaps between offsets (transaction markers, aborted records), fetched in batches of any size.
    const fetches = fc.array(fc.array(fc.integer({ min: 1, max: 3 }), { maxLength: 30 }), { maxLength: 60 })
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 50 }), fetches, (start, batches) => {
        const p = new FetchedPartition('t', 0, start)
        const fetched: number[] = []
        const read: number[] = []
        const into = record()
        let position = p.startOffset()
        assert.equal(position, start)
        let next = start
        for (const gaps of batches) {
          const batch = gaps.map((gap) => message((next += gap) - 1))
          p.append(batch)
          fetched.push(...batch.map((m) => m.offset))
          // A task reads from its position to the end held now, one offset at a time.
          for (const end = p.endOffset(); position < end; position++) {
            if (!p.read(position, into)) continue
            assert.equal(Buffer.from(into.value as Uint8Array).toString(), `v${position}`)
            assert.equal(into.timestamp, 1000 + position)
            assert.equal(into.keySerde, undefined, 'bytes: the source serdes read them')
            read.push(position)
          }
        }
        assert.deepEqual(read, fetched)
        assert.equal(p.endOffset(), next)
      }),
    )
  })

  it('is caught up once fetched to the end the consumer reached, which may lie past its last record (transaction markers)', () => {
    const p = new FetchedPartition('t', 0, 0)
    assert.equal(p.caughtUp(), false, 'not until told')
    p.append([message(0), message(1), message(2)])
    // The partition-EOF event of a fetch that found only a commit marker after offset 2.
    p.reachedEnd(4)
    assert.equal(p.caughtUp(), true)
    p.append([message(4)])
    assert.equal(p.caughtUp(), false, 'a record past that end: the end is further now')
    p.reachedEnd(3)
    assert.equal(p.caughtUp(), false, 'an older end changes nothing')
    p.reachedEnd(5)
    assert.equal(p.caughtUp(), true)
  })

  it('is caught up when the high watermark of the last fetch is no further than its records', () => {
    let high: number | undefined
    const p = new FetchedPartition('t', 0, 0, () => high)
    p.append([message(0), message(1)])
    assert.equal(p.caughtUp(), false, 'no watermark known')
    high = 5
    assert.equal(p.caughtUp(), false, 'records 2 to 4 wait on the broker')
    high = 2
    assert.equal(p.caughtUp(), true)
    // A later fetch brings a record and tells of another.
    p.append([message(2)])
    high = 4
    assert.equal(p.caughtUp(), false)
    high = 3
    assert.equal(p.caughtUp(), true)
  })

  it('refuses a batch that goes back, and starts at the position with nothing fetched', () => {
    const p = new FetchedPartition('t', 3, 10)
    assert.equal(p.startOffset(), 10)
    assert.equal(p.endOffset(), 10)
    p.append([message(10), message(12)])
    assert.equal(p.size, 2)
    assert.throws(() => p.append([message(11)]), /t-3: offset 11 fetched after 12/)
    assert.equal(p.read(11, record()), false, 'a gap')
    assert.equal(p.read(12, record()), true)
  })

  it('lets go of what was read as it goes (a long partition)', () => {
    const p = new FetchedPartition('t', 0, 0)
    p.append(Array.from({ length: 5000 }, (_, i) => message(i)))
    const into = record()
    for (let offset = 0; offset < 5000; offset++) {
      assert.equal(p.read(offset, into), true)
      assert.equal(into.timestamp, 1000 + offset)
    }
    assert.ok(p.size < 2000, `read records are released, ${p.size} held`)
    assert.equal(p.startOffset(), 4999)
  })
})
