import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { cli } from '../helpers/cli.js'
import { EmbeddedRuntime, PunctuationType, Serdes, silentLogger, StateDescriptors, StreamsBuilder } from '../../src/index.js'
import type { KeyedProcessorContext } from '../../src/index.js'
import { ManualClock } from '../../src/testing/index.js'

const root = mkdtempSync(join(tmpdir(), 'punctual-inspect-'))
after(() => rmSync(root, { recursive: true, force: true }))

/**
 * A count per key (a store), and beside it a keyed processor with a TTL'd value state, an event-time timer
 * per record and a wall-clock punctuation anchored at 0 every 1000 ms; two input partitions.
 */
async function runOnce(stateDir: string): Promise<void> {
  const b = new StreamsBuilder()
  b.stream<string, string>('input').groupByKey().count({ name: 'counts' })
  const topology = b.build()
  const source = /Source: (\S+)/.exec(topology.describe())?.[1] as string
  topology.addKeyedProcessor<string, string, string, string>(
    'alerts',
    () => {
      let ctx: KeyedProcessorContext<string, string, string>
      return {
        init(c) {
          ctx = c
          c.schedule({ type: PunctuationType.WALL_CLOCK_TIME, intervalMs: 1000, startTime: 0, name: 'tick' }, () => {})
        },
        process(r) {
          ctx.getState(StateDescriptors.value<string>('seen', { ttl: { ttlMs: 60_000, timeDomain: 'event' } })).update(r.value)
          ctx.timers.registerEventTimeTimer(r.timestamp + 1000)
        },
      }
    },
    source,
  )
  const clock = new ManualClock(5_000)
  const rt = new EmbeddedRuntime(topology, { applicationId: 'inspected', stateDir, clock, topics: { input: { partitions: 2 } }, logger: silentLogger })
  rt.start()
  const input = rt.producer('input', { keySerde: Serdes.String(), valueSerde: Serdes.String() })
  for (const [key, ts] of [['a', 100], ['b', 200], ['c', 300], ['a', 400]] as const) input.send(key, 'v', ts)
  await rt.idle()
  clock.advance(1000)
  await rt.stop()
}

describe('punctual inspect STATE_DIR', () => {
  it('reports each task’s stream time, positions, punctuations, timers, keyed states and stores, and the topics', async () => {
    const dir = join(root, 'state')
    await runOnce(dir)
    const { code, out, err } = await cli('inspect', dir, '--json')
    assert.equal(code, 0, err.join('\n'))
    const report = JSON.parse(out.join('\n')) as {
      applicationId: string
      format: number
      pendingJournal: boolean
      tasks: Array<{ taskId: string; streamTime: number; positions: Record<string, number>; lastFires: Record<string, number>; timers: { user: { event: number }; ttl: { event: number } }; keyedStates: Record<string, number>; stores: Record<string, number> }>
      topicRecords: Record<string, number>
    }
    assert.equal(report.applicationId, 'inspected')
    assert.equal(report.format, 2)
    assert.equal(report.pendingJournal, false)
    assert.deepEqual(
      report.tasks.map((t) => t.taskId),
      ['0_0', '0_1'],
    )
    // Over both tasks: four records of three keys.
    const sum = (f: (t: (typeof report.tasks)[number]) => number): number => report.tasks.reduce((n, t) => n + f(t), 0)
    assert.equal(sum((t) => Object.values(t.positions).reduce((a, b) => a + b, 0)), 4, 'every record read')
    assert.equal(sum((t) => t.stores['counts-store'] ?? 0), 3, 'one count per key')
    assert.equal(sum((t) => t.keyedStates['alerts/seen'] ?? 0), 3, 'one state entry per key')
    assert.equal(sum((t) => t.timers.ttl.event), 3, 'one TTL timer per key')
    assert.equal(sum((t) => t.timers.user.event), 4, 'one user timer per record, none due (stream time 400 at most)')
    assert.equal(Math.max(...report.tasks.map((t) => t.streamTime ?? -1)), 400)
    assert.deepEqual(
      report.tasks.map((t) => t.lastFires.tick),
      [6000, 6000],
      'the wall-clock punctuation last fired at 6000 in each task',
    )
    assert.equal(report.topicRecords.input ?? 0, 0, 'every input record was read and committed: the log freed them')

    const text = await cli('inspect', dir)
    assert.equal(text.code, 0)
    assert.match(text.out[0] ?? '', /application inspected, format 2/)
    assert.ok(text.out.some((l) => /^ {2}punctuation tick last fired 6000 \(1970-01-01T00:00:06\.000Z\)$/.test(l)))
    assert.ok(text.out.some((l) => /^ {2}store counts-store: \d entries$/.test(l)))
  })

  it('refuses a directory a live process holds, naming it, and one that is not a state directory', async () => {
    const dir = join(root, 'held')
    await runOnce(dir)
    writeFileSync(join(dir, '.lock'), String(process.pid))
    const held = await cli('inspect', dir)
    assert.equal(held.code, 1)
    assert.match(held.err.join('\n'), new RegExp(`in use by process ${process.pid}`))
    rmSync(join(dir, '.lock'))
    const other = mkdtempSync(join(root, 'other-'))
    const not = await cli('inspect', other)
    assert.equal(not.code, 1)
    assert.match(not.err.join('\n'), /not a punctual state directory/)
  })
})
