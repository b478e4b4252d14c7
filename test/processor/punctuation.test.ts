import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { PunctualError, PunctuationType, Serdes, Topology } from '../../src/index.js'
import type { Cancellable, ProcessorContext, ScheduleSpec } from '../../src/index.js'
import { TopologyTestDriver } from '../../src/testing/index.js'
import type { TaskCheckpoint } from '../../src/processor/internal/task-config.js'
import { punctuationTopology } from '../helpers/collect.js'

const STREAM = PunctuationType.STREAM_TIME
const WALL = PunctuationType.WALL_CLOCK_TIME

function driverWith(schedules: Array<{ id: string; spec: ScheduleSpec }>, wallClockStartMs = 0) {
  const t = punctuationTopology(schedules)
  const driver = new TopologyTestDriver(t.topology, { wallClockStartMs })
  const input = driver.createInputTopic('input', Serdes.String(), Serdes.String())
  return { ...t, driver, pipe: (ts: number) => input.pipeInput('k', 'v', ts) }
}

describe('stream-time punctuation', () => {
  it('fires once per check with missed points collapsed, keeping the grid phase', () => {
    const { fires, pipe } = driverWith([{ id: 'p', spec: { type: STREAM, intervalMs: 10 } }])
    for (const ts of [20, 25, 142, 145, 155, 159, 160]) pipe(ts)
    assert.deepEqual(fires.map((f) => f.ts), [20, 142, 155, 160])
  })

  it('does not fire before the first record: stream time is unknown', () => {
    const { fires, driver } = driverWith([{ id: 'p', spec: { type: STREAM, intervalMs: 10 } }])
    driver.advanceWallClockTime(1000)
    assert.equal(fires.length, 0)
  })

  it('passes stream time (not the due time) to the callback', () => {
    const { fires, pipe } = driverWith([{ id: 'p', spec: { type: STREAM, intervalMs: 10, startTime: 15 } }])
    pipe(37)
    assert.deepEqual(fires, [{ id: 'p', ts: 37 }])
  })

  it('anchored with unknown stream time: first due at the anchor (14 no, 15 yes, 24 no, 25 yes)', () => {
    const { fires, pipe } = driverWith([{ id: 'p', spec: { type: STREAM, intervalMs: 10, startTime: 15 } }])
    for (const ts of [14, 15, 24, 25]) pipe(ts)
    assert.deepEqual(fires.map((f) => f.ts), [15, 25])
  })

  it('anchored in the past relative to stream time: first fire strictly after now', () => {
    const { fires, pipe, context } = driverWith([])
    pipe(100)
    context().schedule({ type: STREAM, intervalMs: 10, startTime: 90 }, (ts) => fires.push({ id: 'late', ts }))
    pipe(100) // grid point equal to now is skipped
    pipe(109)
    pipe(110)
    assert.deepEqual(fires, [{ id: 'late', ts: 110 }])
  })

  it('stream time never decreases: an out-of-order record does not fire or rewind', () => {
    const { fires, pipe, context } = driverWith([{ id: 'p', spec: { type: STREAM, intervalMs: 10 } }])
    pipe(50)
    pipe(3)
    assert.equal(context().currentStreamTimeMs(), 50)
    pipe(59)
    pipe(60)
    assert.deepEqual(fires.map((f) => f.ts), [50, 60])
  })

  it('fires after the record is processed', () => {
    const order: string[] = []
    const topology = new Topology().addSource('in', 'input').addProcessor(
      'p',
      () => ({
        init(ctx: ProcessorContext) {
          ctx.schedule({ type: STREAM, intervalMs: 10 }, (ts) => order.push(`punctuate@${ts}`))
        },
        process(r: { timestamp: number }) {
          order.push(`record@${r.timestamp}`)
        },
      }),
      'in',
    )
    const driver = new TopologyTestDriver(topology)
    driver.createInputTopic('input', Serdes.String(), Serdes.String()).pipeInput('k', 'v', 5)
    assert.deepEqual(order, ['record@5', 'punctuate@5'])
  })
})

