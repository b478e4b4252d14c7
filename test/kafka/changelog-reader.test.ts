import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { setImmediate as tick } from 'node:timers/promises'
import { ChangelogReader } from '../../src/kafka/changelog-reader.js'
import type { RestoreConsumer } from '../../src/kafka/changelog-reader.js'
import { ChangelogTopics } from '../../src/kafka/changelog-topics.js'
import { COMMIT_HEADER, commitHeaderValue } from '../../src/kafka/commit-numbers.js'
import type { ConsumedMessage, TopicPartitionRef } from '../../src/kafka/fetcher.js'

type Callback<A extends unknown[]> = (...args: A) => void

/** A restore consumer whose calls answer only when the test says: it records what was called while what was under way. */
class FakeConsumer implements RestoreConsumer {
  readonly calls: string[] = []
  assigned: Array<TopicPartitionRef & { offset: number }> = []
  connecting: Callback<[null]> | undefined
  consuming: Callback<[null, ConsumedMessage[]]> | undefined
  disconnecting: Callback<[]> | undefined
  private eof: ((eof: TopicPartitionRef & { offset: number }) => void) | undefined

  connect(_options: object, callback: Callback<[null]>): void {
    this.calls.push('connect')
    this.connecting = callback
  }
  assign(partitions: Array<TopicPartitionRef & { offset: number }>): void {
    this.assigned = partitions
    this.calls.push('assign')
  }
  consume(_max: number, callback: Callback<[null, ConsumedMessage[]]>): void {
    this.calls.push(this.connecting !== undefined ? 'consume while connecting' : 'consume')
    this.consuming = callback
  }
  on(_event: 'partition.eof', listener: (eof: TopicPartitionRef & { offset: number }) => void): void {
    this.eof = listener
  }
  queryWatermarkOffsets(_t: string, _p: number, _timeout: number, callback: Callback<[null, { lowOffset: number; highOffset: number }]>): void {
    callback(null, { lowOffset: 0, highOffset: 1 })
  }
  disconnect(callback: Callback<[]>): void {
    this.calls.push(this.connecting !== undefined || this.consuming !== undefined ? 'disconnect while busy' : 'disconnect')
    this.disconnecting = callback
  }

  connected(): void {
    const cb = this.connecting as Callback<[null]>
    this.connecting = undefined
    cb(null)
  }
  consumed(messages: ConsumedMessage[]): void {
    const cb = this.consuming as Callback<[null, ConsumedMessage[]]>
    this.consuming = undefined
    cb(null, messages)
  }
  atEnd(topic: string): void {
    this.eof?.({ topic, partition: 0, offset: 1 })
  }
}

