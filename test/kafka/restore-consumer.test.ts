import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { setImmediate as tick } from 'node:timers/promises'
import type { RestoreClient } from '../../src/kafka/client-supplier.js'
import type { ConsumedMessage, TopicPartitionRef } from '../../src/kafka/fetcher.js'
import { SharedRestoreConsumer } from '../../src/kafka/restore-consumer.js'

type Positioned = TopicPartitionRef & { offset: number }
type ConsumeCallback = (err: null, messages: ConsumedMessage[]) => void

/** A restore client whose `consume` calls answer only when the test says; it records every change of its assignment. */
class FakeClient {
  /** `+topic-partition@offset` added, `-topic-partition` removed, one entry per call. */
  readonly changes: string[][] = []
  /** What it is assigned now; adding one twice, or removing one it does not have, is an error (as librdkafka's incremental calls). */
  readonly assigned = new Set<string>()
  consuming: ConsumeCallback | undefined
  private eof: ((eof: Positioned) => void) | undefined
  connect(_o: object, cb: (err: null) => void): void {
    cb(null)
  }
  assign(): void {
    throw new Error('a full assign removes and adds every partition again (librdkafka issue 5573)')
  }
  incrementalAssign(partitions: Positioned[]): void {
    for (const p of partitions) {
      if (this.assigned.has(`${p.topic}-${p.partition}`)) throw new Error(`${p.topic}-${p.partition} assigned twice`)
      this.assigned.add(`${p.topic}-${p.partition}`)
    }
    this.changes.push(partitions.map((p) => `+${p.topic}-${p.partition}@${p.offset}`))
  }
  incrementalUnassign(partitions: TopicPartitionRef[]): void {
    for (const p of partitions) if (!this.assigned.delete(`${p.topic}-${p.partition}`)) throw new Error(`${p.topic}-${p.partition} removed but not assigned`)
    this.changes.push(partitions.map((p) => `-${p.topic}-${p.partition}`))
  }
  consume(_max: number, cb: ConsumeCallback): void {
    this.consuming = cb
  }
  on(event: string, listener: (eof: Positioned) => void): void {
    if (event === 'partition.eof') this.eof = listener
  }
  queryWatermarkOffsets(): void {}
  disconnect(cb: () => void): void {
    cb()
  }
  setDefaultConsumeTimeout(): void {}
  setDefaultIsTimeoutOnlyForFirstMessage(): void {}

  /** The call under way returns `messages`, after telling the ends it reached (as the client does). */
  returns(messages: ConsumedMessage[], ends: Positioned[] = []): void {
    const cb = this.consuming as ConsumeCallback
    this.consuming = undefined
    for (const e of ends) this.eof?.(e)
    cb(null, messages)
  }
}

const message = (topic: string, partition: number, offset: number): ConsumedMessage => ({ topic, partition, offset, key: Buffer.from('k'), value: Buffer.from(String(offset)) })

function channelOf(shared: SharedRestoreConsumer): { channel: ReturnType<SharedRestoreConsumer['channel']>; ends: Positioned[] } {
  const channel = shared.channel()
  const ends: Positioned[] = []
  channel.on('partition.eof', (e) => ends.push(e))
  return { channel, ends }
}

function consume(channel: ReturnType<SharedRestoreConsumer['channel']>): Promise<ConsumedMessage[]> {
  return new Promise((resolve) => channel.consume(100, (_err, messages) => resolve(messages)))
}

