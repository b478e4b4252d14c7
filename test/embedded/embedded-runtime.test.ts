import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { setImmediate as tick } from 'node:timers/promises'
import { EmbeddedRuntime, ErrorHandlers, PunctualError, PunctuationType, Serdes, silentLogger, StreamsBuilder, Topology } from '../../src/index.js'
import type { ProcessorContext, StreamRecord } from '../../src/index.js'
import { ManualClock } from '../../src/testing/index.js'
import { partitionForKey } from '../../src/processor/murmur2.js'

const passThrough = (): Topology => new Topology().addSource('src', 'in').addSink('sink', 'out', {}, 'src')

/** Resolves when `predicate` holds, checked after each event-loop turn (the runtime works in turns). */
async function until(predicate: () => boolean, turns = 10_000): Promise<void> {
  for (let i = 0; !predicate(); i++) {
    if (i === turns) throw new Error(`condition not reached in ${turns} turns of the event loop`)
    await tick()
  }
}

describe('EmbeddedRuntime', () => {
  it('runs one task per partition and partitions output keys with murmur2, per-key order kept', async () => {
    const rt = new EmbeddedRuntime(passThrough(), { applicationId: 'pt', topics: { in: { partitions: 3 }, out: { partitions: 3 } }, logger: silentLogger })
    const received: Array<{ key: string; value: string; partition: number }> = []
    rt.subscribe<string, string>('out', (r, partition) => received.push({ key: r.key!, value: r.value!, partition }))
    await rt.start()
    assert.deepEqual(rt.taskIds(), ['0_0', '0_1', '0_2'])
    const producer = rt.producer('in')
    const keys = ['alpha', 'beta', 'gamma', 'delta', 'epsilon']
    for (let i = 0; i < 500; i++) producer.send(keys[i % 5]!, String(i), i)
    await rt.stop()
    assert.equal(received.length, 500)
    for (const key of keys) {
      const mine = received.filter((r) => r.key === key)
      assert.ok(mine.every((r) => r.partition === partitionForKey(Buffer.from(key), 3)), `${key} in its murmur2 partition`)
      const values = mine.map((r) => Number(r.value))
      assert.deepEqual(values, [...values].sort((a, b) => a - b), `${key} in order`)
    }
    assert.equal(rt.metrics().processedRecords, 500)
  })

  it('processes records produced while it runs', async () => {
    const rt = new EmbeddedRuntime(passThrough(), { applicationId: 'live', logger: silentLogger })
    const got: string[] = []
    rt.subscribe<string, string>('out', (r) => got.push(r.value!))
    await rt.start()
    const p = rt.producer('in')
    p.send('k', 'one', 1)
    await until(() => got.length === 1)
    p.send('k', 'two', 2)
    await until(() => got.length === 2)
    assert.deepEqual(got, ['one', 'two'])
    await rt.stop()
  })

  it('fires wall-clock punctuations with no input at all, each at its due time', async () => {
    const fires: number[] = []
    const topology = new Topology().addSource('src', 'in').addProcessor(
      'p',
      () => ({
        init(ctx: ProcessorContext) {
          ctx.schedule({ type: PunctuationType.WALL_CLOCK_TIME, intervalMs: 15 }, (now) => fires.push(now))
        },
        process() {},
      }),
      'src',
    )
    const clock = new ManualClock(1000)
    const rt = new EmbeddedRuntime(topology, { applicationId: 'wall', clock, logger: silentLogger })
    const advance = async (ms: number): Promise<void> => {
      clock.advance(ms)
      await tick()
    }
    await rt.start()
    await tick()
    await advance(14)
    assert.deepEqual(fires, [], 'not before the first due time')
    await advance(1)
    assert.deepEqual(fires, [1015])
    for (let i = 0; i < 3; i++) await advance(15)
    assert.deepEqual(fires, [1015, 1030, 1045, 1060])
    await rt.stop()
  })

  it('arms one timer per due time: no polling between due times', async () => {
    let fires = 0
    const topology = new Topology().addSource('src', 'in').addProcessor(
      'p',
      () => ({
        init(ctx: ProcessorContext) {
          ctx.schedule({ type: PunctuationType.WALL_CLOCK_TIME, intervalMs: 40 }, () => fires++)
        },
        process() {},
      }),
      'src',
    )
    const clock = new ManualClock(0)
    const armed: number[] = []
    const scheduler = { at: (due: number, callback: () => void) => (armed.push(due), clock.at(due, callback)) }
    const rt = new EmbeddedRuntime(topology, { applicationId: 'timers', clock, scheduler, logger: silentLogger })
    await rt.start()
    await tick()
    for (let i = 0; i < 21; i++) {
      clock.advance(10)
      await tick()
    }
    await rt.stop()
    assert.equal(fires, 5)
    assert.deepEqual(armed, [40, 80, 120, 160, 200, 240], 'armed once for each due time, and for nothing else')
  })

  it('stop() drains input already written, then closes every processor once', async () => {
    let closed = 0
    let processed = 0
    const topology = new Topology().addSource('src', 'in').addProcessor(
      'p',
      () => ({
        process() {
          processed++
        },
        close() {
          closed++
        },
      }),
      'src',
    )
    const rt = new EmbeddedRuntime(topology, { applicationId: 'drain', defaultPartitions: 2, logger: silentLogger })
    const p = rt.producer('in')
    for (let i = 0; i < 10_000; i++) p.send(`k${i}`, 'v', i)
    await rt.start()
    await rt.stop()
    assert.equal(processed, 10_000)
    assert.equal(closed, 2)
    assert.equal(rt.state, 'NOT_RUNNING')
  })

  it('stops with an error when the error handler says fail, and reports it', async () => {
    const topology = new Topology().addSource('src', 'in').addProcessor(
      'p',
      () => ({
        process(r: StreamRecord<string, string>) {
          if (r.value === 'bad') throw new Error('refused')
        },
      }),
      'src',
    )
    const rt = new EmbeddedRuntime(topology, { applicationId: 'err', errorHandler: ErrorHandlers.logAndFail(silentLogger), logger: silentLogger })
    const errors: Error[] = []
    rt.on('error', (e) => errors.push(e))
    await rt.start()
    rt.producer('in').send('k', 'bad', 1)
    await until(() => errors.length === 1)
    assert.equal(rt.state, 'ERROR')
    assert.ok(errors[0] instanceof PunctualError)
    assert.match(errors[0]!.message, /task 0_0: processing error in processor "p" at topic in partition 0 offset 0: refused/)
    await assert.rejects(rt.stop(), /refused/)
  })

  it('continues after input that does not deserialize by default, counting it', async () => {
    const rt = new EmbeddedRuntime(passThrough(), { applicationId: 'bad', logger: silentLogger })
    const got: string[] = []
    rt.subscribe<string, string>('out', (r) => got.push(r.value!))
    await rt.start()
    const p = rt.producer('in', { valueSerde: Serdes.Bytes() })
    p.send('k', Buffer.from('a'), 1)
    p.send('k', Buffer.from([0xff]), 2) // not UTF-8
    p.send('k', Buffer.from('b'), 3)
    await rt.stop()
    assert.deepEqual(got, ['a', 'b'])
    assert.equal(rt.metrics().droppedRecords.deserialization, 1)
  })

  it('refuses a timestamp that is not an integer epoch millisecond >= 0 at the call', () => {
    const rt = new EmbeddedRuntime(passThrough(), { applicationId: 'ts', logger: silentLogger })
    const p = rt.producer('in')
    for (const ts of [1000.5, -1, Number.NaN]) {
      assert.throws(() => p.send('k', 'v', ts), (e: unknown) => e instanceof PunctualError && e.code === 'INVALID_ARGUMENT' && /producer\("in"\)\.send: a timestamp is an integer epoch millisecond >= 0, got/.test(e.message))
    }
  })

  it('refuses a send once stop() is called or the runtime failed: the record would be lost (issue 39)', async () => {
    const rt = new EmbeddedRuntime(passThrough(), { applicationId: 'after-stop', logger: silentLogger })
    const got: string[] = []
    rt.subscribe<string, string>('out', (r) => got.push(r.value!))
    const p = rt.producer<string, string>('in')
    p.send('k', 'before start', 1)
    await rt.start()
    p.send('k', 'running', 2)
    const stopping = rt.stop()
    const refused = (state: string) => (e: unknown) =>
      e instanceof PunctualError &&
      e.code === 'ILLEGAL_STATE' &&
      e.message === `runtime.producer("in").send: the runtime is ${state}; a producer sends before start() and while the runtime runs, not once stop() is called or it failed`
    assert.throws(() => p.send('k', 'stopping', 3), refused('PENDING_SHUTDOWN'))
    await stopping
    assert.throws(() => p.send('k', 'stopped', 4), refused('NOT_RUNNING'))
    assert.throws(() => rt.producer<string, string>('in').send('k', 'new producer', 5), refused('NOT_RUNNING'))
    assert.deepEqual(got, ['before start', 'running'])

    const failing = new Topology().addSource('src', 'in').addProcessor(
      'p',
      () => ({
        process() {
          throw new Error('refused')
        },
      }),
      'src',
    )
    const failed = new EmbeddedRuntime(failing, { applicationId: 'failed', logger: silentLogger })
    const errors: Error[] = []
    failed.on('error', (e) => errors.push(e))
    await failed.start()
    const q = failed.producer<string, string>('in')
    q.send('k', 'v', 1)
    await until(() => errors.length === 1)
    assert.throws(() => q.send('k', 'v', 2), refused('ERROR'))
    await assert.rejects(failed.stop(), /refused/)
  })

  it('refuses a producer or subscriber for a topic the topology does not use, listing its topics', () => {
    const rt = new EmbeddedRuntime(passThrough(), { applicationId: 'typo', logger: silentLogger })
    assert.throws(() => rt.producer('typo'), /runtime\.producer\("typo"\): no source of the topology reads topic "typo"; source topics: in; sink topics: out/)
    assert.throws(() => rt.producer('out'), /no source of the topology reads topic "out"/)
    assert.throws(() => rt.subscribe('typo', () => {}), /runtime\.subscribe\("typo"\): the topology neither reads nor writes topic "typo"; source topics: in; sink topics: out/)
  })

  it('subscribers read with the serdes of the sink that writes the topic; another built-in serde is refused', async () => {
    const topology = new StreamsBuilder()
    topology.stream('in').groupByKey().count().toStream().to('counts', { valueSerde: Serdes.Long() })
    const rt = new EmbeddedRuntime(topology.build(), { applicationId: 'typed', logger: silentLogger })
    const counts: unknown[] = []
    rt.subscribe('counts', (r) => counts.push(r.value))
    assert.throws(() => rt.subscribe('counts', () => {}, { valueSerde: Serdes.String() }), /uses Serdes\.Long\(\) for the values of topic "counts", not Serdes\.String\(\)/)
    await rt.start()
    rt.producer('in').send('a', 'x', 1)
    rt.producer('in').send('a', 'y', 2)
    await rt.stop()
    assert.deepEqual(counts, [1, 2])
  })

  it('waits maxTaskIdleMs for an empty co-partitioned input, woken by its timer', async () => {
    const seen: string[] = []
    const topology = new Topology().addSource('src', ['a', 'b']).addProcessor(
      'p',
      () => ({
        process(r: StreamRecord<string, string>) {
          seen.push(r.value)
        },
      }),
      'src',
    )
    const clock = new ManualClock(0)
    const rt = new EmbeddedRuntime(topology, { applicationId: 'idle', maxTaskIdleMs: 60, clock, logger: silentLogger })
    try {
      await rt.start()
      rt.producer('a').send('k', 'a1', 1)
      await tick()
      clock.advance(59)
      await tick()
      await tick()
      assert.deepEqual(seen, [], 'waits while b is empty')
      clock.advance(1)
      await until(() => seen.length === 1)
      assert.deepEqual(seen, ['a1'])
    } finally {
      await rt.stop()
    }
  })

  it('commits processed positions and releases consumed input', async () => {
    const rt = new EmbeddedRuntime(new Topology().addSource('src', 'in').addProcessor('p', () => ({ process() {} }), 'src'), {
      applicationId: 'commit',
      commitIntervalMs: 1,
      logger: silentLogger,
    })
    const p = rt.producer('in')
    for (let i = 0; i < 20_000; i++) p.send('k', 'v', i)
    await rt.start()
    await rt.stop()
    assert.deepEqual(rt.committed().get('0_0')?.positions, { 'in:0': 20_000 })
    assert.equal(rt.committed().get('0_0')?.streamTime, 19_999)
  })

  it('rejects co-partitioned topics with different partition counts', async () => {
    const topology = new Topology().addSource('src', ['a', 'b']).addProcessor('p', () => ({ process() {} }), 'src')
    const rt = new EmbeddedRuntime(topology, { applicationId: 'copart', topics: { a: { partitions: 2 }, b: { partitions: 3 } }, logger: silentLogger })
    await assert.rejects(rt.start(), /sub-topology 0: co-partitioned topics must have the same number of partitions, got a=2, b=3/)
  })

  it('validates its configuration, naming the option and value', () => {
    assert.throws(() => new EmbeddedRuntime(passThrough(), { applicationId: '' }), /applicationId must be a non-empty string/)
    assert.throws(() => new EmbeddedRuntime(passThrough(), { applicationId: 'x', commitIntervalMs: 0 }), /commitIntervalMs must be an integer >= 1, got 0/)
    assert.throws(() => new EmbeddedRuntime(passThrough(), { applicationId: 'x', maxTaskIdleMs: -2 }), /maxTaskIdleMs must be an integer >= -1, got -2/)
  })
})
