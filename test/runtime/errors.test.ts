import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { describe, it } from 'node:test'
import { pino } from 'pino'
import { createConsoleLogger, EmbeddedRuntime, ErrorHandlers, PunctualError, PunctuationType, Serdes, silentLogger, Stores, StreamsBuilder, Topology } from '../../src/index.js'
import type { ErrorContext, KeyValueStore, LogFields, Logger, ProcessorContext, Serde, StreamRecord } from '../../src/index.js'
import { TopologyTestDriver } from '../../src/testing/index.js'

/** src -> parse -> check: `check` throws on the value 'bad'; `parse` forwards everything. */
function chain(): Topology {
  return new Topology()
    .addSource('src', 'in')
    .addProcessor(
      'parse',
      () => {
        let ctx: ProcessorContext<string, string>
        return {
          init(c: ProcessorContext<string, string>) {
            ctx = c
          },
          process(r: StreamRecord<string, string>) {
            ctx.forward(r)
          },
        }
      },
      'src',
    )
    .addProcessor(
      'check',
      () => ({
        process(r: StreamRecord<string, string>) {
          if (r.value === 'bad') throw new TypeError('value rejected')
        },
      }),
      'parse',
    )
}

/** A logger that keeps what it is given, level by level. */
function capturingLogger(): { logger: Logger; lines: Array<{ level: string; fields: LogFields; message: string | undefined }> } {
  const lines: Array<{ level: string; fields: LogFields; message: string | undefined }> = []
  const at =
    (level: string) =>
    (fields: LogFields, message?: string): void =>
      void lines.push({ level, fields, message })
  return { logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }, lines }
}

async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r))
}

describe('errors in user code (SEMANTICS 7)', () => {
  it('fail the application by default, naming the processor node that threw, the task, topic, partition and offset, with the original error as cause', async () => {
    const rt = new EmbeddedRuntime(chain(), { applicationId: 'fails', logger: silentLogger })
    const errors: Error[] = []
    rt.on('error', (e) => errors.push(e))
    await rt.start()
    const p = rt.producer<string, string>('in')
    p.send('k', 'good', 1)
    p.send('k', 'bad', 2)
    p.send('k', 'never processed', 3)
    await turns(20)
    assert.equal(rt.state, 'ERROR')
    assert.equal(errors.length, 1)
    const err = errors[0] as PunctualError
    assert.ok(err instanceof PunctualError)
    assert.equal(err.code, 'PROCESSING')
    assert.equal(err.message, 'task 0_0: processing error in processor "check" at topic in partition 0 offset 1: value rejected')
    assert.ok(err.cause instanceof TypeError)
    assert.match((err.cause as Error).stack ?? '', /errors\.test\.ts/, 'the cause keeps the stack of the throw')
    assert.equal(rt.metrics().processedRecords, 1, 'neither the failing record nor the one after it counts as processed')
    await assert.rejects(rt.stop(), (e: unknown) => e === err)
  })

  it('fail the test driver call that ran them by default', () => {
    const d = new TopologyTestDriver(chain())
    const input = d.createInputTopic<string, string>('in')
    input.pipeInput('k', 'good', 1)
    assert.throws(() => input.pipeInput('k', 'bad', 2), (e: unknown) => e instanceof PunctualError && /processing error in processor "check" at topic in partition 0 offset 1: value rejected/.test(e.message) && e.cause instanceof TypeError)
  })

  it('name the processor a punctuation belongs to, and a timer callback that threw', () => {
    const topology = new Topology().addSource('src', 'in').addProcessor(
      'ticker',
      () => ({
        init(c: ProcessorContext) {
          c.schedule({ type: PunctuationType.STREAM_TIME, intervalMs: 10, name: 'tick' }, () => {
            throw new Error('tick failed')
          })
        },
        process() {},
      }),
      'src',
    )
    const d = new TopologyTestDriver(topology)
    assert.throws(() => d.createInputTopic<string, string>('in').pipeInput('k', 'v', 1), /task 0_0: punctuation error in processor "ticker" in punctuation "tick": tick failed/)
  })

  it('are logged with their context and stack, and skipped, under logAndContinue', () => {
    const { logger, lines } = capturingLogger()
    const d = new TopologyTestDriver(chain(), { errorHandler: ErrorHandlers.logAndContinue(logger) })
    const input = d.createInputTopic<string, string>('in')
    input.pipeInput('k', 'bad', 1)
    input.pipeInput('k', 'good', 2)
    assert.equal(d.metrics().processedRecords, 2)
    assert.equal(d.metrics().droppedRecords.processing, 1)
    assert.equal(lines.length, 1)
    const line = lines[0]!
    assert.equal(line.level, 'warn')
    assert.equal(line.message, 'task 0_0: processing error in processor "check" at topic in partition 0 offset 0: value rejected; skipped and continuing')
    assert.deepEqual({ ...line.fields, err: undefined }, { reason: 'processing', taskId: '0_0', processor: 'check', topic: 'in', partition: 0, offset: 0, err: undefined })
    assert.ok(line.fields.err instanceof TypeError)
  })
})

