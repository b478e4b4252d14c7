import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { BufferConfig, EmbeddedRuntime, PunctuationType, Serdes, silentLogger, StateDescriptors, Stores, StreamsBuilder, Suppressed, TimeWindows } from '../../src/index.js'
import type { KeyedProcessorContext, KeyValueStore, ListState, ProcessorContext, Topology, ValueState, Windowed } from '../../src/index.js'
import type { ChangelogRecord } from '../../src/runtime/changelog.js'
import { ManualClock } from '../../src/testing/index.js'

/** Which parts a generated topology has. */
interface Spec {
  readonly partitions: number
  readonly counts: boolean
  readonly windows: 'none' | 'final' | 'spill'
  readonly keyed: 'none' | 'event' | 'processing'
  readonly punctuation: 'none' | 'memory' | 'persistent'
}

/** One input step: a record, then (sometimes) the wall clock moves. */
interface Step {
  readonly key: number
  readonly dt: number
  readonly advance: number
}

const OUTPUTS = ['counts', 'windows', 'keyed', 'punctuations'] as const

/**
 * A topology from the parts the spec names, all reading topic `in`: a count per key (a DSL table),
 * windowed counts with final results (buffer-less, or a buffer of 3 records that spills to disk), a
 * keyed processor (value state with a TTL in either domain, list state, event- and processing-time
 * timers) and a processor with anchored stream-time and wall-clock punctuations over a key-value store.
 */
function buildTopology(spec: Spec): Topology {
  const b = new StreamsBuilder()
  const input = b.stream<string, string>('in')
  if (spec.counts) input.groupByKey().count().toStream().to('counts', { valueSerde: Serdes.Long() })
  if (spec.windows !== 'none') {
    const buffer = spec.windows === 'final' ? BufferConfig.unbounded() : BufferConfig.maxRecords(3).spillToDiskWhenFull()
    input
      .groupByKey()
      .windowedBy(TimeWindows.ofSizeAndGrace(50, 20))
      .count()
      .suppress(Suppressed.untilWindowCloses<Windowed<string>, number>(buffer))
      .toStream()
      .to('windows', { keySerde: Serdes.JSON<Windowed<string>>(), valueSerde: Serdes.Long() })
  }
  const t = b.build()
  const source = t.describe().match(/Source: (\S+)/)![1]!
  if (spec.keyed !== 'none') {
    const domain = spec.keyed
    t.addKeyedProcessor<string, string, string, string>(
      'keyed',
      () => {
        let ctx: KeyedProcessorContext<string, string, string>
        let last: ValueState<number>
        let seen: ListState<number>
        return {
          init(c) {
            ctx = c
            last = c.getState(StateDescriptors.value<number>('last', { ttl: { ttlMs: 40, timeDomain: domain, update: 'onCreateAndWrite', visibility: 'neverReturnExpired' } }))
            seen = c.getListState(StateDescriptors.list<number>('seen'))
          },
          process(r) {
            last.update(r.timestamp)
            seen.add(r.timestamp)
            if (seen.get().length > 4) seen.update(seen.get().slice(-2))
            ctx.timers.registerEventTimeTimer(r.timestamp + 25)
            ctx.timers.registerProcessingTimeTimer(ctx.currentSystemTimeMs() + 15)
          },
          onTimer(timer) {
            const value = `${timer.domain} ${timer.timestamp} last=${last.value()} seen=${seen.get().join(',')}`
            ctx.forward({ key: timer.key, value, timestamp: ctx.currentStreamTimeMs() ?? 0, headers: [] })
          },
          onExpire(e) {
            ctx.forward({ key: e.key, value: `expired ${e.state} ${String(e.value)} at ${e.expiredAt}`, timestamp: ctx.currentStreamTimeMs() ?? 0, headers: [] })
          },
        }
      },
      source,
    )
    t.addSink('keyed-out', 'keyed', {}, 'keyed')
  }
  if (spec.punctuation !== 'none') {
    const store = spec.punctuation === 'memory' ? Stores.inMemoryKeyValueStore<string, number>('seen') : Stores.persistentKeyValueStore<string, number>('seen', { cacheEntries: 2 })
    t.addProcessor<string, string, string, string>(
      'ticks',
      () => {
        let ctx: ProcessorContext<string, string>
        let seen: KeyValueStore<string, number>
        const report = (what: string, at: number): void => {
          const entries = [...seen.all()].map(([k, n]) => `${k}:${n}`).join(' ')
          ctx.forward({ key: `${what} ${ctx.taskId}`, value: `${at} ${entries}`, timestamp: ctx.currentStreamTimeMs() ?? 0, headers: [] })
        }
        return {
          init(c) {
            ctx = c
            seen = c.getStateStore('seen')
            c.schedule({ type: PunctuationType.STREAM_TIME, intervalMs: 30, startTime: 5 }, (t) => report('stream', t))
            c.schedule({ type: PunctuationType.WALL_CLOCK_TIME, intervalMs: 20, startTime: 3, onMissed: 'fireOnce', name: 'wall' }, (t) => {
              report('wall', t)
              for (const [k, n] of [...seen.all()]) if (n > 3) seen.delete(k)
            })
          },
          process(r) {
            seen.put(r.key, (seen.get(r.key) ?? 0) + 1)
          },
        }
      },
      source,
    )
    t.addStateStore(store, 'ticks')
    t.addSink('ticks-out', 'punctuations', {}, 'ticks')
  }
  return t
}


/** Where the tasks move: before step `at`; away for `gapMs` of wall-clock time; rebuilt from what. */
interface Cut {
  readonly at: number
  readonly gapMs: number
  /** The records the changelog listener saw, or (a durable run) the state directory's last commit. */
  readonly from: 'changelog' | 'stateDir'
}

