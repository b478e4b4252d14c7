import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { freshStateDir } from '../helpers/durable.js'
import { EmbeddedRuntime, JoinWindows, Serdes, silentLogger, StreamsBuilder } from '../../src/index.js'
import type { Processor, StreamRecord, Topology } from '../../src/index.js'
import { TopologyTestDriver } from '../../src/testing/index.js'
import { runJoin } from '../helpers/join-driver.js'

type JoinType = 'inner' | 'left' | 'outer'
interface Input {
  readonly side: 'left' | 'right'
  readonly key: string
  readonly value: string | null
  readonly ts: number
}
interface Spec {
  readonly type: JoinType
  readonly diff: number
  readonly grace: number
  readonly before?: number
  readonly after?: number
}

const str = { keySerde: Serdes.String(), valueSerde: Serdes.String() }
const joined = (l: string | null, r: string | null): string => `${l}+${r}`

function windowsOf(spec: Spec): JoinWindows {
  let w = JoinWindows.ofTimeDifferenceAndGrace(spec.diff, spec.grace)
  if (spec.before !== undefined) w = w.before(spec.before)
  if (spec.after !== undefined) w = w.after(spec.after)
  return w
}

/** The join of topics left and right, each result passed to `out` as key:value@ts. */
function topology(spec: Spec, out: (line: string) => void): Topology {
  const b = new StreamsBuilder()
  const left = b.stream<string, string>('left', str)
  const right = b.stream<string, string>('right', str)
  const w = windowsOf(spec)
  const result = spec.type === 'inner' ? left.join(right, joined, w) : spec.type === 'left' ? left.leftJoin(right, joined, w) : left.outerJoin(right, joined, w)
  result.process(
    (): Processor<string, string> => ({
      process: (r: StreamRecord<string, string>) => out(`${r.key}:${r.value}@${r.timestamp}`),
    }),
  )
  return b.build()
}

function runOnDriver(spec: Spec, inputs: readonly Input[]): string[] {
  return runJoin((out) => topology(spec, out), inputs)
}

/**
 * An independent model of SEMANTICS 8 (Kafka Streams' stream-stream join), by brute force: every record
 * kept in a plain array and filtered at each lookup, the waiting records sorted at each emission pass.
 */