describe('bad input (SEMANTICS 1, 7)', () => {
  it('is logged with its context and skipped by default', () => {
    const { logger, lines } = capturingLogger()
    const d = new TopologyTestDriver(new Topology().addSource('src', 'in').addSink('out', 'out', {}, 'src'), { errorHandler: ErrorHandlers.failOnUserCodeErrors(logger) })
    // pipeInput refuses the timestamp; a topic written by another client can hold it.
    d.append('in', 'k', Serdes.String() as Serde<unknown>, 'v', Serdes.String() as Serde<unknown>, -5, [])
    assert.equal(d.metrics().droppedRecords['invalid-timestamp'], 1)
    assert.equal(lines.length, 1)
    assert.equal(lines[0]!.level, 'warn')
    assert.match(lines[0]!.message ?? '', /task 0_0: invalid-timestamp error at topic in partition 0 offset 0: .*; skipped and continuing/)
  })
})

/** src -> rekey -> sink "out" (String serdes): `rekey` forwards the key as a number when the value is 'num'. */
function rekeying(): Topology {
  return new Topology()
    .addSource('src', 'in')
    .addProcessor(
      'rekey',
      () => {
        let ctx: ProcessorContext<unknown, string>
        return {
          init(c: ProcessorContext<unknown, string>) {
            ctx = c
          },
          process(r: StreamRecord<string, string>) {
            ctx.forward(r.value === 'num' ? { ...r, key: Number(r.key) } : r)
          },
        }
      },
      'src',
    )
    .addSink('sink', 'out', {}, 'rekey')
}

const refusesKey42 = (err: unknown): boolean =>
  err instanceof PunctualError && err.code === 'INVALID_ARGUMENT' && err.message === 'runtime.producer("in").send: topic "in" cannot take key 42: its key serde Serdes.String() takes a string'

