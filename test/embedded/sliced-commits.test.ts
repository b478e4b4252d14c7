import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { EmbeddedRuntime, ErrorHandlers, Serdes, StateDescriptors, Stores, Topology, silentLogger } from '../../src/index.js'
import type { KeyedProcessorContext, KeyValueStore, ListState, MapState, ProcessorContext, ValueState } from '../../src/index.js'
import { seededRandom } from '../../src/testing/index.js'
import { freshStateDir } from '../helpers/durable.js'

/**
 * Per key: a value state object and a map entry changed in place (`n++` on the object read, then
 * written back), and a list state; each record outputs what they hold. A commit that took them must
 * write them as they were then, not as later records left them.
 */
function counting(poison?: number): Topology {
  return new Topology()
    .addSource('in', 'in', { keySerde: Serdes.String(), valueSerde: Serdes.String() })
    .addKeyedProcessor<string, string, string, string>(
      'count',
      () => {
        let ctx: KeyedProcessorContext<string, string, string>
        let value: ValueState<{ n: number }>
        let map: MapState<string, { n: number }>
        let list: ListState<number>
        let seen = 0
        return {
          init(c) {
            ctx = c
            value = c.getState(StateDescriptors.value<{ n: number }>('value'))
            map = c.getMapState(StateDescriptors.map<string, { n: number }>('map'))
            list = c.getListState(StateDescriptors.list<number>('list'))
          },
          process(r) {
            if (++seen === poison) throw new Error('poison')
            const v = value.value() ?? { n: 0 }
            v.n++
            value.update(v)
            const m = map.get('c') ?? { n: 0 }
            m.n += 2
            map.put('c', m)
            list.add(r.timestamp)
            ctx.forward({ ...r, value: `${r.key}:${v.n}:${m.n}:${list.get().length}` })
          },
        }
      },
      'in',
    )
    .addSink('out', 'out', { keySerde: Serdes.String(), valueSerde: Serdes.String() }, 'count')
}

/**
 * The same lines in the same order. Names the first difference: the assert module's diff of two long
 * arrays that differ in many places takes minutes.
 */
function assertSameOutput(actual: readonly string[], expected: readonly string[]): void {
  const at = actual.findIndex((line, i) => line !== expected[i])
  assert.equal(at, -1, `line ${at} differs: ${actual[at]} where an uninterrupted run wrote ${expected[at]}`)
  assert.equal(actual.length, expected.length)
}

const yieldTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/**
 * Runs `records` (key, timestamp) through `build()` in memory, and through `build(15_000)` with a state
 * directory and every commit sliced (records sent a few at a time, so processing goes on while commits
 * are being written), which fails at the 15,000th record; a run on the same directory then resumes.
 * Returns the output of the uninterrupted run, the resumed output, and the commits before the failure.
 */
async function failAndResume(
  applicationId: string,
  build: (poison?: number) => Topology,
  records: ReadonlyArray<readonly [string, number]>,
  commitMaxRecords = 1000,
): Promise<{ expected: string[]; output: string[]; commits: number; onDisk: number }> {
  const expected: string[] = []
  const whole = new EmbeddedRuntime(build(), { applicationId, logger: silentLogger })
  whole.subscribe<string, string>('out', (r) => expected.push(r.value!))
  await whole.start()
  for (const [k, ts] of records) whole.producer('in').send(k, 'v', ts)
  await whole.stop()

  const config = { applicationId, stateDir: freshStateDir(), commitMaxRecords, sliceCommitsAbove: 0, logger: silentLogger, errorHandler: ErrorHandlers.failOnUserCodeErrors(silentLogger) }
  const failing = new EmbeddedRuntime(build(15_000), config)
  const failed = new Promise<Error>((resolve) => failing.on('error', resolve))
  await failing.start()
  for (let i = 0; i < records.length && failing.state === 'RUNNING'; i++) {
    const [k, ts] = records[i]!
    failing.producer('in').send(k, 'v', ts)
    if (i % 100 === 99) await yieldTurn()
  }
  const failure = await failed
  assert.match(failure.message, /poison/, String((failure.cause as Error | undefined)?.stack))

  const output: string[] = []
  const resumed = new EmbeddedRuntime(build(), config)
  resumed.subscribe<string, string>('out', (r) => output.push(r.value!))
  await resumed.start()
  // The input records on disk are processed again from the committed positions; the rest are sent.
  const onDisk = resumed.committedEndOffsets('in').reduce((a, b) => a + b, 0)
  for (const [k, ts] of records.slice(onDisk)) resumed.producer('in').send(k, 'v', ts)
  await resumed.stop()
  return { expected, output, commits: failing.commitStats().commits, onDisk }
}

