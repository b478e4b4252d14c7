import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ErrorHandlers, NO_HEADERS, PunctualError, PunctuationType, Serdes, Topology } from '../../src/index.js'
import type { ErrorContext, ErrorHandler, ProcessorContext, StreamRecord } from '../../src/index.js'
import { TopicRegistry } from '../../src/embedded/log/topics.js'
import { StreamTask } from '../../src/processor/internal/task.js'
import type { TaskCheckpoint } from '../../src/processor/internal/task-config.js'
import type { InputPartition } from '../../src/processor/record-io.js'
import { ManualClock } from '../../src/time/clock.js'
import { silentLogger } from '../../src/util/logger.js'
import { TopologyTestDriver } from '../../src/testing/index.js'

const enc = (s: string): Uint8Array => Buffer.from(s)

/**
 * One task over topics "a" and "b" (read by one source, so co-partitioned), recording what it processes.
 * `behind` holds the topics whose partition says records wait at its source (not caught up, as a Kafka
 * partition not yet fetched to its end does).
 */
function twoInputTask(options: { maxTaskIdleMs?: number; errorHandler?: ErrorHandler; checkpoint?: TaskCheckpoint; throwOn?: string } = {}) {
  const behind = new Set<string>()
  const seen: Array<StreamRecord<string, string>> = []
  const streamTimes: Array<number | undefined> = []
  let ctx: ProcessorContext | undefined
  const topology = new Topology().addSource('src', ['a', 'b']).addProcessor(
    'p',
    () => ({
      init(c: ProcessorContext) {
        ctx = c
      },
      process(r: StreamRecord<string, string>) {
        if (r.value === options.throwOn) throw new Error(`cannot handle ${r.value}`)
        seen.push(r)
        streamTimes.push(ctx?.currentStreamTimeMs())
      },
    }),
    'src',
  )
  const topics = new TopicRegistry(1)
  topics.create('a', 1)
  topics.create('b', 1)
  const clock = new ManualClock(1000)
  const [sub] = topology.subtopologies()
  const io = topics.taskIo()
  const inputs = (topic: string, partition: number): InputPartition | undefined => {
    const input = io.inputs(topic, partition)
    if (input === undefined) return undefined
    return {
      topic,
      partition,
      startOffset: () => input.startOffset(),
      endOffset: () => input.endOffset(),
      read: (offset, into) => input.read(offset, into),
      caughtUp: () => !behind.has(topic),
    }
  }
  const task = new StreamTask({
    subtopology: sub!,
    partition: 0,
    inputs,
    collector: io.collector,
    clock,
    maxTaskIdleMs: options.maxTaskIdleMs ?? 0,
    stateDir: '/tmp/punctual-test',
    errorHandler: options.errorHandler ?? ErrorHandlers.logAndContinue(silentLogger),
    checkpoint: options.checkpoint,
  })
  task.init()
  const put = (topic: string, value: string, ts: number): void => {
    topics.sendBytes(topic, 0, enc('k'), enc(value), ts, NO_HEADERS)
  }
  return { task, seen, streamTimes, put, clock, topics, behind, values: () => seen.map((r) => r.value) }
}

describe('record choice across the partitions of a task (SEMANTICS 1)', () => {
  it('takes the next record from the partition whose head has the smallest timestamp', () => {
    const t = twoInputTask()
    t.put('a', 'a5', 5)
    t.put('a', 'a1', 1)
    t.put('b', 'b3', 3)
    t.put('b', 'b4', 4)
    assert.equal(t.task.process(Infinity), 4)
    assert.deepEqual(t.values(), ['b3', 'b4', 'a5', 'a1'])
  })

  it('breaks ties by partition order (the first source topic)', () => {
    const t = twoInputTask()
    t.put('b', 'b7', 7)
    t.put('a', 'a7', 7)
    t.task.process(Infinity)
    assert.deepEqual(t.values(), ['a7', 'b7'])
  })

  it('stream time is the largest timestamp processed and never decreases', () => {
    const t = twoInputTask()
    t.put('a', 'x', 10)
    t.task.process(Infinity)
    t.put('a', 'y', 4)
    t.task.process(Infinity)
    assert.deepEqual(t.streamTimes, [10, 10])
    assert.equal(t.task.streamTimeOrUndefined(), 10)
  })

  it('stream time is unknown before the first record', () => {
    assert.equal(twoInputTask().task.streamTimeOrUndefined(), undefined)
  })

  it('stream time is restored from a checkpoint', () => {
    const t = twoInputTask({ checkpoint: { streamTime: 77, lastFires: {}, positions: {} } })
    assert.equal(t.task.streamTimeOrUndefined(), 77)
    t.put('a', 'x', 5)
    t.task.process(Infinity)
    assert.deepEqual(t.streamTimes, [77])
  })
})