describe('a key or value its serde cannot write (issue 39)', () => {
  it('is refused at the producer, naming the topic, the key and the type; the durable run goes on and commits', async () => {
    const b = new StreamsBuilder()
    b.stream<string, string>('in').groupByKey().count().toStream().to('out', { valueSerde: Serdes.Long() })
    const stateDir = mkdtempSync(join(tmpdir(), 'punctual-serde-'))
    const rt = new EmbeddedRuntime(b.build(), { applicationId: 'wrong-key', stateDir, logger: silentLogger })
    const counts: Array<[unknown, unknown]> = []
    rt.subscribe<string, number>('out', (r) => counts.push([r.key, r.value]))
    await rt.start()
    const p = rt.producer<unknown, unknown>('in')
    assert.throws(() => p.send(42, 'hello', 1), refusesKey42)
    assert.throws(() => p.send('42', 7, 1), /topic "in" cannot take value 7 of key "42": its value serde Serdes\.String\(\) takes a string/)
    p.send('42', 'hello', 2)
    await rt.stop()
    assert.deepEqual(counts, [['42', 1]])
  })

  it('is refused by pipeInput in the test driver, so that 42 and "42" never count as two keys', () => {
    const d = new TopologyTestDriver(chain())
    const input = d.createInputTopic<unknown, string>('in')
    assert.throws(
      () => input.pipeInput(42, 'hello', 1),
      (e: unknown) => e instanceof PunctualError && e.code === 'INVALID_ARGUMENT' && e.message === 'pipeInput on "in": topic "in" cannot take key 42: its key serde Serdes.String() takes a string',
    )
    assert.equal(d.metrics().processedRecords, 0)
  })

  it('forwarded to a sink goes to the error handler as that sink failing, naming the topic, key and type', () => {
    const d = new TopologyTestDriver(rekeying())
    const input = d.createInputTopic<string, string>('in')
    assert.throws(
      () => input.pipeInput('7', 'num', 1),
      (e: unknown) =>
        e instanceof PunctualError &&
        e.code === 'PROCESSING' &&
        e.message === 'task 0_0: processing error in processor "sink" at topic in partition 0 offset 0: topic "out" cannot take key 7: its key serde Serdes.String() takes a string',
    )
  })

  it('forwarded to a sink is skipped under logAndContinue, and a durable run commits the rest', async () => {
    const seen: ErrorContext[] = []
    const stateDir = mkdtempSync(join(tmpdir(), 'punctual-serde-'))
    const errorHandler = (ctx: ErrorContext): 'continue' => {
      seen.push(ctx)
      return 'continue'
    }
    const rt = new EmbeddedRuntime(rekeying(), { applicationId: 'wrong-sink-key', stateDir, errorHandler, logger: silentLogger })
    const out: Array<[unknown, unknown]> = []
    rt.subscribe<string, string>('out', (r) => out.push([r.key, r.value]))
    await rt.start()
    const p = rt.producer<string, string>('in')
    p.send('a', 'x', 1)
    p.send('7', 'num', 2)
    p.send('b', 'y', 3)
    await rt.stop()
    assert.deepEqual(out, [['a', 'x'], ['b', 'y']])
    assert.equal(seen.length, 1)
    assert.deepEqual([seen[0]!.reason, seen[0]!.processorName, seen[0]!.offset], ['processing', 'sink', 1])
    assert.equal(rt.metrics().droppedRecords.processing, 1)
  })

  it('put in a store is refused at the put, naming the store, the key and the type', () => {
    const topology = new Topology()
      .addSource('src', 'in')
      .addProcessor(
        'tally',
        () => {
          let store: KeyValueStore<string | number, string>
          return {
            init(c: ProcessorContext) {
              store = c.getStateStore('tally')
            },
            process(r: StreamRecord<string, string>) {
              store.put(r.value === 'num' ? Number(r.key) : r.key, r.value)
            },
          }
        },
        'src',
      )
      .addStateStore(Stores.persistentKeyValueStore('tally', { keySerde: Serdes.String() as Serde<string | number>, valueSerde: Serdes.String() }), 'tally')
    const d = new TopologyTestDriver(topology)
    const input = d.createInputTopic<string, string>('in')
    input.pipeInput('a', 'x', 1)
    assert.throws(
      () => input.pipeInput('7', 'num', 2),
      (e: unknown) => e instanceof PunctualError && e.code === 'PROCESSING' && /in processor "tally" .*: store "tally" cannot take key 7: its key serde Serdes\.String\(\) takes a string$/.test(e.message),
    )
    assert.deepEqual([...d.getKeyValueStore<string, string>('tally')!.all()], [['a', 'x']])
  })

  it('put in a store without a key serde: a key that is not a string, number, bigint or boolean is refused', () => {
    const store = Stores.inMemoryKeyValueStore<string, string>('plain').build()
    store.put('a', 'x')
    assert.throws(
      () => store.put({ id: 1 } as unknown as string, 'y'),
      (e: unknown) => e instanceof PunctualError && e.code === 'INVALID_ARGUMENT' && e.message === 'store "plain" cannot take key (an object): without a key serde a store key is a string, number, bigint or boolean',
    )
  })
})

