import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { freshStateDir } from '../helpers/durable.js'
import { EmbeddedRuntime, Named, Serdes, silentLogger, StreamsBuilder } from '../../src/index.js'
import type { Processor, StreamRecord, Topology } from '../../src/index.js'
import { runJoin } from '../helpers/join-driver.js'
import { TopologyTestDriver } from '../../src/testing/index.js'

interface Input {
  readonly side: 'stream' | 'table'
  readonly key: string
  readonly value: string | null
  readonly ts: number
}

const str = { keySerde: Serdes.String(), valueSerde: Serdes.String() }
const joined = (s: string, t: string | null): string => `${s}+${t}`

/** Versioned table options: history retention, and the join's grace period. */
interface Versioning {
  readonly history: number
  readonly grace?: number
}

function topology(left: boolean, out: (line: string) => void, viaToTable = false, versioning?: Versioning): Topology {
  const b = new StreamsBuilder()
  const stream = b.stream<string, string>('stream', str)
  const table = viaToTable
    ? b.stream<string, string>('table', str).toTable()
    : b.table<string, string>('table', str, versioning === undefined ? {} : { historyRetentionMs: versioning.history })
  const options = versioning?.grace === undefined ? {} : { gracePeriodMs: versioning.grace }
  const result = left ? stream.leftJoin(table, joined, options) : stream.join(table, joined, options)
  result.process((): Processor<string, string> => ({ process: (r: StreamRecord<string, string>) => out(`${r.key}:${r.value}@${r.timestamp}`) }))
  return b.build()
}

function runOnDriver(left: boolean, inputs: readonly Input[], viaToTable = false, versioning?: Versioning): string[] {
  return runJoin((out) => topology(left, out, viaToTable, versioning), inputs)
}

/** SEMANTICS 8, plain table: the table's latest value at the stream record's arrival, its timestamp. */
function model(left: boolean, inputs: readonly Input[]): string[] {
  const table = new Map<string, string>()
  const out: string[] = []
  for (const r of inputs) {
    if (r.side === 'table') {
      if (r.value === null) table.delete(r.key)
      else table.set(r.key, r.value)
    } else if (r.value !== null) {
      const t = table.get(r.key) ?? null
      if (t !== null || left) out.push(`${r.key}:${joined(r.value, t)}@${r.ts}`)
    }
  }
  return out
}

/**
 * SEMANTICS 8, versioned table (KIP-914, KIP-923): the table keeps versions (writes older than its
 * largest timestamp minus the history are dropped; reads that old see only the latest version); a
 * stream record is joined with the version valid at its timestamp; with a grace period it waits until
 * the largest waiting timestamp reaches t + grace and leaves in (timestamp, key, arrival) order.
 */
function versionedModel(left: boolean, versioning: Versioning, inputs: readonly Input[]): string[] {
  const versions = new Map<string, Array<{ ts: number; value: string | null }>>()
  let tableTime = -1
  const asOf = (key: string, t: number): string | null => {
    const list = versions.get(key) ?? []
    const latest = list[list.length - 1]
    if (t < tableTime - versioning.history) return latest !== undefined && latest.ts <= t ? latest.value : null
    return list.filter((v) => v.ts <= t).pop()?.value ?? null
  }
  const out: string[] = []
  const join = (r: Input): void => {
    const t = asOf(r.key, r.ts)
    if (t !== null || left) out.push(`${r.key}:${joined(r.value as string, t)}@${r.ts}`)
  }
  let waiting: Array<Input & { seq: number }> = []
  let bufferTime = -1
  let seq = 0
  for (const r of inputs) {
    if (r.side === 'table') {
      if (r.ts < tableTime - versioning.history) continue
      tableTime = Math.max(tableTime, r.ts)
      const list = (versions.get(r.key) ?? []).filter((v) => v.ts !== r.ts)
      list.push({ ts: r.ts, value: r.value })
      versions.set(r.key, list.sort((a, b) => a.ts - b.ts))
    } else if (r.value !== null) {
      if (versioning.grace === undefined) join(r)
      else if (r.ts < bufferTime - versioning.grace) join(r)
      else {
        bufferTime = Math.max(bufferTime, r.ts)
        waiting.push({ ...r, seq: seq++ })
        const limit = bufferTime - versioning.grace
        const due = waiting.filter((w) => w.ts <= limit).sort((a, b) => a.ts - b.ts || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0) || a.seq - b.seq)
        waiting = waiting.filter((w) => w.ts > limit)
        for (const w of due) join(w)
      }
    }
  }
  return out
}

