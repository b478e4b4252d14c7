import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { EmbeddedRuntime, PunctualError, Serdes, silentLogger, StateDescriptors, Topology } from '../../src/index.js'
import type { KeyedProcessorContext, Timer } from '../../src/index.js'
import { ManualClock, TopologyTestDriver } from '../../src/testing/index.js'
import type { TaskCheckpoint } from '../../src/processor/internal/task-config.js'
import { keyedDriver } from '../helpers/keyed.js'

type Ev = string

/** Commands: "e:<t>" / "p:<t>" register, "-e:<t>" / "-p:<t>" delete timers for the record's key. */
function timerDriver(wallClockStartMs = 0) {
  return keyedDriver<Ev>(
    (ctx, events) => ({
      process(r) {
        for (const cmd of r.value.split(' ')) {
          const [op, t] = cmd.split(':') as [string, string]
          const ts = Number(t)
          if (op === 'e') ctx.timers.registerEventTimeTimer(ts)
          else if (op === 'p') ctx.timers.registerProcessingTimeTimer(ts)
          else if (op === '-e') ctx.timers.deleteEventTimeTimer(ts)
          else if (op === '-p') ctx.timers.deleteProcessingTimeTimer(ts)
        }
        events.push(`record ${r.key}@${r.timestamp}`)
      },
      onTimer(t: Timer<string>) {
        assert.equal(ctx.currentKey(), t.key, 'the current key is the timer key')
        events.push(`${t.domain} ${t.key}@${t.timestamp}`)
      },
    }),
    { wallClockStartMs },
  )
}


/** input -> a keyed processor registering, per record, a processing-time timer at `due(value, now)`; `fired` gets each fired timer's time. */
function processingTimerTopology(due: (value: string, now: number) => number): { topology: Topology; fired: number[] } {
  const fired: number[] = []
  const topology = new Topology().addSource('in', 'input').addKeyedProcessor<string, string>(
    'k',
    () => {
      let ctx: KeyedProcessorContext<string>
      return {
        init(c) {
          ctx = c
        },
        process(r) {
          ctx.timers.registerProcessingTimeTimer(due(r.value, ctx.currentSystemTimeMs()))
        },
        onTimer(t) {
          fired.push(t.timestamp)
        },
      }
    },
    'in',
  )
  return { topology, fired }
}

describe('event-time timers (SEMANTICS 3)', () => {
  it('fire when stream time reaches them, after the record that advanced it', () => {
    const { events, pipe } = timerDriver()
    pipe('a', 'e:10', 0)
    pipe('b', '', 9)
    pipe('c', '', 10)
    assert.deepEqual(events, ['record a@0', 'record b@9', 'record c@10', 'event a@10'])
  })

  it('fire in timestamp order, ties in registration order, whatever the key', () => {
    const { events, pipe } = timerDriver()
    pipe('b', 'e:7', 0)
    pipe('a', 'e:5', 0)
    pipe('c', 'e:7', 0)
    pipe('z', '', 100)
    assert.deepEqual(events.slice(4), ['event a@5', 'event b@7', 'event c@7'])
  })

  it('a timer registered twice fires once; deleting an absent timer is a no-op', () => {
    const { events, pipe, driver } = timerDriver()
    pipe('a', 'e:5 e:5 -e:6', 0)
    assert.deepEqual(driver.pendingTimers('keyed', 'a'), { event: [5], processing: [] })
    pipe('a', '', 5)
    assert.deepEqual(events.filter((e) => e.startsWith('event')), ['event a@5'])
  })

  it('a deleted timer never fires', () => {
    const { events, pipe } = timerDriver()
    pipe('a', 'e:5 -e:5', 0)
    pipe('a', '', 50)
    assert.deepEqual(events.filter((e) => e.startsWith('event')), [])
  })

  it('timers registered by onTimer that are already due fire in the same advance', () => {
    const { events, pipe } = keyedDriver<string>((ctx, ev) => ({
      process(r) {
        if (r.value === 'start') ctx.timers.registerEventTimeTimer(10)
      },
      onTimer(t) {
        ev.push(`${t.key}@${t.timestamp}`)
        if (t.timestamp === 10) {
          ctx.timers.registerEventTimeTimer(12)
          ctx.timers.registerEventTimeTimer(40)
        }
      },
    }))
    pipe('a', 'start', 0)
    pipe('a', '', 20)
    assert.deepEqual(events, ['a@10', 'a@12'])
  })

  it('an already due timer registered during processing fires right after that record', () => {
    const { events, pipe } = timerDriver()
    pipe('a', '', 50)
    pipe('a', 'e:3', 1)
    assert.deepEqual(events, ['record a@50', 'record a@1', 'event a@3'])
  })
})