describe('a subscriber that throws (issue 39)', () => {
  function subscribed(errorHandler?: (ctx: ErrorContext) => 'continue' | 'fail') {
    const rt = new EmbeddedRuntime(new Topology().addSource('src', 'in').addSink('sink', 'out', {}, 'src'), {
      applicationId: 'subscriber-throws',
      logger: silentLogger,
      ...(errorHandler === undefined ? {} : { errorHandler }),
    })
    const got: string[] = []
    rt.subscribe<string, string>('out', (r) => {
      if (r.value === 'bad') throw new TypeError('listener refused')
      got.push(r.value!)
    })
    const errors: Error[] = []
    rt.on('error', (e) => errors.push(e))
    return { rt, got, errors }
  }

  it('goes to the error handler as a processor that throws: under logAndContinue the next record is delivered', async () => {
    const seen: ErrorContext[] = []
    const { rt, got, errors } = subscribed((ctx) => {
      seen.push(ctx)
      return 'continue'
    })
    await rt.start()
    const p = rt.producer<string, string>('in')
    for (const v of ['a', 'bad', 'b']) p.send('k', v, 1)
    await rt.stop()
    assert.deepEqual(got, ['a', 'b'])
    assert.deepEqual(errors, [])
    assert.equal(seen.length, 1)
    const ctx = seen[0]!
    assert.deepEqual([ctx.reason, ctx.taskId, ctx.topic, ctx.partition, ctx.offset], ['processing', 'subscriber', 'out', 0, 1])
    assert.equal(ctx.message, 'subscriber of topic "out" threw at partition 0 offset 1: listener refused')
    assert.ok(ctx.error instanceof TypeError)
  })

  it('stops the runtime by default, with a PROCESSING error naming the topic and position, the listener error as cause', async () => {
    const { rt, got, errors } = subscribed()
    await rt.start()
    const p = rt.producer<string, string>('in')
    for (const v of ['a', 'bad', 'b']) p.send('k', v, 1)
    await turns(20)
    assert.equal(rt.state, 'ERROR')
    assert.deepEqual(got, ['a'])
    assert.equal(errors.length, 1)
    const err = errors[0] as PunctualError
    assert.ok(err instanceof PunctualError)
    assert.equal(err.code, 'PROCESSING')
    assert.equal(err.message, 'subscriber of topic "out" threw at partition 0 offset 1: listener refused')
    assert.ok(err.cause instanceof TypeError)
    await assert.rejects(rt.stop(), (e: unknown) => e === err)
  })
})

describe('a failure at start', () => {
  it('is reported once: start() rejects with it, no error event, and stop() resolves', async () => {
    const topology = new Topology().addSource('src', 'in').addProcessor(
      'p',
      () => ({
        init(c: ProcessorContext) {
          c.schedule({ type: PunctuationType.WALL_CLOCK_TIME, intervalMs: 0 }, () => {})
        },
        process() {},
      }),
      'src',
    )
    const { logger, lines } = capturingLogger()
    const rt = new EmbeddedRuntime(topology, { applicationId: 'bad-schedule', logger })
    const events: Error[] = []
    rt.on('error', (e) => events.push(e))
    await assert.rejects(rt.start(), (e: unknown) => e instanceof PunctualError && e.code === 'INVALID_CONFIG' && /"p"/.test(e.message))
    assert.equal(rt.state, 'ERROR')
    await rt.stop()
    assert.deepEqual(events, [])
    assert.deepEqual(lines.filter((l) => l.level === 'error'), [])
  })
})

describe('logging', () => {
  it('takes a pino logger: lifecycle events and errors come out as its JSON lines, with the application id bound', async () => {
    const out: Array<Record<string, unknown>> = []
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString().split('\n')) if (line !== '') out.push(JSON.parse(line) as Record<string, unknown>)
        done()
      },
    })
    const logger: Logger = pino({ level: 'info' }, sink)
    const rt = new EmbeddedRuntime(chain(), { applicationId: 'with-pino', logger })
    await rt.start()
    rt.producer<string, string>('in').send('k', 'bad', 1)
    await turns(20)
    await assert.rejects(rt.stop())
    await turns(5)
    const started = out.find((l) => l.msg === 'started in memory (no state directory)')
    assert.ok(started, JSON.stringify(out))
    assert.equal(started.applicationId, 'with-pino')
    assert.equal(started.tasks, '0_0')
    const failed = out.find((l) => l.level === 50)
    assert.ok(failed, 'the failure is logged at error level when nobody listens for it')
    assert.match(String(failed.msg), /stopped on an error: task 0_0: processing error in processor "check"/)
    assert.match(String((failed.err as { stack: string }).stack), /PunctualError/)
  })

  it('the default logger writes readable lines: level, message, fields, and the stack of an error with its cause', () => {
    const written: string[] = []
    const logger = createConsoleLogger({ write: (l) => written.push(l) })
    logger.debug({}, 'not shown at the default level')
    const cause = new TypeError('inner')
    logger.error({ taskId: '0_1', offset: 7, err: new PunctualError('PROCESSING', 'outer', { cause }) }, 'it failed')
    assert.equal(written.length, 1)
    const [first, ...rest] = written[0]!.split('\n')
    assert.match(first!, /^\d{4}-\d\d-\d\dT[\d:.]+Z ERROR it failed \(taskId=0_1 offset=7\)$/)
    assert.match(rest.join('\n'), /PunctualError: outer\n[\s\S]*caused by: TypeError: inner/)
  })
})
