import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { BufferConfig, createConsoleLogger, EmbeddedRuntime, Serdes, silentLogger, StateDescriptors, StreamsBuilder, Suppressed, TimeWindows } from '../../src/index.js'
import type { KeyedProcessorContext, ValueState, Windowed } from '../../src/index.js'
import { ManualClock, seededRandom } from '../../src/testing/index.js'
import { partitionForStringKey } from '../../src/processor/murmur2.js'
import { countingTopology } from '../helpers/counting.js'
import type { ChangelogRecord } from '../../src/runtime/changelog.js'
import type { ChangelogSource } from '../../src/runtime/changelog-source.js'

/**
 * Windowed counts with final results (a suppression buffer is held across the move), and a keyed
 * processor with a count in value state and an event-time timer 50 ms after each record.
 */
function topology() {
  const b = new StreamsBuilder()
  const input = b.stream<string, string>('in')
  input
    .groupByKey()
    .windowedBy(TimeWindows.ofSizeAndGrace(100, 20))
    .count()
    .suppress(Suppressed.untilWindowCloses<Windowed<string>, number>(BufferConfig.maxRecords(1000).shutDownWhenFull()))
    .toStream()
    .to('counts', { keySerde: Serdes.JSON<Windowed<string>>(), valueSerde: Serdes.Long() })
  const t = b.build()
  return t
    .addKeyedProcessor<string, string, string, string>(
      'alerts',
      () => {
        let ctx: KeyedProcessorContext<string, string, string>
        let seen: ValueState<number>
        return {
          init(c) {
            ctx = c
            seen = c.getState(StateDescriptors.value<number>('seen'))
          },
          process(r) {
            seen.update((seen.value() ?? 0) + 1)
            ctx.timers.registerEventTimeTimer(r.timestamp + 50)
          },
          onTimer(timer) {
            ctx.forward({ key: timer.key, value: `timer ${timer.timestamp} seen ${seen.value()}`, timestamp: timer.timestamp, headers: [] })
          },
        }
      },
      // The DSL's source node for 'in' is the first node of the topology.
      t.describe().match(/Source: (\S+)/)![1]!,
    )
    .addSink('alerts-out', 'alerts', {}, 'alerts')
}

const turns = async (n: number): Promise<void> => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r))
}

/** Records of 20 keys over 2 partitions, timestamps mostly increasing with some out of order. */
function records(n: number): Array<[string, number]> {
  const rnd = seededRandom(7)
  return Array.from({ length: n }, (_, i) => [`k${Math.floor(rnd() * 20)}`, Math.max(0, i * 3 - Math.floor(rnd() * 40))])
}

/** Every output record, as sorted lines (partition order across keys may differ between runs). */
async function run(stateDir: string | undefined, input: Array<[string, number]>, move: boolean): Promise<string[]> {
  const rt = new EmbeddedRuntime(topology(), { applicationId: 'moves', ...(stateDir === undefined ? {} : { stateDir }), topics: { in: { partitions: 2 } }, logger: silentLogger })
  const out: string[] = []
  rt.subscribe<Windowed<string>, number>('counts', (r) => void out.push(`count ${r.key!.key}@${r.key!.window.start}=${r.value}`))
  rt.subscribe<string, string>('alerts', (r) => void out.push(`alert ${r.key} ${r.value}`))
  await rt.start()
  const p = rt.producer<string, string>('in')
  const third = Math.floor(input.length / 3)
  const send = async (from: number, to: number): Promise<void> => {
    for (const [k, ts] of input.slice(from, to)) p.send(k, 'v', ts)
    await turns(50)
  }
  await send(0, third)
  if (move) {
    assert.deepEqual(rt.taskIds(), ['0_0', '0_1'])
    await rt.revokeTasks(['0_1'])
    assert.deepEqual(rt.taskIds(), ['0_0'])
  }
  await send(third, 2 * third) // task 0_1's partition waits, unread
  if (move) {
    await rt.assignTasks(['0_1'])
    assert.deepEqual(rt.taskIds(), ['0_0', '0_1'])
  }
  await send(2 * third, input.length)
  await rt.stop()
  assert.equal(rt.metrics().processedRecords, input.length, 'every record processed once, over the task instances')
  return out.sort()
}