describe('processing-time timers', () => {
  it('fire only when the wall clock advances, even with no input', () => {
    const { events, pipe, driver } = timerDriver()
    pipe('a', 'p:100', 0)
    pipe('b', 'p:50', 1000)
    assert.deepEqual(events, ['record a@0', 'record b@1000'])
    driver.advanceWallClockTime(60)
    driver.advanceWallClockTime(100)
    assert.deepEqual(events.slice(2), ['processing b@50', 'processing a@100'])
  })

  it('a timer already due when registered fires at the next wall-clock advance', () => {
    const { events, pipe, driver } = timerDriver(500)
    pipe('a', 'p:100', 0)
    driver.advanceWallClockTime(0)
    assert.deepEqual(events.slice(1), ['processing a@100'])
  })

  it('on the embedded runtime, registering many arms the one timer once per run, for the earliest', async () => {
    const { topology, fired } = processingTimerTopology((value) => Number(value))
    const clock = new ManualClock(0)
    const armed: number[] = []
    const scheduler = { at: (due: number, cb: () => void) => (armed.push(due), clock.at(due, cb)) }
    const rt = new EmbeddedRuntime(topology, { applicationId: 'ptimers-arm', clock, scheduler, commitIntervalMs: 1_000_000, logger: silentLogger })
    await rt.start()
    const p = rt.producer<string, string>('input')
    for (let i = 0; i < 1000; i++) p.send(`k${i}`, String(5000 - i), 0) // 1000 timers, each earlier than the last
    await new Promise((r) => setImmediate(r))
    assert.deepEqual(armed, [4001], 'one arming after the run, for the earliest of the 1000')
    clock.advance(4001)
    assert.deepEqual(fired, [4001])
    await rt.stop()
  })

  it('fire on the embedded runtime through its armed timer, with no input', async () => {
    const { topology, fired } = processingTimerTopology((_value, now) => now + 30)
    const clock = new ManualClock(1000)
    const rt = new EmbeddedRuntime(topology, { applicationId: 'ptimers', clock, logger: silentLogger })
    await rt.start()
    rt.producer('input').send('a', 'x', 0)
    await new Promise((r) => setImmediate(r)) // the record is processed: the timer is due at 1030
    clock.advance(29)
    assert.deepEqual(fired, [])
    clock.advance(1)
    assert.deepEqual(fired, [1030])
    await rt.stop()
  })
})

