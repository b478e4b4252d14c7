import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { freshStateDir } from '../helpers/durable.js'
import { EmbeddedRuntime, QueryableStoreTypes, Serdes, silentLogger, StreamsBuilder } from '../../src/index.js'
import type { Topology } from '../../src/index.js'
import { ManualClock } from '../../src/testing/index.js'
import { runJoin } from '../helpers/join-driver.js'
import type { SideInput } from '../helpers/join-driver.js'

const str = { keySerde: Serdes.String(), valueSerde: Serdes.String() }

/** flights (flight id -> origin airport) joined with the global table airports (code -> state), by origin. */
function topology(left: boolean, out: (line: string) => void): Topology {
  const b = new StreamsBuilder()
  const airports = b.globalTable<string, string>('airports', str, { name: 'airports' })
  const flights = b.stream<string, string>('flights', str)
  const joiner = (origin: string, state: string | null): string => `${origin} in ${state}`
  const joined = left ? flights.leftJoin(airports, (_flight, origin) => origin, joiner) : flights.join(airports, (_flight, origin) => origin, joiner)
  joined.process(() => ({ process: (r) => out(`${r.key}:${r.value}@${r.timestamp}`) }))
  return b.build()
}

type Input = SideInput<'airports' | 'flights'>

/** The table as it stands when each flight arrives; the flight's key and timestamp. */
function model(left: boolean, inputs: readonly Input[]): string[] {
  const table = new Map<string, string>()
  const out: string[] = []
  for (const r of inputs) {
    if (r.side === 'airports') {
      if (r.value === null) table.delete(r.key)
      else table.set(r.key, r.value)
    } else if (r.value !== null) {
      const state = table.get(r.value) ?? null
      if (state !== null || left) out.push(`${r.key}:${r.value} in ${state}@${r.ts}`)
    }
  }
  return out
}

