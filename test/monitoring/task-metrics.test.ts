import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { BufferConfig, PunctuationType, Serdes, StateDescriptors, StreamsBuilder, Suppressed, TimeWindows, Topology } from '../../src/index.js'
import type { KeyedProcessorContext, ProcessorContext, Windowed } from '../../src/index.js'
import { TopologyTestDriver } from '../../src/testing/index.js'
import { sumMetrics, TaskMetrics } from '../../src/metrics.js'

/**
 * A keyed processor: per record a user event-time timer 100 ms on and a processing-time one at 1,000,000;
 * a value state with an event-time TTL of 50 ms (one TTL timer per key).
 */
function timersTopology(): Topology {
  return new Topology().addSource('in', 'input').addKeyedProcessor<string, string, string, string>(
    'keyed',
    () => {
      let ctx: KeyedProcessorContext<string, string, string>
      return {
        init(c) {
          ctx = c
        },
        process(r) {
          ctx.getState(StateDescriptors.value<string>('last', { ttl: { ttlMs: 50, timeDomain: 'event' } })).update(r.value)
          ctx.timers.registerEventTimeTimer(r.timestamp + 100)
          ctx.timers.registerProcessingTimeTimer(1_000_000)
        },
      }
    },
    'in',
  )
}

describe('task metrics (TopologyTestDriver)', () => {
  it('stream time, its lag behind the wall clock, and how late records came', () => {
    const driver = new TopologyTestDriver(new Topology().addSource('in', 'input'), { wallClockStartMs: 10_000 })
    const input = driver.createInputTopic('input', Serdes.String(), Serdes.String())
    assert.equal(driver.metrics().tasks[0]?.streamTime, undefined, 'no stream time before a record')
    // Stream time 1000; then 400 and 900 come 600 and 100 behind it; 1200 moves it on.
    for (const ts of [1000, 400, 900, 1200]) input.pipeInput('k', 'v', ts)
    const [task] = driver.metrics().tasks
    assert.equal(task?.taskId, '0_0')
    assert.equal(task.processedRecords, 4)
    assert.equal(task.streamTime, 1200)
    assert.equal(task.streamTimeLagMs, 10_000 - 1200)
    assert.deepEqual(task.recordLateness, { avgMs: (600 + 100) / 4, maxMs: 600 })
  })

  it('pending timers by kind and domain, as they are registered and fire', () => {
    const driver = new TopologyTestDriver(timersTopology())
    const input = driver.createInputTopic('input', Serdes.String(), Serdes.String())
    input.pipeInput('a', 'x', 0)
    input.pipeInput('b', 'x', 10)
    assert.deepEqual(driver.metrics().tasks[0]?.pendingTimers, { user: { event: 2, processing: 2 }, ttl: { event: 2, processing: 0 } })
    // Stream time 105: a's user timer (100) fired, and both TTL timers (50, 60).
    input.pipeInput('c', 'x', 105)
    assert.deepEqual(driver.metrics().tasks[0]?.pendingTimers, { user: { event: 2, processing: 3 }, ttl: { event: 1, processing: 0 } })
  })

  it('wall-clock punctuation lateness in buckets; the next due times', () => {
    const topology = new Topology().addSource('in', 'input').addProcessor(
      'p',
      () => ({
        init(ctx: ProcessorContext) {
          ctx.schedule({ type: PunctuationType.WALL_CLOCK_TIME, intervalMs: 1000, startTime: 1000 }, () => {})
          ctx.schedule({ type: PunctuationType.STREAM_TIME, intervalMs: 10, startTime: 5 }, () => {})
        },
        process() {},
      }),
      'in',
    )
    const driver = new TopologyTestDriver(topology, { wallClockStartMs: 0 })
    driver.advanceWallClockTime(1000) // at 1000: due 1000, on time
    driver.advanceWallClockTime(1007) // at 2007: due 2000, 7 ms late
    driver.advanceWallClockTime(2400) // at 4407: due 3000 (4000 skipped), 1407 ms late
    const task = driver.metrics().tasks[0]
    const h = task?.punctuationLateness
    assert.equal(h?.count, 3)
    assert.equal(h?.sum, 0 + 7 + 1407)
    const at = (le: number): number | undefined => h?.buckets.find((b) => b.le === le)?.count
    assert.deepEqual([at(1), at(5), at(10), at(1000), at(2500), at(10_000)], [1, 1, 2, 2, 3, 3], 'cumulative counts')
    assert.deepEqual(task?.nextPunctuation, { wallClock: 5000, streamTime: 5 })
    assert.equal(task?.punctuations, 3)
  })

  it('what a suppression buffers, until its windows close', () => {
    const b = new StreamsBuilder()
    b.stream<string, string>('input')
      .groupByKey()
      .windowedBy(TimeWindows.ofSizeAndGrace(100, 0))
      .count({ name: 'counts' })
      // A bounded buffer: unbounded final results of a plain count keep no buffer (their windows are in the window store).
      .suppress(Suppressed.untilWindowCloses<Windowed<string>, number>(BufferConfig.maxRecords(100).shutDownWhenFull()).withName('final'))
      .toStream()
      .to('out', { keySerde: Serdes.JSON<Windowed<string>>(), valueSerde: Serdes.Long() })
    const driver = new TopologyTestDriver(b.build())
    const input = driver.createInputTopic('input', Serdes.String(), Serdes.String())
    input.pipeInput('a', 'x', 10)
    input.pipeInput('b', 'x', 20)
    input.pipeInput('a', 'x', 30)
    const [buffer] = driver.metrics().tasks[0]?.suppressionBuffers ?? []
    assert.equal(buffer?.store, 'final-store')
    assert.equal(buffer.records, 2, 'one entry per window and key')
    assert.ok(buffer.bytes > 0)
    input.pipeInput('c', 'x', 150)
    assert.equal(driver.metrics().tasks[0]?.suppressionBuffers[0]?.records, 1, 'the first window closed; c’s is open')
  })

  it('records written, end-to-end latency, input positions', () => {
    const b = new StreamsBuilder()
    b.stream<string, string>('input')
      .filter((_k, v) => v !== 'drop')
      .to('out')
    const driver = new TopologyTestDriver(b.build(), { wallClockStartMs: 10_000 })
    const input = driver.createInputTopic('input', Serdes.String(), Serdes.String())
    input.pipeInput('a', 'x', 1000)
    driver.advanceWallClockTime(500)
    input.pipeInput('b', 'drop', 2000)
    input.pipeInput('c', 'x', 9000)
    const task = driver.metrics().tasks[0]
    assert.equal(task?.processedRecords, 3)
    assert.equal(task.emittedRecords, 2, 'the filtered record is not written')
    assert.equal(driver.metrics().emittedRecords, 2)
    // The wall clock when processed minus the timestamp: 9000, 8500, 1500.
    assert.deepEqual(task.e2eLatency, { avgMs: (9000 + 8500 + 1500) / 3, minMs: 1500, maxMs: 9000 })
    assert.deepEqual(task.inputs, [{ topic: 'input', partition: 0, position: 3, endOffset: 3, lag: 0 }])
    assert.deepEqual(task.processors.map((p) => p.records), [3, 3, 2], 'the source and the filter saw 3, the sink 2')
    assert.ok(task.processLatencyAvgMs >= 0)
  })

  it('the earliest timers, and state removed by TTL', () => {
    const driver = new TopologyTestDriver(timersTopology())
    const input = driver.createInputTopic('input', Serdes.String(), Serdes.String())
    assert.deepEqual(driver.metrics().tasks[0]?.nextTimer, { event: undefined, processing: undefined })
    input.pipeInput('a', 'x', 0)
    input.pipeInput('b', 'x', 10)
    // TTL timers at 50 and 60 come before the user timers at 100 and 110.
    assert.deepEqual(driver.metrics().tasks[0]?.nextTimer, { event: 50, processing: 1_000_000 })
    assert.equal(driver.metrics().tasks[0]?.ttlExpired, 0)
    input.pipeInput('c', 'x', 105)
    const task = driver.metrics().tasks[0]
    assert.equal(task?.ttlExpired, 2, 'a and b expired at 50 and 60')
    assert.deepEqual(task.nextTimer, { event: 110, processing: 1_000_000 })
  })

  it('punctuation counts and latency', () => {
    let calls = 0
    const topology = new Topology().addSource('in', 'input').addProcessor(
      'p',
      () => ({
        init(ctx: ProcessorContext) {
          ctx.schedule({ type: PunctuationType.STREAM_TIME, intervalMs: 10 }, () => {
            calls++
          })
        },
        process() {},
      }),
      'in',
    )
    const driver = new TopologyTestDriver(topology)
    const input = driver.createInputTopic('input', Serdes.String(), Serdes.String())
    for (const ts of [0, 10, 20]) input.pipeInput('k', 'v', ts)
    const task = driver.metrics().tasks[0]
    assert.equal(task?.punctuations, calls)
    assert.equal(calls, 3)
    assert.ok(task.punctuateLatency.maxMs >= task.punctuateLatency.avgMs && task.punctuateLatency.avgMs >= 0)
  })

  it('suppression entries spilled to disk', () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'punctual-metrics-spill-'))
    try {
      const b = new StreamsBuilder()
      b.table<string, string>('input')
        .suppress(Suppressed.untilTimeLimit<string, string>(1000, BufferConfig.maxRecords(2).spillToDiskWhenFull()).withName('s'))
        .toStream()
        .to('out')
      const driver = new TopologyTestDriver(b.build(), { stateDir })
      const input = driver.createInputTopic('input', Serdes.String(), Serdes.String())
      for (const [i, key] of ['a', 'b', 'c', 'd', 'e'].entries()) input.pipeInput(key, 'x', i)
      const [buffer] = driver.metrics().tasks[0]?.suppressionBuffers ?? []
      assert.equal(buffer?.records, 5)
      assert.equal(buffer.spilled, 3, 'two in memory, the rest on disk')
      driver.close()
    } finally {
      rmSync(stateDir, { recursive: true, force: true })
    }
  })
})

describe('a runtime snapshot of its tasks counters', () => {
  it('sums every task, dropped records by reason, and hands out a copy a caller may change', () => {
    const a = new TaskMetrics()
    const b = new TaskMetrics()
    a.processedRecords = 3
    b.processedRecords = 4
    a.emittedRecords = 1
    b.punctuations = 2
    a.droppedRecords.late = 5
    b.droppedRecords.late = 1
    b.droppedRecords.deserialization = 2
    const sum = sumMetrics([a, b])
    assert.deepEqual(
      { processed: sum.processedRecords, emitted: sum.emittedRecords, punctuations: sum.punctuations, late: sum.droppedRecords.late, deserialization: sum.droppedRecords.deserialization },
      { processed: 7, emitted: 1, punctuations: 2, late: 6, deserialization: 2 },
    )
    ;(sum.droppedRecords as Record<string, number>).late = 0
    assert.equal(a.droppedRecords.late, 5, "the first task's counters are not the snapshot's")
    assert.equal(sumMetrics([]).droppedRecords.late, 0)
  })
})