const inputsArb = (maxLength: number): fc.Arbitrary<Input[]> =>
  fc.array(
    fc.record({
      side: fc.constantFrom<'stream' | 'table'>('stream', 'table'),
      key: fc.constantFrom('A', 'B', 'C'),
      value: fc.option(fc.constantFrom('v', 'w', 'x'), { nil: null, freq: 6 }),
      ts: fc.integer({ min: 0, max: 60 }),
    }),
    { maxLength },
  )

describe('stream-table joins', () => {
  it('join the table’s value when the stream record arrives, at the stream record’s timestamp; table updates emit nothing', () => {
    const inputs: Input[] = [
      { side: 'stream', key: 'A', value: 's1', ts: 1 },
      { side: 'table', key: 'A', value: 't1', ts: 9 },
      { side: 'stream', key: 'A', value: 's2', ts: 0 },
      { side: 'table', key: 'A', value: null, ts: 10 },
      { side: 'stream', key: 'A', value: 's3', ts: 11 },
    ]
    assert.deepEqual(runOnDriver(false, inputs), ['A:s2+t1@0'])
    assert.deepEqual(runOnDriver(true, inputs), ['A:s1+null@1', 'A:s2+t1@0', 'A:s3+null@11'])
  })

  it('matches the model of SEMANTICS 8 for random inputs, for a table from a topic and from toTable()', () => {
    fc.assert(
      fc.property(fc.boolean(), fc.boolean(), inputsArb(50), (left, viaToTable, inputs) => {
        assert.deepEqual(runOnDriver(left, inputs, viaToTable), model(left, inputs))
      }),
      { numRuns: 300 },
    )
  })

  it('with a versioned table and a grace period, matches the model of SEMANTICS 8 for random inputs', () => {
    const versioningArb = fc.integer({ min: 0, max: 15 }).chain((history) => fc.record({ history: fc.constant(history), grace: fc.option(fc.integer({ min: 0, max: history }), { nil: undefined }) }))
    fc.assert(
      fc.property(fc.boolean(), versioningArb, inputsArb(50), (left, v, inputs) => {
        const versioning: Versioning = v.grace === undefined ? { history: v.history } : { history: v.history, grace: v.grace }
        assert.deepEqual(runOnDriver(left, inputs, false, versioning), versionedModel(left, versioning, inputs))
      }),
      { numRuns: 400 },
    )
  })

  it('a versioned table answers as of the stream record’s time; with grace, a late table update still counts', () => {
    const inputs: Input[] = [
      { side: 'table', key: 'A', value: 'old', ts: 0 },
      { side: 'table', key: 'A', value: 'new', ts: 10 },
      { side: 'stream', key: 'A', value: 's5', ts: 5 },
      { side: 'stream', key: 'A', value: 's12', ts: 12 },
      // Arrives after s12 but is valid from 11: with grace it changes s12's answer.
      { side: 'table', key: 'A', value: 'fix', ts: 11 },
      { side: 'stream', key: 'A', value: 's20', ts: 20 },
    ]
    assert.deepEqual(runOnDriver(false, inputs, false, { history: 10 }), ['A:s5+old@5', 'A:s12+new@12', 'A:s20+fix@20'])
    assert.deepEqual(runOnDriver(false, inputs, false, { history: 10, grace: 5 }), ['A:s5+old@5', 'A:s12+fix@12'])
  })

  it('refuses a grace period without a versioned table, or longer than its history', () => {
    const b = new StreamsBuilder()
    const s = b.stream<string, string>('stream', str)
    assert.throws(() => s.join(b.table<string, string>('t1', str), joined, { gracePeriodMs: 5 }), /join: a grace period needs a versioned table/)
    assert.throws(() => s.leftJoin(b.table<string, string>('t2', str, { historyRetentionMs: 4 }), joined, { gracePeriodMs: 5 }), /leftJoin: the grace period \(5 ms\) must not exceed the table's history retention \(4 ms\)/)
  })

  it('joins a table derived by filter: a record whose key the filter dropped finds nothing', () => {
    const b = new StreamsBuilder()
    const out: string[] = []
    const derived = b.table<string, string>('table', str).filter((_k, v) => !v.startsWith('z'), Named.as('only-some'))
    b.stream<string, string>('stream', str)
      .leftJoin(derived, joined)
      .process(() => ({ process: (r) => void out.push(`${r.key}:${r.value}`) }))
    const driver = new TopologyTestDriver(b.build())
    const t = driver.createInputTopic('table', Serdes.String(), Serdes.String())
    const s = driver.createInputTopic('stream', Serdes.String(), Serdes.String())
    t.pipeInput('A', 'a', 1)
    t.pipeInput('B', 'zb', 1)
    s.pipeInput('A', 's1', 2)
    s.pipeInput('B', 's2', 2)
    t.pipeInput('A', 'za', 3)
    s.pipeInput('A', 's3', 4)
    driver.close()
    assert.deepEqual(out, ['A:s1+a', 'B:s2+null', 'A:s3+null'])
  })

  it('a re-keyed stream meets a table of more partitions: the repartition topic takes the table’s count', async () => {
    const b = new StreamsBuilder()
    const table = b.table<string, string>('airports', str)
    b.stream<string, string>('flights', str)
      .selectKey((_flight, origin) => origin)
      .join(table, (origin, city) => `${origin} ${city}`, { name: 'city' })
      .to('out', str)
    const rt = new EmbeddedRuntime(b.build(), { applicationId: 'rekeyed', topics: { flights: { partitions: 2 }, airports: { partitions: 3 } }, logger: silentLogger })
    const out: string[] = []
    rt.subscribe<string, string>('out', (r) => out.push(`${r.key}=${r.value}`), str)
    await rt.start()
    const airports = { SEA: 'Seattle', SFO: 'San Francisco', BOS: 'Boston', JFK: 'New York' }
    for (const [code, city] of Object.entries(airports)) rt.producer<string, string>('airports').send(code, city, 1)
    await rt.idle()
    Object.keys(airports).forEach((code, i) => rt.producer<string, string>('flights').send(`flight-${i}`, code, 10))
    await rt.idle()
    await rt.stop()
    assert.equal(rt.committedEndOffsets('city-repartition').length, 3)
    assert.deepEqual(out.sort(), ['BOS=BOS Boston', 'JFK=JFK New York', 'SEA=SEA Seattle', 'SFO=SFO San Francisco'])
  })

  it('restarts exactly: the table’s store (plain or versioned) and the grace buffer are committed and restored with the rest', async () => {
    await fc.assert(
      fc.asyncProperty(fc.boolean(), fc.constantFrom<Versioning | undefined>(undefined, { history: 8 }, { history: 8, grace: 4 }), inputsArb(45), async (left, versioning, inputs) => {
        // Each record is processed before the next is sent, so both runs see the arrival order.
        const feed = async (rt: EmbeddedRuntime, part: readonly Input[]): Promise<void> => {
          for (const r of part) {
            rt.producer<string, string | null>(r.side).send(r.key, r.value, r.ts)
            await rt.idle()
          }
        }
        const thirds = [inputs.slice(0, 15), inputs.slice(15, 30), inputs.slice(30)]
        const once: string[] = []
        const whole = new EmbeddedRuntime(topology(left, (l) => once.push(l), false, versioning), { applicationId: 'st-once', logger: silentLogger })
        await whole.start()
        for (const part of thirds) await feed(whole, part)
        await whole.stop()
        const dir = freshStateDir()
        const resumed: string[] = []
        for (const part of thirds) {
          const rt = new EmbeddedRuntime(topology(left, (l) => resumed.push(l), false, versioning), { applicationId: 'st-resumed', stateDir: dir, commitMaxRecords: 7, logger: silentLogger })
          await rt.start()
          await feed(rt, part)
          await rt.stop()
        }
        assert.deepEqual(resumed, once)
        assert.deepEqual(once, versioning === undefined ? model(left, inputs) : versionedModel(left, versioning, inputs))
      }),
      { numRuns: 15 },
    )
  })
})