describe('maxTaskIdleMs', () => {
  it('0 (the default): processes available partitions at once', () => {
    const t = twoInputTask()
    t.put('a', 'a1', 1)
    assert.equal(t.task.process(Infinity), 1)
  })

  it('waits up to maxTaskIdleMs for an empty partition, then processes the others', () => {
    const t = twoInputTask({ maxTaskIdleMs: 100 })
    t.put('a', 'a1', 1)
    assert.equal(t.task.process(Infinity), 0)
    assert.equal(t.task.nextWallClockDue(), 1100, 'the runtime is asked to wake up when the wait ends')
    t.clock.advance(99)
    assert.equal(t.task.process(Infinity), 0)
    t.clock.advance(1)
    assert.equal(t.task.process(Infinity), 1)
    assert.deepEqual(t.values(), ['a1'])
  })

  it('0: waits for an empty partition whose source holds records not yet fetched, until they come (KIP-695)', () => {
    const t = twoInputTask()
    t.behind.add('b')
    t.put('a', 'a5', 5)
    t.put('a', 'a6', 6)
    assert.equal(t.task.process(Infinity), 0)
    assert.equal(t.task.nextWallClockDue(), Infinity, 'no deadline: the fetch that brings them wakes the task')
    t.clock.advance(60_000)
    assert.equal(t.task.process(Infinity), 0, 'however long it takes')
    t.put('b', 'b2', 2)
    // b's record comes first; then b is empty and still behind: the task waits again.
    assert.equal(t.task.process(Infinity), 1)
    t.behind.delete('b')
    assert.equal(t.task.process(Infinity), 2, 'caught up: the others are processed at once')
    assert.deepEqual(t.values(), ['b2', 'a5', 'a6'])
  })

  it('above 0: waits for a partition behind as for one caught up, then maxTaskIdleMs once it is caught up', () => {
    const t = twoInputTask({ maxTaskIdleMs: 100 })
    t.behind.add('b')
    t.put('a', 'a1', 1)
    assert.equal(t.task.process(Infinity), 0)
    t.clock.advance(500)
    assert.equal(t.task.process(Infinity), 0, 'maxTaskIdleMs does not count while the partition is behind')
    t.behind.delete('b')
    assert.equal(t.task.process(Infinity), 0, 'the idle wait starts now')
    assert.equal(t.task.nextWallClockDue(), 1600)
    t.clock.advance(100)
    assert.equal(t.task.process(Infinity), 1)
  })

  it('-1: never waits, not even for records known to wait at the source', () => {
    const t = twoInputTask({ maxTaskIdleMs: -1 })
    t.behind.add('b')
    t.put('a', 'a1', 1)
    assert.equal(t.task.process(Infinity), 1)
  })

  it('stops waiting as soon as the empty partition gets data, and orders by timestamp', () => {
    const t = twoInputTask({ maxTaskIdleMs: 100 })
    t.put('a', 'a5', 5)
    assert.equal(t.task.process(Infinity), 0)
    t.put('b', 'b2', 2)
    assert.equal(t.task.process(1), 1)
    assert.deepEqual(t.values(), ['b2'])
  })
})

