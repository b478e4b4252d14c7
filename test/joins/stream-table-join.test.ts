import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { freshStateDir } from '../helpers/durable.js'
import { EmbeddedRuntime, Serdes, silentLogger, StreamsBuilder } from '../../src/index.js'
import type { Processor, StreamRecord, Topology } from '../../src/index.js'
import { TopologyTestDriver } from '../../src/testing/index.js'

interface Input {
  readonly side: 'stream' | 'table'
  readonly key: string
  readonly value: string | null
  readonly ts: number
}

const str = { keySerde: Serdes.String(), valueSerde: Serdes.String() }
const joined = (s: string, t: string | null): string => `${s}+${t}`

function topology(left: boolean, out: (line: string) => void, viaToTable = false): Topology {
  const b = new StreamsBuilder()
  const stream = b.stream<string, string>('stream', str)
  const table = viaToTable ? b.stream<string, string>('table', str).toTable() : b.table<string, string>('table', str)
  const result = left ? stream.leftJoin(table, joined) : stream.join(table, joined)
  result.process((): Processor<string, string> => ({ process: (r: StreamRecord<string, string>) => out(`${r.key}:${r.value}@${r.timestamp}`) }))
  return b.build()
}

function runOnDriver(left: boolean, inputs: readonly Input[], viaToTable = false): string[] {
  const out: string[] = []
  const driver = new TopologyTestDriver(topology(left, (l) => out.push(l), viaToTable))
  const topics = { stream: driver.createInputTopic('stream', Serdes.String(), Serdes.String()), table: driver.createInputTopic('table', Serdes.String(), Serdes.String()) }
  for (const r of inputs) topics[r.side].pipeInput(r.key, r.value, r.ts)
  driver.close()
  return out
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

  it('refuses a table it cannot read by key yet, naming the operation and the table', () => {
    const b = new StreamsBuilder()
    const derived = b.table<string, string>('table', str).filter(() => true, 'only-some')
    assert.throws(() => b.stream<string, string>('stream', str).join(derived, joined), /join: table "only-some" cannot be read by key yet/)
  })

  it('restarts exactly: the table’s store is committed and restored with the rest', async () => {
    await fc.assert(
      fc.asyncProperty(fc.boolean(), inputsArb(45), async (left, inputs) => {
        // Each record is processed before the next is sent, so both runs see the arrival order.
        const feed = async (rt: EmbeddedRuntime, part: readonly Input[]): Promise<void> => {
          for (const r of part) {
            rt.producer<string, string | null>(r.side).send(r.key, r.value, r.ts)
            await rt.idle()
          }
        }
        const thirds = [inputs.slice(0, 15), inputs.slice(15, 30), inputs.slice(30)]
        const once: string[] = []
        const whole = new EmbeddedRuntime(topology(left, (l) => once.push(l)), { applicationId: 'st-once', logger: silentLogger })
        whole.start()
        for (const part of thirds) await feed(whole, part)
        await whole.stop()
        const dir = freshStateDir()
        const resumed: string[] = []
        for (const part of thirds) {
          const rt = new EmbeddedRuntime(topology(left, (l) => resumed.push(l)), { applicationId: 'st-resumed', stateDir: dir, commitMaxRecords: 7, logger: silentLogger })
          rt.start()
          await feed(rt, part)
          await rt.stop()
        }
        assert.deepEqual(resumed, once)
        assert.deepEqual(once, model(left, inputs))
      }),
      { numRuns: 15 },
    )
  })
})