describe('wall-clock punctuation', () => {
  it('fires with no input at all, missed intervals collapsed', () => {
    const { fires, driver } = driverWith([{ id: 'p', spec: { type: WALL, intervalMs: 10 } }])
    for (const ms of [5, 5, 35, 5]) driver.advanceWallClockTime(ms)
    assert.deepEqual(fires.map((f) => f.ts), [10, 45, 50])
  })

  it('does not fire on records, only when the wall clock advances', () => {
    const { fires, pipe, driver } = driverWith([{ id: 'p', spec: { type: WALL, intervalMs: 10, startTime: 0 } }], 0)
    pipe(1000)
    assert.equal(fires.length, 0)
    driver.advanceWallClockTime(0)
    assert.deepEqual(fires, [{ id: 'p', ts: 0 }])
  })

  it('anchor in the past (KIP-1146): start 90 s, now 101 s, interval 10 s fires at 110 s', () => {
    const { fires, driver } = driverWith([{ id: 'p', spec: { type: WALL, intervalMs: 10_000, startTime: 90_000 } }], 101_000)
    driver.advanceWallClockTime(8_999)
    assert.equal(fires.length, 0)
    driver.advanceWallClockTime(1)
    assert.deepEqual(fires, [{ id: 'p', ts: 110_000 }])
  })

  it('anchor in the future is the first due time', () => {
    const { fires, driver } = driverWith([{ id: 'p', spec: { type: WALL, intervalMs: 100, startTime: 5_000 } }], 1_000)
    driver.advanceWallClockTime(3_999)
    assert.equal(fires.length, 0)
    driver.advanceWallClockTime(1)
    driver.advanceWallClockTime(100)
    assert.deepEqual(fires.map((f) => f.ts), [5_000, 5_100])
  })

  it('cron schedule fires at cron points in its time zone', () => {
    const start = Date.parse('2026-03-28T22:50:00Z') // 23:50 in Berlin (CET)
    const { fires, driver } = driverWith([{ id: 'midnight', spec: { type: WALL, cron: '0 0 * * *', timeZone: 'Europe/Berlin' } }], start)
    driver.advanceWallClockTime(9 * 60_000)
    assert.equal(fires.length, 0)
    driver.advanceWallClockTime(60_000)
    assert.deepEqual(fires.map((f) => new Date(f.ts).toISOString()), ['2026-03-28T23:00:00.000Z'])
    driver.advanceWallClockTime(24 * 3_600_000)
    // The next Berlin midnight is 23 hours later (the spring-forward day is short): collapsed into one call.
    assert.equal(fires.length, 2)
  })

  it('Kafka Streams form schedule(interval, type, callback) works', () => {
    const fires: number[] = []
    const topology = new Topology().addSource('in', 'input').addProcessor(
      'p',
      () => ({
        init(ctx: ProcessorContext) {
          ctx.schedule(10, WALL, (ts) => fires.push(ts))
        },
        process() {},
      }),
      'in',
    )
    const driver = new TopologyTestDriver(topology)
    driver.advanceWallClockTime(25)
    assert.deepEqual(fires, [25])
  })
})

describe('several schedules and cancellation', () => {
  it('simultaneous fires run in order of due time, then registration order', () => {
    const { fires, driver } = driverWith([
      { id: 'a', spec: { type: WALL, intervalMs: 10, startTime: 20 } },
      { id: 'b', spec: { type: WALL, intervalMs: 5, startTime: 15 } },
      { id: 'c', spec: { type: WALL, intervalMs: 10, startTime: 20 } },
    ])
    driver.advanceWallClockTime(20)
    assert.deepEqual(fires.map((f) => f.id), ['b', 'a', 'c'])
  })

  it('a callback may cancel its own schedule: it never fires again', () => {
    let c: Cancellable | undefined
    const fires: number[] = []
    const topology = new Topology().addSource('in', 'input').addProcessor(
      'p',
      () => ({
        init(ctx: ProcessorContext) {
          c = ctx.schedule({ type: WALL, intervalMs: 10 }, (ts) => {
            fires.push(ts)
            c?.cancel()
          })
        },
        process() {},
      }),
      'in',
    )
    const driver = new TopologyTestDriver(topology)
    driver.advanceWallClockTime(10)
    driver.advanceWallClockTime(100)
    assert.deepEqual(fires, [10])
  })

  it('a callback may cancel another schedule due in the same check: it does not fire', () => {
    const fires: string[] = []
    let other: Cancellable | undefined
    const topology = new Topology().addSource('in', 'input').addProcessor(
      'p',
      () => ({
        init(ctx: ProcessorContext) {
          ctx.schedule({ type: WALL, intervalMs: 10 }, () => {
            fires.push('first')
            other?.cancel()
          })
          other = ctx.schedule({ type: WALL, intervalMs: 10 }, () => fires.push('second'))
        },
        process() {},
      }),
      'in',
    )
    const driver = new TopologyTestDriver(topology)
    driver.advanceWallClockTime(10)
    driver.advanceWallClockTime(10)
    assert.deepEqual(fires, ['first', 'first'])
  })

  it('a schedule registered by a callback that is already due fires in the same check', () => {
    const { fires, pipe, context } = driverWith([])
    let registered = false
    context().schedule({ type: STREAM, intervalMs: 100, startTime: 0 }, (ts) => {
      fires.push({ id: 'outer', ts })
      if (!registered) {
        registered = true
        context().schedule({ type: STREAM, intervalMs: 10 }, (t) => fires.push({ id: 'inner', ts: t }))
      }
    })
    pipe(5)
    assert.deepEqual(fires, [
      { id: 'outer', ts: 5 },
      { id: 'inner', ts: 5 },
    ])
  })

  it('a schedule registered later starts from that moment (scenario punctuation-cancel-and-late-schedule)', () => {
    const { fires, pipe, context } = driverWith([])
    const a = context().schedule({ type: STREAM, intervalMs: 10 }, (ts) => fires.push({ id: 'a', ts }))
    pipe(5)
    pipe(10)
    a.cancel()
    pipe(30)
    context().schedule({ type: STREAM, intervalMs: 10, startTime: 33 }, (ts) => fires.push({ id: 'b', ts }))
    pipe(32)
    pipe(34)
    assert.deepEqual(fires, [
      { id: 'a', ts: 5 },
      { id: 'a', ts: 10 },
      { id: 'b', ts: 34 },
    ])
  })

  it('a record forwarded from a punctuation keeps the timestamp given to it', () => {
    const topology = new Topology()
      .addSource('in', 'input')
      .addProcessor(
        'p',
        () => ({
          init(ctx: ProcessorContext<string, string>) {
            ctx.schedule({ type: WALL, intervalMs: 10 }, (now) => {
              ctx.forward({ key: 'tick', value: String(now), timestamp: now, headers: [] })
              ctx.forward({ key: 'old', value: 'x', timestamp: 3, headers: [] })
            })
          },
          process() {},
        }),
        'in',
      )
      .addSink('out', 'output', {}, 'p')
    const driver = new TopologyTestDriver(topology)
    driver.advanceWallClockTime(12)
    const out = driver.createOutputTopic('output', Serdes.String(), Serdes.String()).readRecordsToList()
    assert.deepEqual(out.map((r) => [r.key, r.value, r.timestamp]), [
      ['tick', '12', 12],
      ['old', 'x', 3],
    ])
  })
})