/**
 * Runs the steps on a runtime with the changelog captured. At the cut (if any) every task is revoked
 * (which commits), the wall clock moves on by the gap, and they are assigned again, rebuilt from the
 * records the changelog listener saw and nothing else, or (a durable run) from the state directory, which
 * does not use changelog records at all. Returns each
 * output topic's records per key, in order.
 */
async function run(spec: Spec, steps: readonly Step[], cut: Cut | undefined): Promise<Record<string, Record<string, string[]>>> {
  const clock = new ManualClock(0)
  const changelog = new Map<string, ChangelogRecord[]>()
  const stateDir = cut?.from === 'stateDir' ? mkdtempSync(join(tmpdir(), 'punctual-rebuild-')) : undefined
  const rt = new EmbeddedRuntime(buildTopology(spec), {
    applicationId: 'rebuild',
    ...(stateDir === undefined ? {} : { stateDir }),
    topics: { in: { partitions: spec.partitions } },
    clock,
    scheduler: clock,
    commitIntervalMs: 7,
    logger: silentLogger,
    changelog: (commits) => {
      for (const { taskId, records } of commits) {
        let log = changelog.get(taskId)
        if (log === undefined) changelog.set(taskId, (log = []))
        log.push(...records)
      }
    },
  })
  const out: Record<string, Record<string, string[]>> = {}
  const writes = { counts: spec.counts, windows: spec.windows !== 'none', keyed: spec.keyed !== 'none', punctuations: spec.punctuation !== 'none' }
  for (const topic of OUTPUTS) {
    if (!writes[topic]) continue
    rt.subscribe<unknown, unknown>(topic, (r) => {
      const key = JSON.stringify(r.key)
      ;((out[topic] ??= {})[key] ??= []).push(`${r.timestamp} ${JSON.stringify(r.value)}`)
    })
  }
  await rt.start()
  // Between steps: every run done and every commit durable (a durable run writes off the main thread),
  // so that what the clock fires does not depend on how fast the disk is.
  const turns = (): Promise<void> => rt.idle()
  const p = rt.producer<string, string>('in')
  let ts = 100
  for (let i = 0; i < steps.length; i++) {
    if (i === cut?.at) {
      await turns()
      const ids = rt.taskIds()
      await rt.revokeTasks(ids)
      assert.deepEqual(rt.taskIds(), [])
      if (cut.gapMs > 0) {
        clock.advance(cut.gapMs)
        await turns()
      }
      if (cut.from === 'stateDir') await rt.assignTasks(ids)
      else {
        await rt.assignTasks(ids, (id) => {
          const records = changelog.get(id)
          assert.ok(records !== undefined && records.length > 0, `task ${id} has changelog records`)
          return records
        })
      }
      // What came due while the tasks were away fires now, before the next record.
      await turns()
    }
    const step = steps[i]!
    ts = Math.max(0, ts + step.dt)
    p.send(`k${step.key}`, 'v', ts)
    if (step.advance > 0) {
      await turns()
      clock.advance(step.advance * 6)
      await turns()
    }
  }
  await turns()
  clock.advance(200)
  await turns()
  await rt.stop()
  if (stateDir !== undefined) rmSync(stateDir, { recursive: true, force: true })
  return out
}

const specs = fc.record<Spec>({
  partitions: fc.constantFrom(1, 2),
  counts: fc.boolean(),
  windows: fc.constantFrom('none', 'final', 'spill'),
  keyed: fc.constantFrom('none', 'event', 'processing'),
  punctuation: fc.constantFrom('none', 'memory', 'persistent'),
})

const steps = fc.array(fc.record<Step>({ key: fc.integer({ min: 0, max: 5 }), dt: fc.integer({ min: -30, max: 40 }), advance: fc.integer({ min: 0, max: 4 }) }), { minLength: 2, maxLength: 60 })

describe('a task rebuilt from its changelog records alone', () => {
  it('continues exactly as if it had never stopped (random topologies and inputs, cut at a random commit)', async () => {
    await fc.assert(
      fc.asyncProperty(
        specs.filter((s) => s.counts || s.windows !== 'none' || s.keyed !== 'none' || s.punctuation !== 'none'),
        steps,
        fc.double({ min: 0.05, max: 0.95, noNaN: true }),
        async (spec, input, position) => {
          const at = Math.max(1, Math.floor(input.length * position))
          const expected = await run(spec, input, undefined)
          const rebuilt = await run(spec, input, { at, gapMs: 0, from: 'changelog' })
          assert.deepEqual(rebuilt, expected)
        },
      ),
      { numRuns: 60, seed: 20261201 },
    )
  })

  it('resumes as a restore from the state directory does when wall-clock time passes while the tasks are away', async () => {
    // Away for a while, a task cannot match an uninterrupted run (its wall-clock schedules miss their
    // points and catch up once, `fireOnce`), but the changelog must rebuild it exactly as the state
    // directory's checkpoint does: last fire times, timers due meanwhile, TTLs.
    await fc.assert(
      fc.asyncProperty(
        specs.filter((s) => s.keyed !== 'none' || s.punctuation !== 'none'),
        steps,
        fc.double({ min: 0.05, max: 0.95, noNaN: true }),
        fc.integer({ min: 1, max: 100 }),
        async (spec, input, position, gapMs) => {
          const at = Math.max(1, Math.floor(input.length * position))
          const restored = await run(spec, input, { at, gapMs, from: 'stateDir' })
          const rebuilt = await run(spec, input, { at, gapMs, from: 'changelog' })
          assert.deepEqual(rebuilt, restored)
        },
      ),
      { numRuns: 40, seed: 20261202 },
    )
  })
})