describe('commits written in slices (copy on write)', () => {
  it('a run that fails mid-way while commits are sliced resumes with exactly the output of an uninterrupted run', async () => {
    const random = seededRandom(7)
    const records = Array.from({ length: 20_000 }, (_, i) => [`k${Math.floor(random() * 3000)}`, i] as const)
    const { expected, output, commits, onDisk } = await failAndResume('sliced', counting, records)
    assert.ok(commits > 10, `commits before the failure: ${commits}`)
    assert.ok(onDisk > 0, `input records on disk after the failure: ${onDisk}`)
    assertSameOutput(output, expected)
  })
})

/** The flights demo's airport alerts: event-time timers deleted and registered again, TTL state. */
function alerts(poison?: number): Topology {
  return new Topology()
    .addSource('in', 'in', { keySerde: Serdes.String(), valueSerde: Serdes.String() })
    .addKeyedProcessor<string, string, string, string>(
      'alerts',
      () => {
        let ctx: KeyedProcessorContext<string, string, string>
        let last: ValueState<number>
        let seen = 0
        return {
          init(c) {
            ctx = c
            last = c.getState(StateDescriptors.value<number>('last', { ttl: { ttlMs: 500, timeDomain: 'event' } }))
          },
          process(r) {
            if (++seen === poison) throw new Error('poison')
            const previous = last.value()
            if (previous !== undefined && r.timestamp <= previous) return
            if (previous !== undefined) ctx.timers.deleteEventTimeTimer(previous + 100)
            last.update(r.timestamp)
            ctx.timers.registerEventTimeTimer(r.timestamp + 100)
          },
          onTimer(t) {
            ctx.forward({ key: t.key, value: `quiet ${t.key} ${last.value() ?? -1} ${t.timestamp}`, timestamp: t.timestamp, headers: [] })
          },
          onExpire(e) {
            ctx.forward({ key: e.key, value: `expired ${e.key} ${String(e.value)} ${e.expiredAt}`, timestamp: e.expiredAt, headers: [] })
          },
        }
      },
      'in',
    )
    .addSink('out', 'out', { keySerde: Serdes.String(), valueSerde: Serdes.String() }, 'alerts')
}

describe('commits written in slices: timers and TTL', () => {
  it('a run that fails mid-way resumes with exactly the output of an uninterrupted run', async () => {
    const random = seededRandom(11)
    // Out of order by up to 50 ms, 300 keys: timers are deleted, registered, fire; state expires.
    const records = Array.from({ length: 20_000 }, (_, i) => [`k${Math.floor(random() * 300)}`, i * 2 + Math.floor(random() * 50)] as const)
    const { expected, output } = await failAndResume('alerts', alerts, records)
    assert.ok(expected.length > 1000, `alerts: ${expected.length}`)
    assertSameOutput(output, expected)
  })
})

/**
 * Per key, in an in-memory and in a persistent key-value store: a flat record and a nested one, each
 * read, changed in place, and put back. A commit encodes a flat record later from a copy and a nested
 * one at once; either way it must write them as they were when it was taken.
 */
function storeCounting(poison?: number): Topology {
  type Flat = { n: number; last: number }
  type Nested = { inner: { n: number } }
  return new Topology()
    .addSource('in', 'in', { keySerde: Serdes.String(), valueSerde: Serdes.String() })
    .addProcessor<string, string, string, string>(
      'count',
      () => {
        let ctx: ProcessorContext<string, string>
        let flat: KeyValueStore<string, Flat>
        let nested: KeyValueStore<string, Nested>
        let seen = 0
        return {
          init(c) {
            ctx = c
            flat = c.getStateStore('flat')
            nested = c.getStateStore('nested')
          },
          process(r) {
            if (++seen === poison) throw new Error('poison')
            const f = flat.get(r.key!) ?? { n: 0, last: 0 }
            f.n++
            f.last = r.timestamp
            flat.put(r.key!, f)
            const m = nested.get(r.key!) ?? { inner: { n: 0 } }
            m.inner.n += 2
            nested.put(r.key!, m)
            ctx.forward({ ...r, value: `${r.key}:${f.n}:${f.last}:${m.inner.n}` })
          },
        }
      },
      'in',
    )
    .addStateStore(Stores.inMemoryKeyValueStore<string, Flat>('flat'), 'count')
    .addStateStore(Stores.persistentKeyValueStore<string, Nested>('nested', { cacheEntries: 100 }), 'count')
    .addSink('out', 'out', { keySerde: Serdes.String(), valueSerde: Serdes.String() }, 'count')
}

describe('commits written in slices: key-value stores whose values change in place', () => {
  it('a run that fails mid-way resumes with exactly the output of an uninterrupted run', async () => {
    // Commits of thousands of keys take many slices, so records change values of a taken commit.
    const random = seededRandom(13)
    const records = Array.from({ length: 20_000 }, (_, i) => [`k${Math.floor(random() * 5000)}`, i] as const)
    const { expected, output, commits } = await failAndResume('stores', storeCounting, records, 4000)
    assert.ok(commits >= 3, `commits before the failure: ${commits}`)
    assertSameOutput(output, expected)
  })
})
