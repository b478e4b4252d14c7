import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { EmbeddedRuntime, ErrorHandlers, PunctualError, Serdes, silentLogger, Topology } from '../../src/index.js'
import type { Header, ProcessorContext, StreamRecord } from '../../src/index.js'

const str = { keySerde: Serdes.String(), valueSerde: Serdes.String() }

/** Strings in, strings out; a value "boom" makes the processor throw. */
function topology(): Topology {
  return new Topology()
    .addSource<string, string>('src', 'in', str)
    .addProcessor<string, string, string, string>(
      'p',
      () => {
        let context: ProcessorContext<string, string> | undefined
        return {
          init(ctx) {
            context = ctx
          },
          process(r: StreamRecord<string, string>) {
            if (r.value === 'boom') throw new Error('boom refused')
            context?.forward(r)
          },
        }
      },
      'src',
    )
    .addSink('sink', 'out', str, 'p')
}

interface Letter {
  key: string | null
  value: string | null
  timestamp: number
  headers: Record<string, string>
}

function run(config: Partial<ConstructorParameters<typeof EmbeddedRuntime>[1]>): { rt: EmbeddedRuntime; out: string[]; letters: Letter[] } {
  const rt = new EmbeddedRuntime(topology(), { applicationId: 'dlq', logger: silentLogger, deadLetterTopic: 'dead', ...config })
  const out: string[] = []
  const letters: Letter[] = []
  rt.subscribe<string, string>('out', (r) => out.push(r.value as string), str)
  rt.subscribe<Uint8Array, Uint8Array>('dead', (r) =>
    letters.push({
      key: r.key === null ? null : Buffer.from(r.key).toString(),
      value: r.value === null ? null : Buffer.from(r.value).toString('latin1'),
      timestamp: r.timestamp,
      headers: Object.fromEntries(r.headers.map((h: Header) => [h.key, h.value === null ? '' : Buffer.from(h.value).toString()])),
    }),
    { keySerde: Serdes.Bytes(), valueSerde: Serdes.Bytes() },
  )
  return { rt, out, letters }
}

describe('dead-letter topic (KIP-1034)', () => {
  it('receives the bytes of a record that does not deserialize, with headers naming the error and where it came from; the others go on', async () => {
    const { rt, out, letters } = run({})
    await rt.start()
    const p = rt.producer('in', { keySerde: Serdes.String(), valueSerde: Serdes.Bytes() })
    p.send('k', Buffer.from('a'), 1)
    p.send('k', Buffer.from([0xff, 0x41]), 2) // not UTF-8
    p.send('k', Buffer.from('b'), 3)
    await rt.stop()
    assert.deepEqual(out, ['a', 'b'])
    assert.equal(letters.length, 1)
    const [l] = letters as [Letter]
    assert.equal(l.key, 'k')
    assert.equal(l.value, '\xffA')
    assert.equal(l.timestamp, 2)
    assert.equal(l.headers['__streams.errors.topic'], 'in')
    assert.equal(l.headers['__streams.errors.partition'], '0')
    assert.equal(l.headers['__streams.errors.offset'], '1')
    assert.match(l.headers['__streams.errors.exception'] as string, /^Error: invalid UTF-8/)
    assert.match(l.headers['__streams.errors.message'] as string, /invalid UTF-8/)
    assert.match(l.headers['__streams.errors.stacktrace'] as string, /invalid UTF-8[\s\S]*\n\s+at /)
    assert.equal(rt.metrics().droppedRecords.deserialization, 1)
  })

  it('receives a record whose processing failed when the error handler continues, and none when it fails', async () => {
    const going = run({ errorHandler: ErrorHandlers.logAndContinue(silentLogger) })
    await going.rt.start()
    const p = going.rt.producer<string, string>('in', str)
    p.send('k1', 'x', 10)
    p.send('k2', 'boom', 11)
    p.send('k3', 'y', 12)
    await going.rt.stop()
    assert.deepEqual(going.out, ['x', 'y'])
    assert.deepEqual(
      going.letters.map((l) => [l.key, l.value, l.timestamp, l.headers['__streams.errors.offset'], l.headers['__streams.errors.message']]),
      [['k2', 'boom', 11, '1', 'boom refused']],
    )

    const failing = run({})
    const errors: Error[] = []
    failing.rt.on('error', (e) => errors.push(e))
    await failing.rt.start()
    failing.rt.producer<string, string>('in', str).send('k', 'boom', 1)
    await assert.rejects(failing.rt.stop(), /boom refused/)
    assert.deepEqual(failing.letters, [], 'the default handler fails on a processing error: nothing is skipped, nothing dead-lettered')
  })

  it('is refused when it is a source topic of the topology, or not a topic name', () => {
    assert.throws(
      () => new EmbeddedRuntime(topology(), { applicationId: 'dlq', logger: silentLogger, deadLetterTopic: 'in' }),
      (e: unknown) => e instanceof PunctualError && /deadLetterTopic "in" is a source topic of the topology/.test(e.message),
    )
    assert.throws(() => new EmbeddedRuntime(topology(), { applicationId: 'dlq', logger: silentLogger, deadLetterTopic: '' }), /deadLetterTopic must be a non-empty topic name, got ""/)
  })
})