describe('invalid schedule configuration names the processor and the value', () => {
  const bad: Array<[string, ScheduleSpec, RegExp]> = [
    ['interval 0', { type: STREAM, intervalMs: 0 }, /processor "p" schedule: intervalMs must be an integer >= 1, got 0/],
    ['fractional interval', { type: WALL, intervalMs: 1.5 }, /intervalMs must be an integer >= 1, got 1.5/],
    ['negative anchor', { type: WALL, intervalMs: 10, startTime: -1 }, /processor "p" schedule: startTime must be an integer epoch millisecond >= 0, got -1/],
    ['fractional anchor, in a named schedule', { type: WALL, intervalMs: 10, startTime: 2.5, name: 'daily' }, /processor "p" schedule "daily": startTime must be an integer epoch millisecond >= 0, got 2\.5$/],
    ['NaN anchor, shown as NaN (issue 39)', { type: STREAM, intervalMs: 10, startTime: NaN }, /startTime must be an integer epoch millisecond >= 0, got NaN$/],
    ['NaN interval, shown as NaN (issue 39)', { type: STREAM, intervalMs: NaN }, /intervalMs must be an integer >= 1, got NaN$/],
    ['fireOnce without anchor', { type: WALL, intervalMs: 10, onMissed: 'fireOnce' }, /onMissed "fireOnce" needs an anchored/],
    ['cron on stream time', { type: STREAM, cron: '* * * * *' } as unknown as ScheduleSpec, /cron schedules need type WALL_CLOCK_TIME, got STREAM_TIME/],
    ['bad cron', { type: WALL, cron: 'every day' }, /processor "p" schedule: invalid cron expression "every day"/],
    ['bad time zone', { type: WALL, cron: '0 0 * * *', timeZone: 'Europe/Nowhere' }, /unknown IANA time zone "Europe\/Nowhere"/],
    ['unknown type', { type: 'SOMETIMES', intervalMs: 10 } as unknown as ScheduleSpec, /type must be STREAM_TIME or WALL_CLOCK_TIME, got "SOMETIMES"/],
  ]
  for (const [what, spec, message] of bad) {
    it(`rejects ${what}`, () => {
      const { topology } = punctuationTopology([{ id: 'x', spec }])
      assert.throws(
        () => new TopologyTestDriver(topology),
        (err: unknown) => err instanceof PunctualError && err.code === 'INVALID_CONFIG' && message.test(err.message),
      )
    })
  }

  it('rejects two active schedules with the same name', () => {
    const { topology } = punctuationTopology([
      { id: 'a', spec: { type: WALL, intervalMs: 10, name: 'daily' } },
      { id: 'b', spec: { type: WALL, intervalMs: 20, name: 'daily' } },
    ])
    assert.throws(() => new TopologyTestDriver(topology), /processor "p": a schedule named "daily" is already active/)
  })
})

