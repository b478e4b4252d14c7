import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { BufferConfig, Serdes, StreamsBuilder, Suppressed, TimeWindows } from '../../src/index.js'
import type { KTable, Windowed } from '../../src/index.js'
import type { SuppressionStore } from '../../src/suppress/buffer.js'
import { TopologyTestDriver } from '../../src/testing/index.js'

// `suppress(untilWindowCloses(unbounded()))` right on a time-windowed aggregation is run by the
// aggregation itself (it forwards each window's final result when the window closes; the suppression
// passes records through). Any bounded strict config still runs the real suppression buffer, and a
// bound that is never reached gives the output of an unbounded one: that is the reference here.

type Op = { key: string; value: string; ts: number }
/** The aggregation: a count, a reduce (a null aggregate is a tombstone), or a count whose aggregator throws on 'boom'. */
type Aggregation = 'count' | 'reduce' | 'throwing'
type Spec = { size: number; advance: number; grace: number; aggregation: Aggregation }

const show = (r: { key: Windowed<string>; value: unknown; timestamp: number; headers: readonly unknown[] }): string =>
  `${JSON.stringify(r.key.key)}[${r.key.window.start},${r.key.window.end})=${String(r.value)}@${r.timestamp} h${r.headers.length}`

/** Runs the ops; `emitted` is how many results were out after each op, so timing is compared too. */
function finalResults(spec: Spec, ops: readonly Op[], bounded: boolean): { out: string[]; emitted: number[]; buffered: number[]; late: number; errors: number } {
  const b = new StreamsBuilder()
  const windows = spec.advance === spec.size ? TimeWindows.ofSizeAndGrace(spec.size, spec.grace) : TimeWindows.ofSizeAndGrace(spec.size, spec.grace).advanceBy(spec.advance)
  const grouped = b.stream('in').groupByKey().windowedBy(windows)
  // reduce: a null aggregate is a tombstone, which a final-results suppression does not emit. throwing:
  // the record is skipped (the error handler continues), though it advanced stream time.
  const table = (
    spec.aggregation === 'reduce'
      ? grouped.reduce((agg, v) => (v === 'x' ? (null as unknown as string) : `${agg ?? ''}${v}`))
      : spec.aggregation === 'throwing'
        ? grouped.aggregate(
            () => 0,
            (_k, v, n) => {
              if (v === 'boom') throw new Error('boom')
              return n + 1
            },
          )
        : grouped.count()
  ) as KTable<Windowed<string>, string | number>
  const config = bounded ? BufferConfig.maxRecords(1_000_000).shutDownWhenFull() : BufferConfig.unbounded()
  const out: string[] = []
  table
    .suppress(Suppressed.untilWindowCloses<Windowed<string>, string | number>(config).withName('final'))
    .toStream()
    .addStatelessNode(undefined, 'OUT', (r) => out.push(show(r)))
  let errors = 0
  const driver = new TopologyTestDriver(b.build(), {
    errorHandler: (c) => {
      if (!(c.error instanceof Error && c.error.message === 'boom')) return 'fail'
      errors++
      return 'continue'
    },
  })
  const input = driver.createInputTopic('in', Serdes.String(), Serdes.String())
  const buffered: number[] = []
  const emitted: number[] = []
  for (const op of ops) {
    input.pipeInput(op.key, op.value, op.ts)
    buffered.push(driver.getStateStore<SuppressionStore<Windowed<string>, unknown>>('final-store')?.buffer.numRecords ?? -1)
    emitted.push(out.length)
  }
  const late = driver.metrics().droppedRecords.late
  driver.close()
  return { out, emitted, buffered, late, errors }
}

/** A test driver on `b`'s topology: pipe (key, timestamp) records, read the 'final' suppression's buffer size. */
function drive(b: StreamsBuilder): { pipe: (key: string, ts: number) => void; buffered: () => number | undefined; close: () => void } {
  const driver = new TopologyTestDriver(b.build(), { errorHandler: () => 'fail' })
  const input = driver.createInputTopic('in', Serdes.String(), Serdes.String())
  return {
    pipe: (key, ts) => input.pipeInput(key, 'v', ts),
    buffered: () => driver.getStateStore<SuppressionStore<Windowed<string>, unknown>>('final-store')?.buffer.numRecords,
    close: () => driver.close(),
  }
}

