import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { Named, Serdes, StreamsBuilder, TimeWindows } from '../../src/index.js'
import { TopologyTestDriver } from '../../src/testing/index.js'
import type { Topology } from '../../src/index.js'
import { runJoin } from '../helpers/join-driver.js'

type JoinType = 'inner' | 'left' | 'outer'
interface Input {
  readonly side: 'left' | 'right'
  readonly key: string
  readonly value: string | null
  readonly ts: number
}

const str = { keySerde: Serdes.String(), valueSerde: Serdes.String() }
const joined = (l: string | null, r: string | null): string => `${l}+${r}`

function topology(type: JoinType, out: (line: string) => void): Topology {
  const b = new StreamsBuilder()
  const left = b.table<string, string>('left', str)
  const right = b.table<string, string>('right', str)
  const result = type === 'inner' ? left.join(right, joined) : type === 'left' ? left.leftJoin(right, joined) : left.outerJoin(right, joined)
  result.toStream().process(() => ({ process: (r) => out(`${r.key}:${r.value}@${r.timestamp}`) }))
  return b.build()
}

function run(type: JoinType, inputs: readonly Input[]): string[] {
  return runJoin((out) => topology(type, out), inputs)
}

/**
 * SEMANTICS 8, table-table joins, from each table's current values: an update emits the join of the
 * key's values at the later of the two timestamps; nothing while the other side is absent (inner), or
 * while neither side holds the key (left, outer); deleting a held key emits a tombstone.
 */
function model(type: JoinType, inputs: readonly Input[]): string[] {
  const tables = { left: new Map<string, { v: string; ts: number }>(), right: new Map<string, { v: string; ts: number }>() }
  const out: string[] = []
  for (const r of inputs) {
    const mine = tables[r.side]
    const other = tables[r.side === 'left' ? 'right' : 'left'].get(r.key)
    const held = mine.has(r.key)
    if (r.value === null) mine.delete(r.key)
    else mine.set(r.key, { v: r.value, ts: r.ts })
    const l = r.side === 'left' ? r.value : (other?.v ?? null)
    const rr = r.side === 'right' ? r.value : (other?.v ?? null)
    const ts = other === undefined ? r.ts : Math.max(r.ts, other.ts)
    let emit: string | null | undefined
    if (type === 'inner') emit = other === undefined ? undefined : r.value === null ? null : joined(l, rr)
    else if (type === 'left') {
      if (r.side === 'left') emit = other === undefined && r.value === null && !held ? undefined : r.value === null ? null : joined(l, rr)
      else emit = other === undefined ? undefined : joined(l, rr)
    } else emit = other === undefined && r.value === null && !held ? undefined : other === undefined && r.value === null ? null : joined(l, rr)
    if (emit !== undefined) out.push(`${r.key}:${emit}@${ts}`)
  }
  return out
}

const inputsArb = fc.array(
  fc.record({
    side: fc.constantFrom<'left' | 'right'>('left', 'right'),
    key: fc.constantFrom('A', 'B', 'C'),
    value: fc.option(fc.constantFrom('v', 'w', 'x'), { nil: null, freq: 4 }),
    ts: fc.integer({ min: 0, max: 60 }),
  }),
  { maxLength: 50 },
)

describe('table-table joins', () => {
  it('inner, left and outer joins emit the join of both current values, at the later timestamp, and tombstones as Kafka Streams does', () => {
    const inputs: Input[] = [
      { side: 'left', key: 'A', value: 'a1', ts: 5 },
      { side: 'right', key: 'A', value: 'b1', ts: 3 },
      { side: 'right', key: 'A', value: null, ts: 8 },
      { side: 'left', key: 'A', value: null, ts: 9 },
    ]
    assert.deepEqual(run('inner', inputs), ['A:a1+b1@5', 'A:null@8'])
    assert.deepEqual(run('left', inputs), ['A:a1+null@5', 'A:a1+b1@5', 'A:a1+null@8', 'A:null@9'])
    assert.deepEqual(run('outer', inputs), ['A:a1+null@5', 'A:a1+b1@5', 'A:a1+null@8', 'A:null@9'])
  })

  it('matches the model of SEMANTICS 8 for random updates and deletions of both tables', () => {
    fc.assert(
      fc.property(fc.constantFrom<JoinType>('inner', 'left', 'outer'), inputsArb, (type, inputs) => {
        assert.deepEqual(run(type, inputs), model(type, inputs))
      }),
      { numRuns: 400 },
    )
  })

  it('joins tables derived by filter and mapValues, each keeping its values below its node', () => {
    const out: string[] = []
    const b = new StreamsBuilder()
    const left = b.table<string, string>('left', str).filter((_k, v) => !v.startsWith('z'), Named.as('kept'))
    const right = b.table<string, string>('right', str).mapValues((v) => v.toUpperCase(), Named.as('upper'))
    left.join(right, joined).toStream().process(() => ({ process: (r) => void out.push(`${r.key}:${r.value}@${r.timestamp}`) }))
    const topology = b.build()
    assert.match(topology.describe(), /Processor: kept-MATERIALIZED \(stores: \[kept-STATE-STORE\]\)/)
    const driver = new TopologyTestDriver(topology)
    const l = driver.createInputTopic('left', Serdes.String(), Serdes.String())
    const r = driver.createInputTopic('right', Serdes.String(), Serdes.String())
    l.pipeInput('A', 'a1', 1)
    r.pipeInput('A', 'b1', 2)
    l.pipeInput('A', 'z2', 3)
    r.pipeInput('A', 'b3', 4)
    l.pipeInput('A', 'a4', 5)
    driver.close()
    // The filtered-out value deletes A (a tombstone); the right update then finds no left value.
    assert.deepEqual(out, ['A:a1+B1@2', 'A:null@3', 'A:a4+B3@5'])
  })

  it('refuses a windowed table, naming the operation', () => {
    const b = new StreamsBuilder()
    const windowed = b.stream<string, string>('w', str).groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(10)).count({ name: 'per-window' })
    assert.throws(() => b.table<string, string>('right', str).leftJoin(windowed as never, joined), /leftJoin: windowed table "per-window" cannot be read by key/)
  })
})
