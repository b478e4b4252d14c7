import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { freshStateDir } from '../helpers/durable.js'
import { EmbeddedRuntime, QueryableStoreTypes, Serdes, silentLogger, StreamsBuilder, TimeWindows } from '../../src/index.js'
import type { Topology } from '../../src/index.js'
import { TopologyTestDriver } from '../../src/testing/index.js'

/** A table update: `value` is `group:number`, or null to delete the key. */
interface Update {
  readonly key: string
  readonly value: string | null
  readonly ts: number
}

const str = { keySerde: Serdes.String(), valueSerde: Serdes.String() }
const split = (v: string): { key: string; value: number } => ({ key: v.slice(0, v.indexOf(':')), value: Number(v.slice(v.indexOf(':') + 1)) })

/** users (key -> "group:number") grouped by group: count to 'counts', the numbers' sum to 'sums'. */
function topology(out?: (line: string) => void): Topology {
  const b = new StreamsBuilder()
  const grouped = b.table<string, string>('users', str).groupBy((_k, v) => split(v), { name: 'by-group', keySerde: Serdes.String(), valueSerde: Serdes.JSON<number>() })
  const emit = (what: string) => (r: { key: string; value: number | null; timestamp: number }) => out?.(`${what} ${r.key}=${r.value}@${r.timestamp}`)
  grouped.count({ name: 'counts' }).toStream().process(() => ({ process: emit('count') }))
  grouped
    .aggregate(
      () => 0,
      (_g, n, sum) => sum + n,
      (_g, n, sum) => sum - n,
      { name: 'sums' },
    )
    .toStream()
    .process(() => ({ process: emit('sum') }))
  return b.build()
}

function run(updates: readonly Update[]): string[] {
  const out: string[] = []
  const d = new TopologyTestDriver(topology((l) => out.push(l)))
  const input = d.createInputTopic('users', Serdes.String(), Serdes.String())
  for (const u of updates) input.pipeInput(u.key, u.value, u.ts)
  d.close()
  return out
}

const updates = (max: number): fc.Arbitrary<Update[]> =>
  fc.array(
    fc.record({
      key: fc.constantFrom('k1', 'k2', 'k3', 'k4'),
      value: fc.option(fc.tuple(fc.constantFrom('x', 'y', 'z'), fc.integer({ min: -5, max: 9 })).map(([g, n]) => `${g}:${n}`), { freq: 4 }),
      ts: fc.integer({ min: 0, max: 40 }),
    }),
    { maxLength: max },
  )