describe('misuse is reported at the call, naming the processor and the value', () => {
  it('registering a timer outside a keyed context', () => {
    const topology = new Topology().addSource('in', 'input').addKeyedProcessor('k', () => ({
      init(ctx: KeyedProcessorContext<string>) {
        ctx.timers.registerEventTimeTimer(5)
      },
      process() {},
    }), 'in')
    assert.throws(() => new TopologyTestDriver(topology), (e: unknown) => e instanceof PunctualError && e.code === 'ILLEGAL_STATE' && /keyed processor "k": no current key here/.test(e.message))
  })

  for (const bad of [-1, 1.5, Number.NaN]) {
    it(`a timer timestamp of ${bad}`, () => {
      const { pipe } = keyedDriver<never>((ctx) => ({
        process() {
          ctx.timers.registerEventTimeTimer(bad)
        },
      }))
      assert.throws(() => pipe('a', '', 0), (e: unknown) => e instanceof PunctualError && /keyed processor "keyed": registerEventTimeTimer needs an integer epoch millisecond >= 0, got/.test(String((e.cause as Error)?.message ?? e.message)))
    })
  }

  it('a TTL <= 0', () => {
    assert.throws(
      () => keyedDriver<never>((ctx) => (ctx.getState(StateDescriptors.value('s', { ttl: { ttlMs: 0 } })), { process() {} })),
      /keyed processor "keyed" state "s": ttl.ttlMs must be an integer >= 1, got 0/,
    )
  })

  it('a cache that is not an integer >= 0', () => {
    assert.throws(
      () => keyedDriver<never>((ctx) => (ctx.getState(StateDescriptors.value('s', { cacheEntries: -1 })), { process() {} })),
      /keyed processor "keyed" state "s": cacheEntries must be an integer >= 0, got -1/,
    )
  })

  it('a state name registered twice with different kinds or TTLs', () => {
    assert.throws(
      () => keyedDriver<never>((ctx) => (ctx.getState(StateDescriptors.value('s')), ctx.getListState(StateDescriptors.list('s')), { process() {} })),
      /keyed processor "keyed" state "s" is already registered as value state, not list/,
    )
    assert.throws(
      () => keyedDriver<never>((ctx) => (ctx.getState(StateDescriptors.value('s', { ttl: { ttlMs: 5 } })), ctx.getState(StateDescriptors.value('s', { ttl: { ttlMs: 6 } })), { process() {} })),
      /already registered with a different TTL config/,
    )
  })

  it('a record with a null key is a processing error, and processing goes on', () => {
    const errors: string[] = []
    const seen: string[] = []
    const topology = new Topology().addSource('in', 'input').addKeyedProcessor<string, string>('k', () => ({ process: (r) => void seen.push(r.value) }), 'in')
    const d = new TopologyTestDriver(topology, { errorHandler: (c) => (errors.push(c.message), 'continue') })
    const input = d.createInputTopic('input', Serdes.String(), Serdes.String())
    input.pipeInput(null, 'x', 1)
    input.pipeInput('a', 'y', 2)
    assert.deepEqual(seen, ['y'])
    assert.match(errors[0] ?? '', /keyed processor "k" needs a string, number, bigint or boolean key, got null/)
  })
})

describe('timers and state survive a checkpoint round trip (in memory)', () => {
  it('restores pending timers and keyed state; processing timers due while down fire at the first advance', () => {
    const make = (wallClockStartMs: number, checkpoint?: ReturnType<TopologyTestDriver['checkpoint']>) =>
      keyedDriver<string>(
        (ctx, ev) => {
          const count = ctx.getState(StateDescriptors.value<number>('count'))
          return {
            process(r) {
              count.update((count.value() ?? 0) + 1)
              ctx.timers.registerEventTimeTimer(r.timestamp + 10)
              ctx.timers.registerProcessingTimeTimer(1000)
            },
            onTimer(t) {
              ev.push(`${t.domain} ${t.key}@${t.timestamp} count=${count.value()}`)
            },
          }
        },
        { wallClockStartMs, ...(checkpoint === undefined ? {} : { checkpoint }) },
      )
    const first = make(0)
    first.pipe('a', '', 1)
    first.pipe('a', '', 2)
    first.pipe('b', '', 3)
    const checkpoint = first.driver.checkpoint()
    assert.equal((checkpoint as unknown as Record<string, TaskCheckpoint>)['0_0']?.keyed?.timers.length, 5)

    const second = make(5000, checkpoint)
    assert.deepEqual(second.driver.pendingTimers('keyed', 'a'), { event: [11, 12], processing: [1000] })
    second.driver.advanceWallClockTime(0)
    assert.deepEqual(second.events, ['processing a@1000 count=2', 'processing b@1000 count=1'])
    second.pipe('c', '', 12)
    assert.deepEqual(second.events.slice(2), ['event a@11 count=2', 'event a@12 count=2'])
    assert.deepEqual(second.driver.pendingTimerCount('keyed'), { event: 2, processing: 1 })
  })
})