describe('bad input is counted, reported and skipped; nothing else is lost (SEMANTICS 1, 7)', () => {
  function recordingHandler(response: 'continue' | 'fail' = 'continue') {
    const calls: ErrorContext[] = []
    const handler: ErrorHandler = (c) => {
      calls.push(c)
      return response
    }
    return { calls, handler }
  }

  it('a negative timestamp: dropped, counted as invalid-timestamp, reported with topic, partition and offset', () => {
    const { calls, handler } = recordingHandler()
    const t = twoInputTask({ errorHandler: handler })
    t.put('a', 'ok1', 1)
    t.put('a', 'bad', -5)
    t.put('a', 'ok2', 2)
    t.task.process(Infinity)
    assert.deepEqual(t.values(), ['ok1', 'ok2'])
    assert.equal(t.task.metrics.droppedRecords['invalid-timestamp'], 1)
    assert.equal(calls.length, 1)
    assert.deepEqual([calls[0]?.reason, calls[0]?.topic, calls[0]?.partition, calls[0]?.offset], ['invalid-timestamp', 'a', 0, 1])
    assert.equal(t.task.streamTimeOrUndefined(), 2)
  })

  it('a non-integer timestamp is invalid too', () => {
    const t = twoInputTask()
    t.put('a', 'bad', 1.5)
    t.task.process(Infinity)
    assert.deepEqual(t.values(), [])
    assert.equal(t.task.metrics.droppedRecords['invalid-timestamp'], 1)
  })

  it('an undeserializable value: dropped, counted as deserialization, the next record processed', () => {
    const { calls, handler } = recordingHandler()
    const t = twoInputTask({ errorHandler: handler })
    t.topics.sendBytes('a', 0, enc('k'), Uint8Array.from([0xff, 0xfe]), 1, NO_HEADERS) // not UTF-8
    t.put('a', 'fine', 2)
    t.task.process(Infinity)
    assert.deepEqual(t.values(), ['fine'])
    assert.equal(t.task.metrics.droppedRecords.deserialization, 1)
    assert.match(calls[0]?.message ?? '', /deserialization error at topic a partition 0 offset 0: invalid UTF-8/)
  })

  it('a processor that throws: reported as processing, counted, the next record processed', () => {
    const { calls, handler } = recordingHandler()
    const t = twoInputTask({ errorHandler: handler, throwOn: 'poison' })
    t.put('a', 'poison', 1)
    t.put('a', 'fine', 2)
    t.task.process(Infinity)
    assert.deepEqual(t.values(), ['fine'])
    assert.equal(t.task.metrics.droppedRecords.processing, 1)
    assert.equal(calls[0]?.reason, 'processing')
  })

  it('a timestamp a processor forwards is checked at forward, naming that processor (issue 39)', () => {
    const { calls, handler } = recordingHandler()
    const seen: number[] = []
    const topology = new Topology()
      .addSource('src', 'in')
      .addProcessor(
        'stamp',
        () => {
          let ctx: ProcessorContext<string, string>
          return {
            init(c: ProcessorContext<string, string>) {
              ctx = c
            },
            process(r: StreamRecord<string, string>) {
              ctx.forward({ ...r, timestamp: Number(r.value) })
            },
          }
        },
        'src',
      )
      .addProcessor('after', () => ({ process: (r: StreamRecord<string, string>) => void seen.push(r.timestamp) }), 'stamp')
      .addSink('sink', 'out', {}, 'stamp')
    const d = new TopologyTestDriver(topology, { errorHandler: handler })
    const input = d.createInputTopic<string, string>('in')
    for (const v of ['NaN', '1e20', '-5', '1.5', 'Infinity', '7']) input.pipeInput('k', v, 1)
    assert.deepEqual(seen, [7], 'no child sees a bad timestamp')
    assert.deepEqual(
      calls.map((c) => [c.reason, c.processorName, (c.error as PunctualError).code]),
      Array.from({ length: 5 }, () => ['processing', 'stamp', 'INVALID_TIMESTAMP']),
    )
    assert.deepEqual(
      calls.map((c) => (c.error as Error).message),
      ['NaN', '100000000000000000000', '-5', '1.5', 'Infinity'].map((ts) => `processor "stamp" forwarded a record with timestamp ${ts}: a timestamp is an integer epoch millisecond >= 0`),
    )
    assert.equal(d.createOutputTopic('out').getQueueSize(), 1)
    // By default the call that ran it fails, naming the processor (not the sink below it).
    const strict = new TopologyTestDriver(topology)
    assert.throws(
      () => strict.createInputTopic<string, string>('in').pipeInput('k', '-5', 1),
      (e: unknown) => e instanceof PunctualError && e.code === 'PROCESSING' && /processing error in processor "stamp" .*: processor "stamp" forwarded a record with timestamp -5/.test(e.message),
    )
  })

  it('logAndFail stops with an error carrying the code and the position', () => {
    const t = twoInputTask({ errorHandler: ErrorHandlers.logAndFail(silentLogger) })
    t.put('a', 'bad', -1)
    assert.throws(
      () => t.task.process(Infinity),
      (err: unknown) => err instanceof PunctualError && err.code === 'INVALID_TIMESTAMP' && /topic a partition 0 offset 0/.test(err.message),
    )
  })

  it('a throwing punctuation is reported as punctuation and does not stop other schedules', () => {
    const { calls, handler } = recordingHandler()
    const fired: string[] = []
    const topology = new Topology().addSource('src', 'a').addProcessor(
      'p',
      () => ({
        init(c: ProcessorContext) {
          c.schedule({ type: PunctuationType.WALL_CLOCK_TIME, intervalMs: 10, name: 'boom' }, () => {
            throw new Error('boom')
          })
          c.schedule({ type: PunctuationType.WALL_CLOCK_TIME, intervalMs: 10 }, () => fired.push('ok'))
        },
        process() {},
      }),
      'src',
    )
    const topics = new TopicRegistry(1)
    const clock = new ManualClock(0)
    const task = new StreamTask({ subtopology: topology.subtopologies()[0]!, partition: 0, ...topics.taskIo(), clock, maxTaskIdleMs: 0, stateDir: '/tmp/punctual-test', errorHandler: handler })
    task.init()
    task.punctuateWallClock(10)
    task.punctuateWallClock(20)
    assert.deepEqual(fired, ['ok', 'ok'])
    assert.equal(calls.length, 2)
    assert.match(calls[0]?.message ?? '', /task 0_0: punctuation error in processor "p" in punctuation "boom": boom/)
  })
})

