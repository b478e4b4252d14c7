import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ProducerSink } from '../../src/kafka/producer-sink.js'
import { PunctualError } from '../../src/errors.js'

function recorder() {
  const produced: string[] = []
  return {
    produced,
    producer: {
      produce(topic: string, partition: number, value: Buffer | null, key: Buffer | null, timestamp: number, _opaque?: unknown, headers?: Array<Record<string, Buffer>>) {
        produced.push(`${topic}/${partition} ${String(key)}=${String(value)} @${timestamp}${headers === undefined ? '' : ' ' + headers.map((h) => Object.entries(h).map(([k, v]) => `${k}:${String(v)}`).join()).join()}`)
      },
    },
  }
}

describe('ProducerSink', () => {
  it('produces at once, and holds what is written between hold and release, then produces it in order', () => {
    const { produced, producer } = recorder()
    const sink = new ProducerSink(producer)
    const bytes = (s: string) => new TextEncoder().encode(s)
    sink.send('out', 0, bytes('a'), bytes('1'), 10, [])
    assert.deepEqual(produced, ['out/0 a=1 @10'])
    sink.hold()
    sink.send('out', 1, bytes('b'), bytes('2'), 11, [{ key: 'h', value: bytes('x') }])
    sink.send('out', 0, null, null, 12, [])
    assert.equal(produced.length, 1, 'nothing produced while held')
    assert.equal(sink.holding, 2)
    // The commit's own records (changelogs) still go straight out.
    sink.produce('log', 0, bytes('k'), bytes('v'), 13, [])
    sink.release()
    assert.deepEqual(produced, ['out/0 a=1 @10', 'log/0 k=v @13', 'out/1 b=2 @11 h:x', 'out/0 null=null @12'])
    assert.equal(sink.holding, 0)
    sink.send('out', 2, bytes('c'), bytes('3'), 14, [])
    assert.equal(produced.at(-1), 'out/2 c=3 @14')
  })

  it('drops what it holds when the transaction is aborted, and produces through a producer that replaced a fenced one', () => {
    const first = recorder()
    const second = recorder()
    const sink = new ProducerSink(first.producer)
    const bytes = (s: string) => new TextEncoder().encode(s)
    sink.hold()
    sink.send('out', 0, bytes('a'), bytes('1'), 10, [])
    sink.discard()
    assert.equal(sink.holding, 0)
    sink.send('out', 0, bytes('b'), bytes('2'), 11, [])
    sink.use(second.producer)
    sink.release()
    sink.send('out', 0, bytes('c'), bytes('3'), 12, [])
    assert.deepEqual(first.produced, [])
    assert.deepEqual(second.produced, ['out/0 b=2 @11', 'out/0 c=3 @12'], 'held after the abort, then written; nothing of the aborted transaction')
  })

  it("turns librdkafka's queue-full error into one that names the topic and the settings to raise", () => {
    const sink = new ProducerSink({
      produce() {
        throw Object.assign(new Error('Local: Queue full'), { code: -184 })
      },
    })
    assert.throws(
      () => sink.send('out', 3, null, null, 0, []),
      (err: unknown) => err instanceof PunctualError && err.retriable && err.message.includes('out-3') && err.message.includes('queue.buffering.max.messages'),
    )
  })
})