describe('tasks revoked and assigned again while the runtime runs', () => {
  const input = records(1500)

  it('with a state directory, a task rebuilt from its last commit continues: output equals an uninterrupted run', async () => {
    const fresh = (): string => join(mkdtempSync(join(tmpdir(), 'punctual-moves-')), 'state')
    const expected = await run(fresh(), input, false)
    assert.ok(expected.some((l) => l.startsWith('count ')) && expected.some((l) => l.startsWith('alert ')), 'both outputs are exercised')
    assert.deepEqual(await run(fresh(), input, true), expected)
  })

  it('in memory, a task resumes from the checkpoint taken when it was revoked: output equals an uninterrupted run', async () => {
    const expected = await run(undefined, input, false)
    assert.deepEqual(await run(undefined, input, true), expected)
  })

  it('refuses a task the topology does not have, and a move before start', async () => {
    const rt = new EmbeddedRuntime(topology(), { applicationId: 'moves-bad', topics: { in: { partitions: 2 } }, logger: silentLogger })
    await assert.rejects(() => rt.assignTasks(['0_0']), /assignTasks: the runtime is CREATED, not RUNNING/)
    await rt.start()
    await assert.rejects(() => rt.assignTasks(['9_9']), /task 9_9 is not a task of this topology; its tasks: 0_0, 0_1/)
    await rt.stop()
  })

  for (const from of ['changelog', 'stateDirectory'] as const) {
    it(`a task restores from ${from === 'changelog' ? 'its changelog records' : 'the state directory'} in steps, reporting progress, while the other tasks go on`, async () => {
      const clock = new ManualClock(0)
      const counted: Array<[string, number]> = []
      const stateDir = from === 'stateDirectory' ? { stateDir: join(mkdtempSync(join(tmpdir(), 'punctual-restore-steps-')), 'state') } : {}
      const rt = new EmbeddedRuntime(countingTopology('in', (key, n) => void counted.push([key, n])), { applicationId: 'restore-steps', ...stateDir, topics: { in: { partitions: 2 } }, clock, scheduler: clock, logger: silentLogger })
      await rt.start()
      const keysOf = (p: number, n: number): string[] => Array.from({ length: 4 * n }, (_, i) => `key-${i}`).filter((k) => partitionForStringKey(k, 2) === p).slice(0, n)
      const mine = keysOf(1, 4000)
      const other = keysOf(0, 3)
      const p = rt.producer<string, string>('in')
      for (const k of mine) p.send(k, 'v', 1)
      await rt.idle()
      await rt.revokeTasks(['0_1'])
      counted.length = 0

      const assigned = rt.assignTasks(['0_1'])
      for (let i = 0; i < 10 && rt.restoreProgress().length === 0; i++) await Promise.resolve()
      const progress: Array<{ from: string; restored: number; remaining: number | undefined }> = []
      const countedWhileRestoring: string[] = []
      for (let turn = 0; rt.restoreProgress().length > 0; turn++) {
        progress.push(...rt.restoreProgress().map(({ from, restored, remaining }) => ({ from, restored, remaining })))
        if (turn < other.length) p.send(other[turn]!, 'v', 2)
        await new Promise((r) => setImmediate(r))
        // Counted in a turn after which 0_1 still restores.
        if (rt.restoreProgress().length > 0) countedWhileRestoring.push(...counted.splice(0).map(([k]) => k))
      }
      await assigned
      assert.deepEqual(rt.taskIds(), ['0_0', '0_1'])
      assert.ok(progress.length >= 4, `restored in ${progress.length} steps`)
      const total = progress[0]!.restored + progress[0]!.remaining!
      if (from === 'changelog') assert.ok(total > mine.length, `${total} records: one per key, and the task's clocks and positions`)
      else assert.equal(total, mine.length, 'one entry per key (the clocks and positions are one record, read at once)')
      for (let i = 0; i < progress.length; i++) assert.equal(progress[i]!.from, from)
      for (let i = 1; i < progress.length; i++) {
        assert.ok(progress[i]!.restored > progress[i - 1]!.restored, 'each step reads more')
        assert.equal(progress[i]!.restored + progress[i]!.remaining!, total)
      }
      assert.deepEqual(countedWhileRestoring, other, 'task 0_0 processed its records while 0_1 restored')
      // The restored counts go on from where they were.
      p.send(mine[7]!, 'v', 3)
      await rt.idle()
      assert.deepEqual(counted, [[mine[7], 2]])
      await rt.stop()
    })
  }

  it('a task revoked while it restores stops restoring, and keeps its state for the next assignment', async () => {
    const clock = new ManualClock(0)
    const counted: Array<[string, number]> = []
    const rt = new EmbeddedRuntime(countingTopology('in', (key, n) => void counted.push([key, n])), { applicationId: 'restore-revoked', topics: { in: { partitions: 2 } }, clock, scheduler: clock, logger: silentLogger })
    await rt.start()
    const mine = Array.from({ length: 16_000 }, (_, i) => `key-${i}`)
      .filter((k) => partitionForStringKey(k, 2) === 1)
      .slice(0, 4000)
    const p = rt.producer<string, string>('in')
    for (const k of mine) p.send(k, 'v', 1)
    await rt.idle()
    await rt.revokeTasks(['0_1'])

    const assigned = rt.assignTasks(['0_1'])
    while (!rt.restoreProgress().some((r) => r.restored > 0)) await new Promise((r) => setImmediate(r))
    const [progress] = rt.restoreProgress()
    assert.ok(progress!.remaining! > 0, 'revoked halfway through its restore')
    await rt.revokeTasks(['0_1'])
    await assigned // whoever waited for it to become active waits no more
    assert.deepEqual(rt.taskIds(), ['0_0'])
    assert.deepEqual(rt.restoreProgress(), [])

    await rt.assignTasks(['0_1'])
    assert.deepEqual(rt.taskIds(), ['0_0', '0_1'])
    counted.length = 0
    p.send(mine[7]!, 'v', 2)
    await rt.idle()
    assert.deepEqual(counted, [[mine[7], 2]], 'the count goes on from the state it had before both moves')
    await rt.stop()
  })

  it('a lost task (closed without a commit) resumes from its last commit: exact state, its output since then again', async () => {
    const run = async (lose: boolean): Promise<Array<[string, number]>> => {
      const clock = new ManualClock(0)
      const counted: Array<[string, number]> = []
      const rt = new EmbeddedRuntime(countingTopology('in', (key, n) => void counted.push([key, n])), {
        applicationId: 'lose',
        stateDir: join(mkdtempSync(join(tmpdir(), 'punctual-lose-')), 'state'),
        topics: { in: { partitions: 2 } },
        commitIntervalMs: 10,
        clock,
        scheduler: clock,
        logger: silentLogger,
      })
      await rt.start()
      const p = rt.producer<string, string>('in')
      const send = async (from: number, to: number): Promise<void> => {
        for (let i = from; i < to; i++) p.send(`k${i % 7}`, 'v', i)
        await rt.idle()
      }
      await send(0, 30)
      clock.advance(10) // a commit: counts of 30 records
      await rt.idle()
      await send(30, 50) // not committed
      if (lose) {
        await rt.loseTasks(['0_1'])
        assert.deepEqual(rt.taskIds(), ['0_0'])
        await send(50, 60) // 0_1's share waits
        await rt.assignTasks(['0_1'])
        await rt.idle()
      } else await send(50, 60)
      await rt.stop()
      return counted
    }
    const expected = await run(false)
    const got = await run(true)
    const last = (counts: Array<[string, number]>): Map<string, number> => new Map(counts)
    assert.deepEqual(last(got), last(expected), 'every key ends with the count of an uninterrupted run')
    const seen = new Set(got.map(([k, n]) => `${k}=${n}`))
    for (const [k, n] of expected) assert.ok(seen.has(`${k}=${n}`), `${k}=${n} was reported`)
    assert.ok(got.length > expected.length, `the lost task's output since its last commit came again (${got.length} reports, ${expected.length} uninterrupted)`)
  })

  it('refuses to lose a task without a state directory', async () => {
    const rt = new EmbeddedRuntime(topology(), { applicationId: 'lose-mem', topics: { in: { partitions: 2 } }, logger: silentLogger })
    await rt.start()
    await assert.rejects(() => rt.loseTasks(['0_1']), /loseTasks: without a state directory a task has no commit to resume from; revoke it instead/)
    await rt.stop()
  })

  it('a restore whose records arrive asynchronously waits for them without polling', async () => {
    const clock = new ManualClock(0)
    const counted: Array<[string, number]> = []
    const captured: ChangelogRecord[] = []
    const rt = new EmbeddedRuntime(countingTopology('in', (key, n) => void counted.push([key, n])), {
      applicationId: 'restore-async',
      clock,
      scheduler: clock,
      logger: silentLogger,
      changelog: (commits) => commits.forEach((c) => captured.push(...c.records)),
    })
    await rt.start()
    const p = rt.producer<string, string>('in')
    for (const k of ['a', 'b', 'a']) p.send(k, 'v', 1)
    await rt.idle()
    await rt.revokeTasks(['0_0'])

    // The task's changelog, as a fetching source delivers it: nothing, then half, then the rest.
    let available = 0
    let position = 0
    let reads = 0
    let arrived: (() => void) | undefined
    const source: ChangelogSource = {
      remaining: () => captured.length - position,
      read(max) {
        reads++
        const batch = captured.slice(position, Math.min(available, position + max))
        position += batch.length
        return batch
      },
      whenReadable: () => new Promise<void>((resolve) => (arrived = resolve)),
    }
    const arrive = (n: number): void => {
      available = Math.min(captured.length, available + n)
      arrived?.()
    }
    const turns = async (): Promise<void> => {
      for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r))
    }
    const assigned = rt.assignTasks(['0_0'], () => source)
    await turns()
    assert.ok(reads <= 2, `${reads} reads with nothing to read`)
    assert.deepEqual(rt.restoreProgress(), [{ taskId: '0_0', from: 'changelog', restored: 0, remaining: captured.length }])
    arrive(Math.ceil(captured.length / 2))
    await turns()
    assert.ok(reads <= 4, `${reads} reads for one arrival`)
    assert.equal(rt.restoreProgress()[0]!.restored, Math.ceil(captured.length / 2))
    arrive(captured.length)
    await assigned
    assert.deepEqual(rt.taskIds(), ['0_0'])
    counted.length = 0
    p.send('a', 'v', 2)
    await rt.idle()
    assert.deepEqual(counted, [['a', 3]], 'rebuilt from the records: a was counted twice before')
    await rt.stop()
  })

  it('logs each task restored, from where, how much and how long', async () => {
    const stateDir = join(mkdtempSync(join(tmpdir(), 'punctual-restore-log-')), 'state')
    const first = new EmbeddedRuntime(countingTopology('in'), { applicationId: 'restore-log', stateDir, logger: silentLogger })
    await first.start()
    for (const k of ['a', 'b', 'c', 'a']) first.producer<string, string>('in').send(k, 'v', 1)
    await first.stop()
    const lines: string[] = []
    const second = new EmbeddedRuntime(countingTopology('in'), { applicationId: 'restore-log', stateDir, logger: createConsoleLogger({ write: (l) => void lines.push(l) }) })
    await second.start()
    await second.stop()
    const restored = lines.filter((l) => l.includes('restored from the state directory'))
    assert.equal(restored.length, 1, lines.join('\n'))
    assert.match(restored[0]!, /task 0_0 restored from the state directory/)
    assert.match(restored[0]!, /entries=3\b/, 'three keys in the count store')
  })
})
