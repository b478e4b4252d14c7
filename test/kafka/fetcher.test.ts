import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Fetcher } from '../../src/kafka/fetcher.js'
import type { ConsumedMessage, TopicPartitionRef } from '../../src/kafka/fetcher.js'
import type { MutableLogRecord } from '../../src/processor/record-io.js'

/**
 * A consumer whose `consume` answers with the batches the test queues, one per call. Like librdkafka,
 * it does not fetch a paused partition, and a pause lasts until resumed, whatever the assignment does.
 */
function fakeConsumer() {
  const batches: ConsumedMessage[][] = []
  const paused: string[] = []
  const resumed: string[] = []
  const pausedNow = new Set<string>()
  let pending: ((err: null, m: ConsumedMessage[]) => void) | undefined
  let eofListener: ((eof: TopicPartitionRef & { offset: number }) => void) | undefined
  const name = (p: TopicPartitionRef): string => `${p.topic}-${p.partition}`
  return {
    paused,
    resumed,
    /**
     * Answers the consume call in flight with `batch`, less the messages of paused partitions. Its
     * partition-EOF events come first, as the client emits them before calling back with the messages.
     */
    deliver(batch: ConsumedMessage[], eofs: Array<TopicPartitionRef & { offset: number }> = []) {
      batches.push(batch.filter((m) => !pausedNow.has(name(m))))
      const p = pending
      pending = undefined
      for (const eof of eofs) eofListener?.(eof)
      p?.(null, batches.shift() as ConsumedMessage[])
    },
    consumer: {
      on(_event: 'partition.eof', listener: (eof: TopicPartitionRef & { offset: number }) => void) {
        eofListener = listener
      },
      consume(_max: number, cb: (err: null, m: ConsumedMessage[]) => void) {
        pending = cb
      },
      pause: (ps: TopicPartitionRef[]) => {
        paused.push(...ps.map(name))
        for (const p of ps) pausedNow.add(name(p))
      },
      resume: (ps: TopicPartitionRef[]) => {
        resumed.push(...ps.map(name))
        for (const p of ps) pausedNow.delete(name(p))
      },
    },
  }
}

const msg = (topic: string, partition: number, offset: number): ConsumedMessage => ({ topic, partition, offset, key: Buffer.from(`k${offset}`), value: Buffer.from(`v${offset}`), timestamp: offset * 10 })
const tick = () => new Promise((r) => setImmediate(r))

describe('Fetcher', () => {
  it('appends each fetched message to its partition, drops those of partitions it does not hold, and says when there is work', async () => {
    const fake = fakeConsumer()
    let woken = 0
    const fetcher = new Fetcher(fake.consumer, () => woken++, (err) => assert.fail(err.message))
    const p0 = fetcher.add('in', 0, 0)
    const p1 = fetcher.add('in', 1, 5)
    fetcher.start()
    fake.deliver([msg('in', 0, 0), msg('in', 0, 1), msg('in', 1, 5), msg('gone', 0, 3), msg('in', 0, 2)])
    assert.equal(woken, 1, 'one wake per batch')
    assert.equal(p0.endOffset(), 3)
    assert.equal(p1.endOffset(), 6)
    const r = {} as MutableLogRecord
    assert.ok(p0.read(1, r))
    assert.equal(String(r.value), 'v1')
    assert.equal(r.timestamp, 10)
    // Revoked: later messages of the partition are dropped.
    fetcher.remove('in', 1)
    await tick()
    fake.deliver([msg('in', 1, 6)])
    assert.equal(p1.endOffset(), 6)
    assert.equal(fetcher.get('in', 1), undefined)
    await fetcherStop(fetcher, fake)
  })

  it("marks a partition caught up on the client's partition-EOF event, and wakes the task loop when that is news", async () => {
    const fake = fakeConsumer()
    let woken = 0
    const fetcher = new Fetcher(fake.consumer, () => woken++, (err) => assert.fail(err.message))
    const p0 = fetcher.add('in', 0, 0)
    const p1 = fetcher.add('in', 1, 0)
    fetcher.start()
    // The EOF of partition 0 (its end past a transaction marker) is emitted before the messages fetched ahead of it are appended.
    fake.deliver([msg('in', 0, 0), msg('in', 0, 1), msg('in', 1, 0)], [{ topic: 'in', partition: 0, offset: 3 }, { topic: 'gone', partition: 0, offset: 9 }])
    assert.equal(p0.endOffset(), 2)
    assert.equal(p0.caughtUp(), true)
    assert.equal(p1.caughtUp(), false)
    assert.equal(woken, 2, 'one wake for the EOF, one for the batch')
    await tick()
    fake.deliver([], [{ topic: 'in', partition: 0, offset: 3 }])
    assert.equal(woken, 2, 'no news: no wake')
    await tick()
    fake.deliver([msg('in', 0, 3)])
    assert.equal(p0.caughtUp(), false, 'a record past the end it reached')
    await fetcherStop(fetcher, fake)
  })

  it('pauses a partition holding maxHeld unread messages, and resumes it once its task read half', async () => {
    const fake = fakeConsumer()
    const fetcher = new Fetcher(fake.consumer, () => {}, (err) => assert.fail(err.message), 4)
    const p = fetcher.add('in', 0, 0)
    fetcher.start()
    fake.deliver([0, 1, 2, 3].map((o) => msg('in', 0, o)))
    assert.deepEqual(fake.paused, ['in-0'])
    fetcher.resumeDrained()
    assert.deepEqual(fake.resumed, [], 'still full')
    const r = {} as MutableLogRecord
    p.read(0, r)
    p.read(1, r)
    p.read(2, r)
    fetcher.resumeDrained()
    assert.deepEqual(fake.resumed, ['in-0'])
    await fetcherStop(fetcher, fake)
  })

  it('fetches a partition again that was revoked while paused and then assigned back', async () => {
    const fake = fakeConsumer()
    const fetcher = new Fetcher(fake.consumer, () => {}, (err) => assert.fail(err.message), 4)
    fetcher.add('in', 0, 0)
    fetcher.start()
    fake.deliver([0, 1, 2, 3].map((o) => msg('in', 0, o)))
    assert.deepEqual(fake.paused, ['in-0'])
    fetcher.remove('in', 0)
    await tick()
    const back = fetcher.add('in', 0, 2)
    fetcher.assigned([{ topic: 'in', partition: 0 }])
    fake.deliver([msg('in', 0, 2), msg('in', 0, 3)])
    assert.equal(back.endOffset(), 4, 'the messages of the partition assigned back are fetched')
    await fetcherStop(fetcher, fake)
  })
})

async function fetcherStop(fetcher: Fetcher, fake: ReturnType<typeof fakeConsumer>): Promise<void> {
  await tick()
  const stopped = fetcher.stop()
  fake.deliver([])
  await stopped
}