describe('the shared restore consumer', () => {
  it("hands each channel the messages of its partitions, tells an end only after the messages before it, and unassigns a closed channel's partitions, each partition added once and removed once", async () => {
    const client = new FakeClient()
    const shared = new SharedRestoreConsumer(() => client as unknown as RestoreClient)
    const a = channelOf(shared)
    const b = channelOf(shared)
    await new Promise<void>((resolve) => a.channel.connect({}, () => resolve()))
    a.channel.assign([{ topic: 'c', partition: 0, offset: -2 }])
    b.channel.assign([{ topic: 'c', partition: 1, offset: 5 }])
    const readA = consume(a.channel)
    const readB = consume(b.channel)
    assert.deepEqual(client.changes, [['+c-0@-2'], ['+c-1@5']], "each channel's partition, added as it asks")
    client.returns([message('c', 0, 0), message('c', 1, 5), message('c', 0, 1)], [{ topic: 'c', partition: 0, offset: 2 }])
    assert.deepEqual((await readA).map((m) => m.offset), [0, 1])
    assert.deepEqual((await readB).map((m) => m.offset), [5])
    await tick()
    assert.deepEqual(a.ends, [{ topic: 'c', partition: 0, offset: 2 }], "channel a's end, told after its messages")
    assert.deepEqual(b.ends, [])
    // a's reader is done and closes while b's call is under way: a's partition goes when that call returns.
    const readB2 = consume(b.channel)
    a.channel.disconnect()
    assert.equal(client.changes.length, 2, 'no change of the assignment while a call is under way')
    client.returns([message('c', 1, 6)])
    assert.deepEqual((await readB2).map((m) => m.offset), [6])
    assert.deepEqual(client.changes.at(-1), ['-c-0'], "a's partition goes; b's stays assigned, untouched")
    b.channel.disconnect()
    await tick()
    if (client.consuming !== undefined) client.returns([])
    assert.deepEqual(client.changes, [['+c-0@-2'], ['+c-1@5'], ['-c-0'], ['-c-1']])
    assert.deepEqual([...client.assigned], [], 'nothing left assigned once every channel closed')
    await shared.close()
  })

  it('a task that restores again before its old channel closed reads its partition from its new start: nothing the old assignment fetched reaches it, and the partition is removed and assigned again a round apart', async () => {
    const client = new FakeClient()
    const shared = new SharedRestoreConsumer(() => client as unknown as RestoreClient)
    const old = channelOf(shared)
    await new Promise<void>((resolve) => old.channel.connect({}, () => resolve()))
    old.channel.assign([{ topic: 'c', partition: 0, offset: -2 }])
    void consume(old.channel)
    // The task is revoked and assigned back while the old reader's call is under way: a new reader, a new channel.
    const again = channelOf(shared)
    await new Promise<void>((resolve) => again.channel.connect({}, () => resolve()))
    again.channel.assign([{ topic: 'c', partition: 0, offset: -2 }])
    const first = consume(again.channel)
    old.channel.disconnect()
    // The old assignment's fetch, from where it had got to, with its end.
    client.returns([message('c', 0, 5)], [{ topic: 'c', partition: 0, offset: 6 }])
    assert.deepEqual((await first).map((m) => m.offset), [], 'nothing of the old fetch')
    assert.deepEqual(client.changes, [['+c-0@-2'], ['-c-0']], 'removed for the old channel; not assigned again in the same round')
    const second = consume(again.channel)
    await tick()
    client.returns([])
    assert.deepEqual((await second).map((m) => m.offset), [])
    assert.deepEqual(client.changes.at(-1), ['+c-0@-2'], "assigned again a round later, from the new channel's start")
    const third = consume(again.channel)
    await tick()
    client.returns([message('c', 0, 0), message('c', 0, 1)], [{ topic: 'c', partition: 0, offset: 2 }])
    assert.deepEqual((await third).map((m) => m.offset), [0, 1])
    await tick()
    assert.deepEqual(again.ends, [{ topic: 'c', partition: 0, offset: 2 }], "only the new assignment's end")
    assert.deepEqual(old.ends, [])
    again.channel.disconnect()
    await tick()
    if (client.consuming !== undefined) client.returns([])
    await shared.close()
  })

  it('refuses to connect once closed', async () => {
    const shared = new SharedRestoreConsumer(() => new FakeClient() as unknown as RestoreClient)
    await shared.close()
    const channel = shared.channel()
    const err = await new Promise<{ message: string } | null | undefined>((resolve) => channel.connect({}, resolve))
    assert.match(err?.message ?? '', /closed/)
  })
})