describe('checkpoint', () => {
  it('records the next offset to read per input partition and the last fire times', () => {
    const t = twoInputTask()
    t.put('a', 'x', 1)
    t.put('a', 'y', 2)
    t.put('b', 'z', 3)
    t.task.process(2)
    const c = t.task.checkpoint()
    assert.deepEqual(c.positions, { 'a:0': 2, 'b:0': 0 })
    assert.equal(c.streamTime, 2)
  })

  it('a task restored from positions resumes after the processed records', () => {
    const t = twoInputTask()
    for (let i = 0; i < 5; i++) t.put('a', `r${i}`, i)
    t.task.process(3)
    const positions = t.task.checkpoint().positions
    const seen: string[] = []
    const topology2 = new Topology().addSource('src', ['a', 'b']).addProcessor(
      'p',
      () => ({
        process(r: StreamRecord<string, string>) {
          seen.push(r.value)
        },
      }),
      'src',
    )
    const task2 = new StreamTask({
      subtopology: topology2.subtopologies()[0]!,
      partition: 0,
      ...t.topics.taskIo(),
      clock: t.clock,
      maxTaskIdleMs: 0,
      stateDir: '/tmp/punctual-test',
      errorHandler: ErrorHandlers.logAndContinue(silentLogger),
      checkpoint: { streamTime: 2, lastFires: {}, positions },
    })
    task2.init()
    task2.process(Infinity)
    assert.deepEqual(seen, ['r3', 'r4'])
  })
})

describe('serdes per topic', () => {
  it('JSON values deserialize per source serde', () => {
    const seen: unknown[] = []
    const topology = new Topology().addSource('src', 'j', { valueSerde: Serdes.JSON<{ n: number }>() }).addProcessor(
      'p',
      () => ({
        process(r: StreamRecord<string, { n: number }>) {
          seen.push(r.value.n)
        },
      }),
      'src',
    )
    const topics = new TopicRegistry(1)
    const task = new StreamTask({ subtopology: topology.subtopologies()[0]!, partition: 0, ...topics.taskIo(), clock: new ManualClock(), maxTaskIdleMs: 0, stateDir: '/tmp/punctual-test', errorHandler: ErrorHandlers.logAndContinue(silentLogger) })
    task.init()
    topics.sendBytes('j', 0, null, enc('{"n":4}'), 1, NO_HEADERS)
    topics.sendBytes('j', 0, null, enc('{not json'), 2, NO_HEADERS)
    topics.sendBytes('j', 0, null, enc('{"n":5}'), 3, NO_HEADERS)
    task.process(Infinity)
    assert.deepEqual(seen, [4, 5])
    assert.equal(task.metrics.droppedRecords.deserialization, 1)
  })
})
