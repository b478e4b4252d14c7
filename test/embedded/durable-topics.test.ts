import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { BufferConfig, EmbeddedRuntime, silentLogger, StreamsBuilder, Suppressed, TimeWindows, Topology } from '../../src/index.js'
import { ManualClock } from '../../src/testing/index.js'
import type { Windowed } from '../../src/index.js'
import { freshStateDir, oneRunAndThree } from '../helpers/durable.js'

const fresh = freshStateDir
const turns = async (n: number): Promise<void> => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r))
}

/** Windowed counts with final results (suppression named 'final'), collected as "key@start=count". */
function finalCounts(out: string[], windows: TimeWindows, buffer: Parameters<typeof Suppressed.untilWindowCloses>[0]): Topology {
  const b = new StreamsBuilder()
  b.stream('in')
    .groupByKey()
    .windowedBy(windows)
    .count()
    .suppress(Suppressed.untilWindowCloses<Windowed<string>, number>(buffer).withName('final'))
    .toStream()
    .addStatelessNode(undefined, 'OUT', (r) => out.push(`${r.key.key}@${r.key.window.start}=${r.value}`))
  return b.build()
}

/** input -> upper-case -> output. */
const upper = (): Topology =>
  new Topology()
    .addSource('in', 'input')
    .addProcessor<string, string, string, string>('upper', () => {
      let ctx: { forward(r: { key: string; value: string; timestamp: number; headers: [] }): void }
      return {
        init(c) {
          ctx = c as never
        },
        process(r) {
          ctx.forward({ key: r.key, value: r.value.toUpperCase(), timestamp: r.timestamp, headers: [] })
        },
      }
    }, 'in')
    .addSink('out', 'output', {}, 'upper')