describe('final results run by the windowed aggregation (untilWindowCloses, unbounded)', () => {
  it('gives the output of the suppression buffer for random records, tumbling and hopping windows (property)', () => {
    const spec = fc
      .record({ size: fc.integer({ min: 1, max: 12 }), steps: fc.integer({ min: 1, max: 4 }), grace: fc.nat(8), aggregation: fc.constantFrom<Aggregation>('count', 'reduce', 'throwing') })
      .map(({ size, steps, grace, aggregation }) => ({ size, advance: Math.max(1, Math.floor(size / steps)), grace, aggregation }))
    // Keys where one is a prefix of another, and one with a NUL, so the order of windowed key ids matters.
    const op = fc.record({ key: fc.constantFrom('a', 'ab', 'b', 'a\u0000', 'zz'), value: fc.constantFrom('p', 'q', 'x', 'boom'), ts: fc.nat(60) })
    fc.assert(
      fc.property(spec, fc.array(op, { maxLength: 60 }), (s, ops) => {
        const fused = finalResults(s, ops, false)
        const buffered = finalResults(s, ops, true)
        assert.deepEqual(fused.out, buffered.out)
        assert.deepEqual(fused.emitted, buffered.emitted, 'each result comes out after the same record')
        assert.equal(fused.late, buffered.late)
        assert.equal(fused.errors, buffered.errors)
        // The fast path really ran: the suppression's buffer stayed empty.
        assert.ok(fused.buffered.every((n) => n === 0))
      }),
      { numRuns: 400 },
    )
  })

  it('emits each closing window in windowed-key-id order, with the largest input timestamp and no headers', () => {
    const spec: Spec = { size: 10, advance: 10, grace: 0, aggregation: 'count' }
    const ops: Op[] = [
      { key: 'b', value: 'p', ts: 3 },
      { key: 'ab', value: 'p', ts: 1 },
      { key: 'a', value: 'p', ts: 7 },
      { key: 'a', value: 'p', ts: 2 },
      { key: 'c', value: 'p', ts: 12 },
    ]
    assert.deepEqual(finalResults(spec, ops, false).out, ['"a"[0,10)=2@7 h0', '"ab"[0,10)=1@1 h0', '"b"[0,10)=1@3 h0'])
  })

  it('is not used when the aggregation has another reader: both readers get what they would alone', () => {
    const b = new StreamsBuilder()
    const table = b.stream('in').groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(10, 0)).count()
    const updates: string[] = []
    const finals: string[] = []
    table.toStream().addStatelessNode(undefined, 'UPDATES', (r) => updates.push(show(r)))
    table
      .suppress(Suppressed.untilWindowCloses<Windowed<string>, number>(BufferConfig.unbounded()).withName('final'))
      .toStream()
      .addStatelessNode(undefined, 'FINALS', (r) => finals.push(show(r)))
    const { pipe, buffered, close } = drive(b)
    pipe('a', 1)
    pipe('a', 4)
    assert.equal(buffered(), 1, 'the buffer holds the open window')
    pipe('b', 10)
    assert.deepEqual(updates, ['"a"[0,10)=1@1 h0', '"a"[0,10)=2@4 h0', '"b"[10,20)=1@10 h0'])
    assert.deepEqual(finals, ['"a"[0,10)=2@4 h0'])
    close()
  })

  it('is not used on a table derived from the aggregation (mapValues in between)', () => {
    const b = new StreamsBuilder()
    const out: string[] = []
    b.stream('in')
      .groupByKey()
      .windowedBy(TimeWindows.ofSizeAndGrace(10, 0))
      .count()
      .mapValues((n) => n * 100)
      .suppress(Suppressed.untilWindowCloses<Windowed<string>, number>(BufferConfig.unbounded()).withName('final'))
      .toStream()
      .addStatelessNode(undefined, 'OUT', (r) => out.push(show(r)))
    const { pipe, buffered, close } = drive(b)
    pipe('a', 1)
    assert.equal(buffered(), 1)
    pipe('a', 12)
    assert.deepEqual(out, ['"a"[0,10)=100@1 h0'])
    close()
  })
})
