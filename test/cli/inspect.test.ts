import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { cli } from '../helpers/cli.js'
import { EmbeddedRuntime, PunctuationType, Serdes, silentLogger, StateDescriptors, StreamsBuilder, TimeWindows } from '../../src/index.js'
import type { TaskCheckpoint } from '../../src/processor/internal/task-config.js'
import { TaskChangelogCodec } from '../../src/runtime/changelog-records.js'
import { CheckpointStore } from '../../src/state/checkpoint-store.js'
import { StateDirectory } from '../../src/state/state-directory.js'
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
  await rt.start()
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
    assert.equal(report.format, 3)
    assert.equal(report.pendingJournal, false)
    assert.deepEqual(
      report.tasks.map((t) => t.taskId),
      ['0_0', '0_1'],
    )
    // Over both tasks: four records of three keys.
    const sum = (f: (t: (typeof report.tasks)[number]) => number): number => report.tasks.reduce((n, t) => n + f(t), 0)
    assert.equal(sum((t) => Object.values(t.positions).reduce((a, b) => a + b, 0)), 4, 'every record read')
    assert.equal(sum((t) => t.stores['counts'] ?? 0), 3, 'one count per key')
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
    assert.match(text.out[0] ?? '', /application inspected, format 3/)
    assert.ok(text.out.some((l) => /^ {2}punctuation tick last fired 6000 \(1970-01-01T00:00:06\.000Z\)$/.test(l)))
    assert.ok(text.out.some((l) => /^ {2}store counts: \d entries$/.test(l)))
  })

  it('reads the state directory of a running application, read-only, and says it is live', async () => {
    const dir = join(root, 'live')
    const b = new StreamsBuilder()
    b.stream<string, string>('input').groupByKey().count({ name: 'counts' })
    const clock = new ManualClock(5_000)
    const rt = new EmbeddedRuntime(b.build(), { applicationId: 'running', stateDir: dir, clock, commitIntervalMs: 100, logger: silentLogger })
    await rt.start()
    try {
      const input = rt.producer('input', { keySerde: Serdes.String(), valueSerde: Serdes.String() })
      for (const key of ['a', 'b', 'a']) input.send(key, 'v', 100)
      await rt.idle()
      // The commit interval passes: what was processed is committed.
      clock.advance(100)
      await rt.idle()
      const json = await cli('inspect', dir, '--json')
      assert.equal(json.code, 0, json.err.join('\n'))
      const report = JSON.parse(json.out.join('\n')) as { live?: { pid: number; thisProcess: boolean }; tasks: Array<{ stores: Record<string, number> }> }
      assert.deepEqual(report.live, { pid: process.pid, thisProcess: true })
      assert.deepEqual(Object.values(report.tasks[0]?.stores ?? {}), [2], 'what the last commit holds: a count per key')
      const text = await cli('inspect', dir)
      assert.equal(text.code, 0)
      assert.match(text.out[1] ?? '', /^live: the application is running \(a runtime in this process \(pid \d+\)\); this is its state as of the last commit when read, and it goes on changing$/)
      // The application goes on, and commits, after being read.
      input.send('c', 'v', 200)
      await rt.idle()
    } finally {
      await rt.stop()
    }
    const after = await cli('inspect', dir, '--json')
    const report = JSON.parse(after.out.join('\n')) as { live?: unknown; tasks: Array<{ stores: Record<string, number> }> }
    assert.equal(report.live, undefined)
    assert.deepEqual(Object.values(report.tasks[0]?.stores ?? {}), [3])
  })

  it('names the other process that runs it, and refuses a directory that is not a state directory', async () => {
    const dir = join(root, 'held')
    await runOnce(dir)
    // The test runner that started this process is alive while it runs.
    writeFileSync(join(dir, '.lock'), String(process.ppid))
    const held = await cli('inspect', dir)
    assert.equal(held.code, 0, held.err.join('\n'))
    assert.ok(held.out.includes(`live: the application is running (process ${process.ppid}); this is its state as of the last commit when read, and it goes on changing`), held.out.join('\n'))
    rmSync(join(dir, '.lock'))
    const other = mkdtempSync(join(root, 'other-'))
    const not = await cli('inspect', other)
    assert.equal(not.code, 1)
    assert.match(not.err.join('\n'), /not a punctual state directory/)
  })

  it('counts the entries of a store, not the fields it logs beside them (its stream time, its largest window start)', async () => {
    const dir = join(root, 'windows')
    const b = new StreamsBuilder()
    b.stream<string, string>('input').groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(1000, 10_000)).count({ name: 'per-second' })
    const rt = new EmbeddedRuntime(b.build(), { applicationId: 'windowed', stateDir: dir, clock: new ManualClock(5_000), logger: silentLogger })
    await rt.start()
    const input = rt.producer('input', { keySerde: Serdes.String(), valueSerde: Serdes.String() })
    // Three windows of key a, one of key b, all open (stream time 2100, grace 10 s).
    for (const [key, ts] of [['a', 100], ['a', 1100], ['b', 1200], ['a', 2100]] as const) input.send(key, 'v', ts)
    await rt.idle()
    await rt.stop()
    const { code, out, err } = await cli('inspect', dir, '--json')
    assert.equal(code, 0, err.join('\n'))
    const report = JSON.parse(out.join('\n')) as { tasks: Array<{ stores: Record<string, number> }> }
    assert.deepEqual(Object.values(report.tasks[0]?.stores ?? {}), [4], 'one entry per window of a key')
  })
})