describe('missed-trigger policy across restarts (onMissed)', () => {
  const anchored = (onMissed: 'skip' | 'fireOnce'): ScheduleSpec => ({ type: WALL, intervalMs: 100, startTime: 0, onMissed, name: 'report' })

  function runThenRestart(onMissed: 'skip' | 'fireOnce', restartAt: number) {
    const first = driverWith([{ id: 'r', spec: anchored(onMissed) }], 0)
    first.driver.advanceWallClockTime(100)
    assert.deepEqual(first.fires, [{ id: 'r', ts: 100 }])
    const checkpoint = first.driver.checkpoint()
    first.driver.close()
    const t = punctuationTopology([{ id: 'r', spec: anchored(onMissed) }])
    const second = new TopologyTestDriver(t.topology, { wallClockStartMs: restartAt, checkpoint })
    return { fires: t.fires, driver: second }
  }

  it('fireOnce makes one catch-up call at start-up when points were missed while down', () => {
    const { fires, driver } = runThenRestart('fireOnce', 350)
    assert.deepEqual(fires, [{ id: 'r', ts: 350 }])
    driver.advanceWallClockTime(49)
    assert.equal(fires.length, 1)
    driver.advanceWallClockTime(1)
    assert.deepEqual(fires, [
      { id: 'r', ts: 350 },
      { id: 'r', ts: 400 },
    ])
  })

  it('fireOnce makes no catch-up call when no point passed since the last fire', () => {
    const { fires } = runThenRestart('fireOnce', 199)
    assert.equal(fires.length, 0)
  })

  it('skip (the default) does not replay missed points', () => {
    const { fires, driver } = runThenRestart('skip', 350)
    assert.equal(fires.length, 0)
    driver.advanceWallClockTime(50)
    assert.deepEqual(fires, [{ id: 'r', ts: 400 }])
  })

  it('fireOnce counts from the first registration when the schedule never fired', () => {
    const spec: ScheduleSpec = { type: WALL, intervalMs: 100, startTime: 500, onMissed: 'fireOnce', name: 'report' }
    const first = driverWith([{ id: 'r', spec }], 0)
    const checkpoint = first.driver.checkpoint() // crashed before the first due point (500)
    const t = punctuationTopology([{ id: 'r', spec }])
    new TopologyTestDriver(t.topology, { wallClockStartMs: 750, checkpoint })
    assert.deepEqual(t.fires, [{ id: 'r', ts: 750 }])
  })

  it('fireOnce works for cron schedules', () => {
    const spec: ScheduleSpec = { type: WALL, cron: '0 * * * *', timeZone: 'UTC', onMissed: 'fireOnce', name: 'hourly' }
    const first = driverWith([{ id: 'h', spec }], Date.parse('2026-01-01T00:59:00Z'))
    first.driver.advanceWallClockTime(60_000)
    assert.equal(first.fires.length, 1)
    const checkpoint = first.driver.checkpoint()
    const t = punctuationTopology([{ id: 'h', spec }])
    new TopologyTestDriver(t.topology, { wallClockStartMs: Date.parse('2026-01-01T03:10:00Z'), checkpoint })
    assert.deepEqual(t.fires.map((f) => new Date(f.ts).toISOString()), ['2026-01-01T03:10:00.000Z'])
  })

  it('the checkpoint carries stream time, so stream-time schedules resume on the same grid', () => {
    const first = driverWith([{ id: 'p', spec: { type: STREAM, intervalMs: 10, startTime: 0, name: 's' } }])
    first.pipe(25)
    const checkpoint = first.driver.checkpoint()
    assert.equal((checkpoint as unknown as Record<string, TaskCheckpoint>)['0_0']?.streamTime, 25)
    const t = punctuationTopology([{ id: 'p', spec: { type: STREAM, intervalMs: 10, startTime: 0, name: 's' } }])
    const second = new TopologyTestDriver(t.topology, { checkpoint })
    assert.equal(t.context().currentStreamTimeMs(), 25)
    const input = second.createInputTopic('input', Serdes.String(), Serdes.String())
    input.pipeInput('k', 'v', 29)
    input.pipeInput('k', 'v', 30)
    assert.deepEqual(t.fires.map((f) => f.ts), [30])
    assert.deepEqual(t.seen.map((r) => r.timestamp), [29, 30])
  })
})