describe('global tables (GlobalKTable) and stream-global table joins', () => {
  it('join each flight with the table as it stands, by the key the selector picks; left joins keep the misses', () => {
    const inputs: Input[] = [
      { side: 'airports', key: 'SEA', value: 'WA', ts: 0 },
      { side: 'flights', key: 'f1', value: 'SEA', ts: 5 },
      { side: 'flights', key: 'f2', value: 'BOS', ts: 6 },
      { side: 'airports', key: 'BOS', value: 'MA', ts: 0 },
      { side: 'flights', key: 'f3', value: 'BOS', ts: 7 },
      { side: 'airports', key: 'SEA', value: null, ts: 0 },
      { side: 'flights', key: 'f4', value: 'SEA', ts: 8 },
    ]
    assert.deepEqual(runJoin((out) => topology(false, out), inputs), ['f1:SEA in WA@5', 'f3:BOS in MA@7'])
    assert.deepEqual(runJoin((out) => topology(true, out), inputs), ['f1:SEA in WA@5', 'f2:BOS in null@6', 'f3:BOS in MA@7', 'f4:SEA in null@8'])
  })

  it('match the model for random interleavings of table updates and stream records (property)', () => {
    const input = fc.record({
      side: fc.constantFrom<'airports' | 'flights'>('airports', 'flights'),
      key: fc.constantFrom('SEA', 'BOS', 'f1', 'f2'),
      value: fc.option(fc.constantFrom('SEA', 'BOS', 'ORD', 'WA', 'MA'), { freq: 5 }),
      ts: fc.integer({ min: 0, max: 30 }),
    })
    fc.assert(
      fc.property(fc.boolean(), fc.array(input, { maxLength: 40 }), (left, inputs) => assert.deepEqual(runJoin((out) => topology(left, out), inputs), model(left, inputs))),
      { numRuns: 200 },
    )
  })

  it('on the embedded runtime: every task sees every key (no co-partitioning), updates while running count, and the store answers queries', async () => {
    const out: string[] = []
    const rt = new EmbeddedRuntime(topology(false, (l) => out.push(l)), { applicationId: 'global', topics: { flights: { partitions: 4 }, airports: { partitions: 3 } }, logger: silentLogger })
    const states: Record<string, string> = { SEA: 'WA', BOS: 'MA', ORD: 'IL', SFO: 'CA', JFK: 'NY', ATL: 'GA' }
    // Written before start: the table is read to its end before any flight is processed.
    for (const [code, state] of Object.entries(states)) rt.producer<string, string>('airports').send(code, state, 0)
    for (const [i, code] of Object.keys(states).entries()) rt.producer<string, string>('flights').send(`f${i}`, code, 10 + i)
    await rt.start()
    await rt.idle()
    assert.deepEqual(out.sort(), Object.entries(states).map(([code, state], i) => `f${i}:${code} in ${state}@${10 + i}`).sort())
    rt.producer<string, string>('airports').send('DEN', 'CO', 0)
    await rt.idle()
    rt.producer<string, string>('flights').send('f9', 'DEN', 30)
    await rt.idle()
    assert.equal(out.at(-1), 'f9:DEN in CO@30')
    const airports = rt.store('airports', QueryableStoreTypes.keyValueStore<string, string>())
    assert.equal(airports.get('ORD'), 'IL')
    assert.equal(airports.approximateNumEntries(), 7)
    await rt.stop()
  })

  it('without a state directory, releases the records the global store applied (a late subscriber sees only the rest)', async () => {
    const clock = new ManualClock(0)
    const rt = new EmbeddedRuntime(topology(false, () => {}), { applicationId: 'global-release', clock, scheduler: clock, commitIntervalMs: 10, logger: silentLogger })
    await rt.start()
    // Enough records for several of the log's chunks (memory is released a whole chunk at a time).
    for (let i = 0; i < 5000; i++) rt.producer<string, string>('airports').send(`A${i}`, 'X', 0)
    await rt.idle()
    // A flight processed after the commit interval: the commit releases what every reader has passed.
    clock.advance(20)
    rt.producer<string, string>('flights').send('f1', 'A1', 1)
    await rt.idle()
    rt.producer<string, string>('airports').send('A5000', 'Y', 0)
    const seen: string[] = []
    rt.subscribe<string, string>('airports', (r) => seen.push(String(r.key)))
    await rt.idle()
    await rt.stop()
    assert.ok(seen.length < 1000, `most of the 5,000 applied records are gone from memory (a late subscriber got ${seen.length})`)
    assert.equal(seen.at(-1), 'A5000', 'the record not yet passed by a commit is still there')
    assert.equal(rt.committedEndOffsets('airports')[0], 5001)
  })

  it('in a durable run, a restart reads the table again from its topic', async () => {
    const dir = freshStateDir()
    const first = new EmbeddedRuntime(topology(false, () => {}), { applicationId: 'global-durable', stateDir: dir, logger: silentLogger })
    await first.start()
    first.producer<string, string>('airports').send('SEA', 'WA', 0)
    first.producer<string, string>('airports').send('BOS', 'MA', 0)
    first.producer<string, string>('airports').send('BOS', 'NH', 1)
    await first.stop()
    const out: string[] = []
    const second = new EmbeddedRuntime(topology(false, (l) => out.push(l)), { applicationId: 'global-durable', stateDir: dir, logger: silentLogger })
    await second.start()
    second.producer<string, string>('flights').send('f1', 'BOS', 5)
    second.producer<string, string>('flights').send('f2', 'SEA', 6)
    await second.stop()
    assert.deepEqual(out, ['f1:BOS in NH@5', 'f2:SEA in WA@6'])
  })

  it('describes the global store apart from the sub-topologies', () => {
    const t = topology(false, () => {})
    assert.match(t.describe(), /Global store: airports \(not in any task\)\n {4}Source: KSTREAM-SOURCE-\d+ \(topics: \[airports\]\)/)
    assert.equal(t.subtopologies().length, 1, 'the global store makes no tasks')
    assert.deepEqual(t.subtopologies()[0]!.sourceTopics, ['flights'])
  })

  it('refuses a key selector that is not a function', () => {
    const b = new StreamsBuilder()
    const table = b.globalTable<string, string>('t')
    assert.throws(() => b.stream<string, string>('s').join(table, 'origin' as never, (v, t) => v + t), /join: the key selector of a global table join must be a function, got string/)
  })
})