function model(spec: Spec, inputs: readonly Input[]): string[] {
  const before = spec.before ?? spec.diff
  const after = spec.after ?? spec.diff
  const { grace } = spec
  const retention = before + after + grace
  const leftOuter = spec.type !== 'inner'
  const rightOuter = spec.type === 'outer'
  const stored: Record<'left' | 'right', Array<{ key: string; value: string; ts: number }>> = { left: [], right: [] }
  const sideMax = { left: -1, right: -1 }
  let streamTime = -1
  let minTime = Infinity
  let waiting: Array<{ ts: number; left: boolean; key: string; value: string }> = []
  const out: string[] = []
  const emit = (key: string, l: string | null, r: string | null, ts: number): void => void out.push(`${key}:${joined(l, r)}@${ts}`)
  for (const r of inputs) {
    const isLeft = r.side === 'left'
    const other = isLeft ? 'right' : 'left'
    streamTime = Math.max(streamTime, r.ts)
    if (r.value !== null) {
      const reachAfter = isLeft ? after : before
      if (leftOuter && r.ts === streamTime && minTime + reachAfter + grace < streamTime) {
        // An emission pass over the waiting records in (timestamp, right before left, key) order.
        minTime = Infinity
        const sorted = [...waiting].sort((a, b) => a.ts - b.ts || Number(a.left) - Number(b.left) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
        const emitted = new Set<object>()
        let leftOpen = false
        let rightOpen = false
        for (const w of sorted) {
          minTime = w.ts
          if (leftOpen && rightOpen) break
          if (w.ts + (w.left ? after : before) + grace >= streamTime) {
            if (w.left) leftOpen = true
            else rightOpen = true
            continue
          }
          emitted.add(w)
          if (w.left) emit(w.key, w.value, null, w.ts)
          else emit(w.key, null, w.value, w.ts)
        }
        waiting = waiting.filter((w) => !emitted.has(w))
      }
      const from = Math.max(0, r.ts - (isLeft ? before : after))
      const to = Math.max(0, r.ts + (isLeft ? after : before))
      const visible = sideMax[other] - retention + 1
      const partners = stored[other].filter((s) => s.key === r.key && s.ts >= Math.max(from, visible) && s.ts <= to).sort((a, b) => a.ts - b.ts)
      for (const p of partners) {
        waiting = waiting.filter((w) => !(w.key === r.key && w.ts === p.ts && w.left === !isLeft))
        if (isLeft) emit(r.key, r.value, p.value, Math.max(r.ts, p.ts))
        else emit(r.key, p.value, r.value, Math.max(r.ts, p.ts))
      }
      if (partners.length === 0 && (isLeft ? leftOuter : rightOuter)) {
        if (to < streamTime) {
          if (isLeft) emit(r.key, r.value, null, r.ts)
          else emit(r.key, null, r.value, r.ts)
        } else {
          minTime = Math.min(minTime, r.ts)
          waiting.push({ ts: r.ts, left: isLeft, key: r.key, value: r.value })
        }
      }
      // The record is stored after its join (Kafka Streams' windowed node forwards first).
      sideMax[r.side] = Math.max(sideMax[r.side], r.ts)
      stored[r.side].push({ key: r.key, value: r.value, ts: r.ts })
    }
  }
  return out
}

const specArb: fc.Arbitrary<Spec> = fc
  .record({
    type: fc.constantFrom<JoinType>('inner', 'left', 'outer'),
    diff: fc.integer({ min: 0, max: 8 }),
    grace: fc.integer({ min: 0, max: 8 }),
    before: fc.option(fc.integer({ min: -4, max: 10 }), { nil: undefined }),
    after: fc.option(fc.integer({ min: -4, max: 10 }), { nil: undefined }),
  })
  .filter((s) => (s.before ?? s.diff) + (s.after ?? s.diff) >= 0 && (s.before === undefined || s.before + s.diff >= 0))
  .map((s) => {
    const { before, after, ...rest } = s
    return { ...rest, ...(before === undefined ? {} : { before }), ...(after === undefined ? {} : { after }) }
  })

const inputsArb = (maxLength: number): fc.Arbitrary<Input[]> =>
  fc.array(
    fc.record({
      side: fc.constantFrom<'left' | 'right'>('left', 'right'),
      key: fc.constantFrom('A', 'B', 'C'),
      value: fc.option(fc.constantFrom('v', 'w', 'x'), { nil: null, freq: 10 }),
      ts: fc.integer({ min: 0, max: 60 }),
    }),
    { maxLength },
  )

describe('stream-stream joins', () => {
  it('an inner join: each pair within the window, at the later timestamp, oldest partner first', () => {
    const inputs: Input[] = [
      { side: 'left', key: 'A', value: 'a1', ts: 10 },
      { side: 'right', key: 'A', value: 'b1', ts: 12 },
      { side: 'right', key: 'A', value: 'b2', ts: 6 },
      { side: 'left', key: 'A', value: 'a2', ts: 8 },
      { side: 'right', key: 'A', value: 'b3', ts: 20 },
    ]
    assert.deepEqual(runOnDriver({ type: 'inner', diff: 5, grace: 0 }, inputs), ['A:a1+b1@12', 'A:a1+b2@10', 'A:a2+b2@8', 'A:a2+b1@12'])
  })

  it('a left join emits an unmatched record with null once stream time passes it by after + grace, and a late partner still joins', () => {
    const inputs: Input[] = [
      { side: 'left', key: 'A', value: 'a1', ts: 0 },
      { side: 'left', key: 'B', value: 'b1', ts: 4 },
      // Stream time 8 = 0 + after 5 + grace 3: not yet.
      { side: 'left', key: 'C', value: 'c1', ts: 8 },
      // 9 > 8: A is emitted alone, before the record at 9 is joined.
      { side: 'left', key: 'D', value: 'd1', ts: 9 },
      // A partner for A arrives late: it still joins what the left store holds.
      { side: 'right', key: 'A', value: 'r', ts: 2 },
    ]
    assert.deepEqual(runOnDriver({ type: 'left', diff: 5, grace: 3 }, inputs), ['A:a1+null@0', 'A:a1+r@2'])
  })

  it('an outer join emits waiting records in (timestamp, right before left, key) order', () => {
    const inputs: Input[] = [
      { side: 'left', key: 'A', value: 'l', ts: 1 },
      { side: 'right', key: 'B', value: 'r', ts: 1 },
      { side: 'left', key: 'C', value: 'c', ts: 0 },
      { side: 'right', key: 'Z', value: 'z', ts: 10 },
    ]
    // C at 0 arrives behind stream time (1), past its window (0 + 1 < 1 is false: it waits too) and is
    // emitted with the others, first by timestamp.
    assert.deepEqual(runOnDriver({ type: 'outer', diff: 1, grace: 0 }, inputs), ['C:c+null@0', 'B:null+r@1', 'A:l+null@1'])
  })

  it('matches an independent model of SEMANTICS 8 for random inputs, windows and join types', () => {
    fc.assert(
      fc.property(specArb, inputsArb(60), (spec, inputs) => {
        assert.deepEqual(runOnDriver(spec, inputs), model(spec, inputs))
      }),
      { numRuns: 400 },
    )
  })

  it('refuses bad windows, naming the value', () => {
    assert.throws(() => JoinWindows.ofTimeDifferenceAndGrace(-1, 0), /JoinWindows.ofTimeDifferenceAndGrace timeDifference.*-1/)
    assert.throws(() => JoinWindows.ofTimeDifferenceWithNoGrace(5).before(-6), /before -6 \+ after 5 must not be negative/)
    assert.throws(() => JoinWindows.ofTimeDifferenceAndGrace(5, 1.5), /grace.*1\.5/)
  })

  it('refuses a bad store type or cache size, naming the join and the value', () => {
    const join = (streamJoined: object): unknown => {
      const b = new StreamsBuilder()
      const windows = JoinWindows.ofTimeDifferenceWithNoGrace(10)
      return b.stream<string, string>('a').leftJoin(b.stream<string, string>('b'), (x, y) => `${x}${y}`, windows, streamJoined)
    }
    assert.throws(() => join({ name: 'attribution', cacheEntries: -1 }), /leftJoin "attribution": cacheEntries must be an integer >= 0, got -1/)
    assert.throws(() => join({ storeName: 'clicks', storeType: 'disk' }), /leftJoin "clicks": storeType must be 'persistent' or 'inMemory', got "disk"/)
    assert.throws(() => join({ cacheEntries: 1.5 }), /leftJoin: cacheEntries must be an integer >= 0, got 1\.5/)
  })

  it('names its nodes and stores as Kafka Streams does', () => {
    const b = new StreamsBuilder()
    b.stream('l').outerJoin(b.stream('r'), joined, JoinWindows.ofTimeDifferenceWithNoGrace(1)).to('out')
    const d = b.build().describe()
    for (const name of ['KSTREAM-WINDOWED-0000000002', 'KSTREAM-OUTERTHIS-0000000004', 'KSTREAM-OUTEROTHER-0000000005', 'KSTREAM-MERGE-0000000006', 'KSTREAM-OUTERSHARED-0000000004-store', 'KSTREAM-OUTERTHIS-0000000004-store']) {
      assert.ok(d.includes(name), `${name} in\n${d}`)
    }
    const named = new StreamsBuilder()
    named.stream('l').join(named.stream('r'), joined, JoinWindows.ofTimeDifferenceWithNoGrace(1), { name: 'j', storeName: 's' }).to('out')
    const dn = named.build().describe()
    for (const name of ['j-this-windowed', 'j-this-join', 'j-other-join', 'j-merge', 's-this-join-store', 's-other-join-store']) assert.ok(dn.includes(name), `${name} in\n${dn}`)
  })

  it('repartitions a stream whose key changed before joining it', () => {
    const b = new StreamsBuilder()
    const left = b.stream<string, string>('left', str).selectKey((_k, v) => v.slice(0, 1))
    left.join(b.stream<string, string>('right', str), joined, JoinWindows.ofTimeDifferenceWithNoGrace(5)).to('out', str)
    const t = b.build()
    assert.match(t.describe(), /KSTREAM-KEY-SELECT-0000000001-repartition/)
    const driver = new TopologyTestDriver(t)
    driver.createInputTopic('left', Serdes.String(), Serdes.String()).pipeInput('x', 'Abc', 1)
    driver.createInputTopic('right', Serdes.String(), Serdes.String()).pipeInput('A', 'r', 2)
    assert.deepEqual(driver.createOutputTopic('out', Serdes.String(), Serdes.String()).readKeyValuesToList(), [{ key: 'A', value: 'Abc+r' }])
  })

  it('restarts exactly: three durable runs with commits every 7 records give the output of one run fed the same thirds', async () => {
    await fc.assert(
      fc.asyncProperty(specArb, inputsArb(45), async (spec, inputs) => {
        const thirds = [inputs.slice(0, 15), inputs.slice(15, 30), inputs.slice(30)]
        const send = (rt: EmbeddedRuntime, part: readonly Input[]): void => {
          for (const r of part) rt.producer<string, string | null>(r.side).send(r.key, r.value, r.ts)
        }
        const once: string[] = []
        const whole = new EmbeddedRuntime(topology(spec, (l) => once.push(l)), { applicationId: 'join-once', logger: silentLogger })
        await whole.start()
        for (const part of thirds) {
          send(whole, part)
          await whole.idle()
        }
        await whole.stop()
        const dir = freshStateDir()
        const resumed: string[] = []
        for (const part of thirds) {
          const rt = new EmbeddedRuntime(topology(spec, (l) => resumed.push(l)), { applicationId: 'join-resumed', stateDir: dir, commitMaxRecords: 7, logger: silentLogger })
          await rt.start()
          send(rt, part)
          await rt.stop()
        }
        assert.deepEqual(resumed, once)
      }),
      { numRuns: 25 },
    )
  })
})