describe('durable topics (a state directory)', () => {
  it('subscribers see output only once a commit made it durable (read committed)', async () => {
    const rt = new EmbeddedRuntime(upper(), { applicationId: 'rc', stateDir: fresh(), commitIntervalMs: 3_600_000, logger: silentLogger })
    const seen: string[] = []
    rt.subscribe<string, string>('output', (r) => seen.push(r.value!))
    await rt.start()
    rt.producer('input').send('k', 'a', 1)
    await turns(20)
    assert.equal(rt.metrics().processedRecords, 1, 'the record was processed')
    assert.deepEqual(seen, [], 'but its output is not committed yet')
    await rt.stop()
    assert.deepEqual(seen, ['A'], 'the stop commits it')
  })

  it('in memory, subscribers see output right after the slice that wrote it', async () => {
    const rt = new EmbeddedRuntime(upper(), { applicationId: 'rc-mem', commitIntervalMs: 3_600_000, logger: silentLogger })
    const seen: string[] = []
    rt.subscribe<string, string>('output', (r) => seen.push(r.value!))
    await rt.start()
    rt.producer('input').send('k', 'a', 1)
    await turns(20)
    assert.deepEqual(seen, ['A'])
    await rt.stop()
  })

  it('a restart finds the outputs and the input end offsets, and processes only new input', async () => {
    const dir = fresh()
    const a = new EmbeddedRuntime(upper(), { applicationId: 'rs', stateDir: dir, topics: { input: { partitions: 2 } }, logger: silentLogger })
    await a.start()
    const pa = a.producer('input')
    for (const k of ['a', 'b', 'c', 'd']) pa.send(k, k, 1)
    await a.stop()
    assert.equal(a.committedEndOffsets('input').reduce((x, y) => x + y, 0), 4)

    const b = new EmbeddedRuntime(upper(), { applicationId: 'rs', stateDir: dir, topics: { input: { partitions: 2 } }, logger: silentLogger })
    const all: string[] = []
    const latest: string[] = []
    const input: string[] = []
    b.subscribe<string, string>('output', (r) => all.push(r.value!))
    b.subscribe<string, string>('output', (r) => latest.push(r.value!), { from: 'latest' })
    b.subscribe<string, string>('input', (r) => input.push(r.value!))
    b.producer('input').send('e', 'e', 2) // before start: kept after what the state directory holds
    await b.start()
    assert.equal(b.resumed, true)
    await b.stop()
    assert.equal(b.committedEndOffsets('input').reduce((x, y) => x + y, 0), 5, 'the new record follows the restored ones')
    assert.equal(b.metrics().processedRecords, 1, 'only the new record is processed')
    assert.deepEqual(all.sort(), ['A', 'B', 'C', 'D', 'E'], 'earliest: the outputs of both runs')
    assert.deepEqual(latest, ['E'], 'latest: only what was written after start')
    assert.deepEqual(input, ['e'], 'consumed input is not kept: only the record written in this run')
  })

  it('refuses a topic whose partition count differs from the state directory', async () => {
    const dir = fresh()
    const a = new EmbeddedRuntime(upper(), { applicationId: 'pc', stateDir: dir, topics: { input: { partitions: 2 } }, logger: silentLogger })
    await a.start()
    a.producer('input').send('a', 'a', 1)
    await a.stop()
    const b = new EmbeddedRuntime(upper(), { applicationId: 'pc', stateDir: dir, topics: { input: { partitions: 3 } }, logger: silentLogger })
    await assert.rejects(b.start(), /topic "input" has 2 partitions in the state directory but 3 in this application/)
  })

  it('retentionMs: records committed longer ago than the retention are deleted, read or not', async () => {
    const dir = fresh()
    const run = async (now: number, send: string | undefined, seen?: string[]): Promise<void> => {
      const clock = new ManualClock(now)
      const rt = new EmbeddedRuntime(upper(), { applicationId: 'ret', stateDir: dir, clock, topics: { output: { partitions: 1, retentionMs: 500 } }, logger: silentLogger })
      if (seen !== undefined) rt.subscribe<string, string>('output', (r) => seen.push(r.value!))
      await rt.start()
      if (send !== undefined) rt.producer('input').send('k', send, now)
      await rt.stop()
    }
    await run(0, 'x')
    await run(400, 'y') // x is 400 ms old: kept
    const kept: string[] = []
    await run(450, undefined, kept)
    assert.deepEqual(kept, ['X', 'Y'])
    await run(1000, 'z') // x (committed at 0) and y (at 400) are older than 500 ms
    const left: string[] = []
    await run(1000, undefined, left)
    assert.deepEqual(left, ['Z'])
  })

  it('refuses a negative retention, naming the topic', () => {
    assert.throws(() => new EmbeddedRuntime(upper(), { applicationId: 'x', topics: { out: { partitions: 1, retentionMs: -1 } } }), /topic "out": retentionMs must be an integer >= 0, got -1/)
  })

  it('windows updated across many commits and three runs give the results of one run', async () => {
    // Windows longer than one run's records, and a commit every 7 records: each window is written by
    // many commits, restored, and updated again.
    const records: Array<[string, number]> = Array.from({ length: 300 }, (_, i) => [`k${(i * 7) % 5}`, i])
    records.push(['end', 1000])
    const { once, resumed } = await oneRunAndThree('windows', (out) => finalCounts(out, TimeWindows.ofSizeAndGrace(150, 10), BufferConfig.unbounded()), records)
    assert.ok(once.length >= 10)
    assert.deepEqual(resumed, once)
  })

  it('a window restored at a restart and updated once before stopping keeps that update', async () => {
    const dir = fresh()
    const out: string[] = []
    const runs: Array<Array<[string, number]>> = [[['a', 1], ['a', 2], ['a', 3]], [['a', 4]], [['a', 5]], [['end', 500]]]
    for (const records of runs) {
      const rt = new EmbeddedRuntime(finalCounts(out, TimeWindows.ofSizeAndGrace(100, 0), BufferConfig.unbounded()), { applicationId: 'windows', stateDir: dir, logger: silentLogger })
      await rt.start()
      for (const [k, ts] of records) rt.producer('in').send(k, 'v', ts)
      await rt.stop()
    }
    assert.deepEqual(out, ['a@0=5'])
  })

  it('windowed final results with a spilling buffer resume across restarts exactly as one run', async () => {
    // Small commits, so spilled entries change between commits.
    const records: Array<[string, number]> = Array.from({ length: 300 }, (_, i) => [`k${(i * 7) % 11}`, i + ((i * 31) % 9)])
    const { once, resumed } = await oneRunAndThree('spill', (out) => finalCounts(out, TimeWindows.ofSizeAndGrace(10, 5), BufferConfig.maxRecords(2).spillToDiskWhenFull()), records)
    assert.ok(once.length > 100)
    assert.deepEqual(resumed, once)
  })
})