describe('punctual inspect on a Kafka instance’s state directory', () => {
  it('describes each task’s state as of its last commit, with where it stands in its changelog topics', async () => {
    const dir = join(root, 'kafka-instance')
    StateDirectory.open(dir, 'on-kafka').release()
    const store = CheckpointStore.open(dir)
    // As a Kafka instance keeps them: each task's changelog records, with the offsets they reach.
    const codec = new TaskChangelogCodec([])
    for (const n of [0, 1]) {
      const taskId = `0_${n}`
      const checkpoint: TaskCheckpoint = {
        streamTime: 1000 + n,
        lastFires: { tick: 6000 },
        positions: { [`input:${n}`]: 10 + n },
        keyed: {
          timers: [
            { kind: 'user', domain: 'event', timestamp: 2000, seq: 1, owner: 'alerts', key: 'a' },
            { kind: 'ttl', domain: 'processing', timestamp: 9000, seq: 2, owner: 'alerts', key: 'a' },
          ],
          states: { 'alerts/seen': { kind: 'value', entries: [['a', [['v', 1000]]]] } },
        },
        // Two windows, and the stream time the store logs beside them.
        stores: { 'per-second-store': [['w1', 1], ['w2', 2], [-1, 1000 + n]] },
      }
      const changelog = { offsets: { 'on-kafka-per-second-store-changelog': 40 + n }, writtenAt: Date.UTC(2026, 11, 3, 12, n) }
      await store.saveRecordsAfter(Promise.resolve(true), () => new Map([[taskId, { streamTime: checkpoint.streamTime, lastFires: checkpoint.lastFires, positions: checkpoint.positions, changelog }]]), new Map([[taskId, codec.checkpointRecords(checkpoint)]]))
    }
    await store.close()
    const { code, out, err } = await cli('inspect', dir, '--json')
    assert.equal(code, 0, err.join('\n'))
    const report = JSON.parse(out.join('\n')) as {
      runtime: string
      checkpointBytes: number
      tasks: Array<{ taskId: string; streamTime: number; positions: Record<string, number>; lastFires: Record<string, number>; timers: unknown; keyedStates: Record<string, number>; stores: Record<string, number>; changelog: { offsets: Record<string, number>; writtenAt: string } }>
    }
    assert.equal(report.runtime, 'kafka')
    assert.ok(report.checkpointBytes > 0)
    assert.deepEqual(
      report.tasks.map((t) => t.taskId),
      ['0_0', '0_1'],
    )
    const [t0] = report.tasks
    assert.equal(t0?.streamTime, 1000)
    assert.deepEqual(t0?.positions, { 'input:0': 10 })
    assert.deepEqual(t0?.lastFires, { tick: 6000 })
    assert.deepEqual(t0?.timers, { user: { event: 1, processing: 0 }, ttl: { event: 0, processing: 1 } })
    assert.deepEqual(t0?.keyedStates, { 'alerts/seen': 1 })
    assert.deepEqual(t0?.stores, { 'per-second-store': 2 })
    assert.deepEqual(t0?.changelog, { offsets: { 'on-kafka-per-second-store-changelog': 40 }, writtenAt: '2026-12-03T12:00:00.000Z' })

    const text = await cli('inspect', dir)
    assert.equal(text.code, 0)
    const printed = text.out.join('\n')
    assert.doesNotMatch(printed, /no task has committed yet/)
    assert.match(printed, /a Kafka instance's tasks as of their last commit here/)
    assert.match(printed, /\n {2}committed 2026-12-03T12:01:00\.000Z; changelog on-kafka-per-second-store-changelog to 41\n/)
  })
})