describe('ChangelogReader: its restore consumer', () => {
  const topics = new ChangelogTopics('app', 0, [])
  const topic = topics.topics()[0] as string
  const reader = (consumer: FakeConsumer): ChangelogReader => new ChangelogReader(consumer, topics, 0, (err) => assert.fail(err))

  it('closed while it connects: disconnects once the connect returns, and reads nothing', async () => {
    const consumer = new FakeConsumer()
    const r = reader(consumer)
    r.open((err) => assert.fail(err.message))
    r.close()
    let disconnected = false
    void r.disconnected().then(() => (disconnected = true))
    assert.deepEqual(consumer.calls, ['connect'])
    consumer.connected()
    assert.deepEqual(consumer.calls, ['connect', 'disconnect'])
    await tick()
    assert.equal(disconnected, false, 'not before the client says so')
    consumer.disconnecting?.()
    await tick()
    assert.equal(disconnected, true)
  })

  it('closed while a consume call is under way: disconnects once it returns, and drops what it returned', async () => {
    const consumer = new FakeConsumer()
    const r = reader(consumer)
    r.open((err) => assert.fail(err.message))
    consumer.connected()
    assert.deepEqual(consumer.calls, ['connect', 'assign', 'consume'])
    r.close()
    assert.deepEqual(consumer.calls, ['connect', 'assign', 'consume'], 'no disconnect during the consume call')
    consumer.consumed([{ topic, partition: 0, offset: 0, key: Buffer.of(0, 1, 0x74), value: null, timestamp: 0 } as unknown as ConsumedMessage])
    assert.deepEqual(consumer.calls, ['connect', 'assign', 'consume', 'disconnect'])
    consumer.disconnecting?.()
    await r.disconnected()
  })

  it('read to the end: the last read closes it, and it disconnects between consume calls', async () => {
    const consumer = new FakeConsumer()
    const r = reader(consumer)
    r.open((err) => assert.fail(err.message))
    consumer.connected()
    consumer.atEnd(topic)
    assert.deepEqual(r.read(10), [])
    assert.deepEqual(consumer.calls, ['connect', 'assign', 'consume'], 'the consume call is still under way')
    consumer.consumed([])
    assert.deepEqual(consumer.calls, ['connect', 'assign', 'consume', 'disconnect'])
    consumer.disconnecting?.()
    await r.disconnected()
  })

  it('a connect that fails is reported, and a reader never opened closes at once', async () => {
    const consumer = new FakeConsumer()
    const r = reader(consumer)
    const failures: string[] = []
    r.open((err) => failures.push(err.message))
    ;(consumer.connecting as unknown as Callback<[{ message: string }]>)({ message: 'broker unreachable' })
    assert.deepEqual(failures, ['broker unreachable'])
    const never = reader(new FakeConsumer())
    await never.disconnected()
  })

  it('reads from the beginning, or from the offsets given (a local checkpoint), counting what remains from there', () => {
    const own = new ChangelogTopics('app', 0, ['counts'])
    const [store, task] = own.topics() as [string, string]
    const fromStart = new FakeConsumer()
    new ChangelogReader(fromStart, own, 0, (err) => assert.fail(err)).open((err) => assert.fail(err.message))
    fromStart.connected()
    assert.deepEqual(fromStart.assigned, [{ topic: store, partition: 0, offset: -2 }, { topic: task, partition: 0, offset: -2 }])

    const fromCheckpoint = new FakeConsumer()
    const tail = new ChangelogReader(fromCheckpoint, own, 0, (err) => assert.fail(err), { [store]: 7, [task]: 1 })
    tail.open((err) => assert.fail(err.message))
    fromCheckpoint.connected()
    assert.deepEqual(fromCheckpoint.assigned, [{ topic: store, partition: 0, offset: 7 }, { topic: task, partition: 0, offset: 1 }])
    // The fake's end offsets are 1: nothing remains of the task topic, nor of the store topic past 7 (never 0 before the end).
    assert.equal(tail.remaining(), 1)
  })

  it('at least once, leaves out the records of commits its mark does not cover (after it, or void); unnumbered ones always go in', () => {
    const own = new ChangelogTopics('app', 0, ['counts'])
    const [store] = own.topics() as [string]
    const consumer = new FakeConsumer()
    // Commit 5 is the last complete one; 2 and 3 were cut short by a crash, and later numbers went past them.
    const r = new ChangelogReader(consumer, own, 0, (err) => assert.fail(err), {}, { n: 5, voids: [[2, 3]] })
    r.open((err) => assert.fail(err.message))
    consumer.connected()
    const message = (offset: number, key: string, commit?: number): ConsumedMessage => ({
      topic: store,
      partition: 0,
      offset,
      key: Buffer.from(key),
      value: Buffer.from('v'),
      timestamp: 0,
      ...(commit === undefined ? {} : { headers: [{ [COMMIT_HEADER]: commitHeaderValue(commit) }] }),
    })
    consumer.consumed([message(0, 'a'), message(1, 'b', 1), message(2, 'c', 2), message(3, 'd', 4), message(4, 'e', 5), message(5, 'f', 6), message(6, 'g', 7)])
    assert.deepEqual(
      r.read(10).map((x) => Buffer.from(x.key).toString()),
      ['a', 'b', 'd', 'e'],
    )
    assert.equal(r.skipped, 3)
    assert.equal(r.highestSkipped, 7)
  })
})