describe('KTable.groupBy', () => {
  it('moves a key between groups: the old group loses it, the new one gains it; a delete leaves; a group at 0 stays', () => {
    const out = run([
      { key: 'alice', value: 'eu:1', ts: 1 },
      { key: 'bob', value: 'eu:2', ts: 2 },
      { key: 'alice', value: 'us:3', ts: 3 },
      { key: 'alice', value: 'us:4', ts: 4 },
      { key: 'bob', value: null, ts: 5 },
    ])
    assert.deepEqual(
      out.filter((l) => l.startsWith('count ')),
      ['count eu=1@1', 'count eu=2@2', 'count eu=1@3', 'count us=1@3', 'count us=1@4', 'count eu=0@5'],
    )
    // Same group (us:3 -> us:4): one change, old value out and new value in.
    assert.deepEqual(
      out.filter((l) => l.startsWith('sum ')),
      ['sum eu=1@1', 'sum eu=3@2', 'sum eu=2@3', 'sum us=3@3', 'sum us=4@4', 'sum eu=0@5'],
    )
  })

  it('each result equals the groups of the table as it stands, at the latest timestamp that touched the group (property)', () => {
    fc.assert(
      fc.property(updates(40), (input) => {
        const out = run(input)
        // The model: the table as it stands after each update, and each group's latest timestamp.
        const table = new Map<string, string>()
        const groupTs = new Map<string, number>()
        const expected: string[] = []
        for (const u of input) {
          const old = table.get(u.key)
          if (u.value === null) table.delete(u.key)
          else table.set(u.key, u.value)
          const touched = [...new Set([old, u.value ?? undefined].filter((v): v is string => v !== undefined).map((v) => split(v).key))]
          for (const g of touched) groupTs.set(g, Math.max(groupTs.get(g) ?? -1, u.ts))
          const members = (g: string): number[] => [...table.values()].filter((v) => split(v).key === g).map((v) => split(v).value)
          // Order: a group the key leaves first, then the one it joins (the same group: one result).
          const order = old !== undefined && u.value !== null && split(old).key !== split(u.value).key ? [split(old).key, split(u.value).key] : touched
          for (const g of order) expected.push(`count ${g}=${members(g).length}@${groupTs.get(g)}`)
          for (const g of order) expected.push(`sum ${g}=${members(g).reduce((a, b) => a + b, 0)}@${groupTs.get(g)}`)
        }
        const sortedOut = (what: string, lines: string[]): string[] => lines.filter((l) => l.startsWith(what))
        assert.deepEqual(sortedOut('count ', out), sortedOut('count ', expected))
        assert.deepEqual(sortedOut('sum ', out), sortedOut('sum ', expected))
      }),
      { numRuns: 300 },
    )
  })

  it('reduce: the first value is the aggregate, then adder and subtractor', () => {
    const b = new StreamsBuilder()
    const out: string[] = []
    b.table<string, string>('t', str)
      .groupBy((_k, v) => ({ key: v.slice(0, 1), value: v.slice(1) }), { keySerde: Serdes.String(), valueSerde: Serdes.String() })
      .reduce(
        (agg, v) => `${agg}+${v}`,
        (agg, v) => `${agg}-${v}`,
      )
      .toStream()
      .process(() => ({ process: (r) => out.push(`${r.key}=${r.value}`) }))
    const d = new TopologyTestDriver(b.build())
    const input = d.createInputTopic('t', Serdes.String(), Serdes.String())
    input.pipeInput('k1', 'a1', 1)
    input.pipeInput('k2', 'a2', 2)
    input.pipeInput('k1', 'b3', 3)
    d.close()
    assert.deepEqual(out, ['a=1', 'a=1+2', 'a=1+2-1', 'b=3'])
  })

  it('refuses a windowed table, and functions that are not functions, naming the operation', () => {
    const b = new StreamsBuilder()
    const windowed = b.stream<string, string>('w', str).groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(10)).count({ name: 'per-window' })
    assert.throws(() => windowed.groupBy((k, n) => ({ key: k.key, value: n })), /groupBy: windowed table "per-window" cannot be grouped; turn it into a stream first/)
    const grouped = b.table<string, string>('u', str).groupBy((k, v) => ({ key: v, value: k }))
    assert.throws(() => grouped.aggregate(() => 0, (_k, _v, n) => n, undefined as never), /aggregate: the subtractor must be a function, got undefined/)
  })

  it('restarts exactly from a state directory, and its result answers interactive queries', async () => {
    await fc.assert(
      fc.asyncProperty(updates(30), async (input) => {
        const once: string[] = []
        const whole = new EmbeddedRuntime(topology((l) => once.push(l)), { applicationId: 'group-once', logger: silentLogger })
        await whole.start()
        for (const u of input) whole.producer<string, string | null>('users').send(u.key, u.value, u.ts)
        await whole.stop()
        const dir = freshStateDir()
        const resumed: string[] = []
        const thirds = [input.slice(0, 10), input.slice(10, 20), input.slice(20)]
        let counts: Array<[string, number]> = []
        for (const part of thirds) {
          const rt = new EmbeddedRuntime(topology((l) => resumed.push(l)), { applicationId: 'group-resumed', stateDir: dir, commitMaxRecords: 3, logger: silentLogger })
          await rt.start()
          for (const u of part) rt.producer<string, string | null>('users').send(u.key, u.value, u.ts)
          await rt.idle()
          counts = [...rt.store('counts', QueryableStoreTypes.keyValueStore<string, number>()).all()]
          await rt.stop()
        }
        // Each aggregation reads its own repartition topic (a task of its own): compare each one's results.
        for (const what of ['count ', 'sum ']) assert.deepEqual(resumed.filter((l) => l.startsWith(what)), once.filter((l) => l.startsWith(what)))
        // The last count of each group, as the query read it at the end.
        const last = new Map<string, number>()
        for (const l of once.filter((x) => x.startsWith('count '))) {
          const m = /^count (\w+)=(-?\d+)@/.exec(l)!
          last.set(m[1]!, Number(m[2]))
        }
        assert.deepEqual(counts, [...last].sort(([a], [b]) => (a < b ? -1 : 1)))
      }),
      { numRuns: 15 },
    )
  })
})
