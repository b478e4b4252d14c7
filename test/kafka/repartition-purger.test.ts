import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { setImmediate as tick } from 'node:timers/promises'
import { RepartitionPurger } from '../../src/kafka/repartition-purger.js'
import { silentLogger } from '../../src/index.js'
import type { Logger } from '../../src/index.js'
import { ManualClock } from '../../src/testing/index.js'

interface Deleted {
  topic: string
  partitions: Array<{ partition: number; offset: number }>
}

/** A purger over a fake admin client whose requests settle when the test says. */
function setUp(intervalMs: number, logger: Logger = silentLogger) {
  const clock = new ManualClock(0)
  const requests: Array<Deleted & { settle: (err?: Error) => void }> = []
  const purger = new RepartitionPurger(
    (t) => t.endsWith('-repartition'),
    (topic, partitions) => new Promise<void>((resolve, reject) => requests.push({ topic, partitions: [...partitions], settle: (err) => (err ? reject(err) : resolve()) })),
    clock,
    intervalMs,
    logger,
  )
  const sent = (): Deleted[] => requests.map(({ topic, partitions }) => ({ topic, partitions }))
  return { clock, purger, requests, sent }
}

describe('RepartitionPurger: what commits passed is deleted from the repartition topics', () => {
  it('deletes up to the latest committed offset of each repartition partition, at most once per interval, and nothing of other topics', () => {
    const { clock, purger, sent } = setUp(1000)
    purger.committed([
      { topic: 'app-by-key-repartition', partition: 0, offset: 10 },
      { topic: 'input', partition: 0, offset: 99 },
    ])
    assert.deepEqual(sent(), [], 'not before the interval is up')
    clock.advance(999)
    purger.committed([{ topic: 'app-by-key-repartition', partition: 0, offset: 20 }])
    assert.deepEqual(sent(), [])
    clock.advance(1)
    purger.committed([
      { topic: 'app-by-key-repartition', partition: 1, offset: 5 },
      { topic: 'app-other-repartition', partition: 0, offset: 7 },
    ])
    assert.deepEqual(sent(), [
      { topic: 'app-by-key-repartition', partitions: [{ partition: 0, offset: 20 }, { partition: 1, offset: 5 }] },
      { topic: 'app-other-repartition', partitions: [{ partition: 0, offset: 7 }] },
    ])
  })

  it('never has two requests under way; what was committed meanwhile is purged when it returns', async () => {
    const { clock, purger, requests, sent } = setUp(100)
    clock.advance(100)
    purger.committed([{ topic: 't-repartition', partition: 0, offset: 1 }])
    assert.equal(requests.length, 1)
    clock.advance(500)
    purger.committed([{ topic: 't-repartition', partition: 0, offset: 2 }])
    assert.equal(requests.length, 1, 'the first is still under way')
    requests[0]?.settle()
    await tick()
    assert.deepEqual(sent()[1], { topic: 't-repartition', partitions: [{ partition: 0, offset: 2 }] }, 'what came meanwhile, once the interval is up')
    purger.committed([{ topic: 't-repartition', partition: 0, offset: 3 }])
    assert.equal(requests.length, 2, 'the second is under way')
    clock.advance(100)
    requests[1]?.settle()
    await tick()
    assert.equal(requests.length, 3)
    assert.deepEqual(sent()[2], { topic: 't-repartition', partitions: [{ partition: 0, offset: 3 }] })
  })

  it('offsets committed while a request was under way wait for a later commit when the interval is not up', async () => {
    const { clock, purger, requests } = setUp(100)
    clock.advance(100)
    purger.committed([{ topic: 't-repartition', partition: 0, offset: 1 }])
    purger.committed([{ topic: 't-repartition', partition: 0, offset: 2 }])
    requests[0]?.settle()
    await tick()
    assert.equal(requests.length, 1)
    clock.advance(100)
    purger.committed([])
    assert.equal(requests.length, 2)
  })

  it('a failed request is logged, and the next interval tries again', async () => {
    const warnings: string[] = []
    const logger: Logger = { ...silentLogger, warn: (_fields, message) => void warnings.push(message ?? '') }
    const { clock, purger, requests, sent } = setUp(100, logger)
    clock.advance(100)
    purger.committed([{ topic: 't-repartition', partition: 2, offset: 40 }])
    requests[0]?.settle(new Error('broker away'))
    await tick()
    assert.deepEqual(warnings, ['purging the repartition topics failed; the next interval tries again (broker away)'])
    purger.committed([{ topic: 't-repartition', partition: 2, offset: 41 }])
    assert.equal(requests.length, 1, 'not within the interval')
    clock.advance(100)
    purger.committed([])
    assert.deepEqual(sent()[1], { topic: 't-repartition', partitions: [{ partition: 2, offset: 41 }] })
  })

  it('closed: waits for the request under way, and sends no other, not even for offsets committed meanwhile', async () => {
    const { purger, requests } = setUp(0)
    purger.committed([{ topic: 'x-repartition', partition: 0, offset: 1 }])
    purger.committed([{ topic: 'x-repartition', partition: 0, offset: 2 }])
    let closed = false
    const closing = purger.close().then(() => (closed = true))
    await tick()
    assert.equal(closed, false, 'not while a request is under way')
    requests[0]?.settle()
    await closing
    purger.committed([{ topic: 'x-repartition', partition: 0, offset: 3 }])
    assert.equal(requests.length, 1)
  })

  it('with an interval of 0, purges after every commit', () => {
    const { purger, requests } = setUp(0)
    purger.committed([{ topic: 'x-repartition', partition: 0, offset: 1 }])
    assert.equal(requests.length, 1)
  })
})
