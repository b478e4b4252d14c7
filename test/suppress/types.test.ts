import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { BufferConfig, StreamsBuilder, Suppressed, TimeWindows } from '../../src/index.js'
import type { Windowed } from '../../src/index.js'

// These lines are checked by `tsc --noEmit` (npm run typecheck): each @ts-expect-error must be an error.
export function typeChecks(): void {
  // @ts-expect-error untilWindowCloses takes only strict buffer configs: maxRecords() is eager.
  Suppressed.untilWindowCloses(BufferConfig.maxRecords(5))
  // @ts-expect-error emitEarlyWhenFull() makes a config eager, so not for final results either.
  Suppressed.untilWindowCloses(BufferConfig.maxBytes(100).emitEarlyWhenFull())
  Suppressed.untilWindowCloses(BufferConfig.maxRecords(5).shutDownWhenFull())
  Suppressed.untilWindowCloses(BufferConfig.unbounded())
  Suppressed.untilTimeLimit(10, BufferConfig.maxRecords(5))
  Suppressed.untilTimeLimit(10, BufferConfig.unbounded())

  const builder = new StreamsBuilder()
  const counts = builder.stream('in').groupByKey().count()
  // @ts-expect-error a table that is not windowed cannot be suppressed until its windows close.
  counts.suppress(Suppressed.untilWindowCloses<string, number>(BufferConfig.unbounded()))
  counts.suppress(Suppressed.untilTimeLimit<string, number>(5, BufferConfig.unbounded()))
  const windowed = builder.stream('in2').groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(10)).count()
  windowed.suppress(Suppressed.untilWindowCloses<Windowed<string>, number>(BufferConfig.unbounded()))
}

describe('Suppressed and BufferConfig types', () => {
  it('strict and eager configs are different types at run time too', () => {
    assert.equal(BufferConfig.maxRecords(5).strict, false)
    assert.equal(BufferConfig.maxRecords(5).shutDownWhenFull().strict, true)
    assert.equal(BufferConfig.unbounded().withMaxBytes(10).whenFull, 'shutDown')
    assert.throws(() => Suppressed.untilWindowCloses(BufferConfig.maxRecords(5) as never), /untilWindowCloses: needs a strict buffer config/)
  })

  it('rejects bad bounds and waits naming the value', () => {
    assert.throws(() => BufferConfig.maxRecords(0), /BufferConfig.maxRecords: must be an integer >= 1, got 0/)
    assert.throws(() => BufferConfig.unbounded().withMaxBytes(-5), /withMaxBytes: must be an integer >= 1, got -5/)
    assert.throws(() => Suppressed.untilTimeLimit(-1, BufferConfig.unbounded()), /waitMs must be an integer >= 0, got -1/)
  })

  it('shows a value that is not a number as JavaScript writes it, not as JSON (NaN, not null; issue 39)', () => {
    assert.throws(() => BufferConfig.maxRecords(NaN), /BufferConfig.maxRecords: must be an integer >= 1, got NaN$/)
    assert.throws(() => BufferConfig.unbounded().withMaxBytes(Infinity), /withMaxBytes: must be an integer >= 1, got Infinity$/)
    assert.throws(() => Suppressed.untilTimeLimit(NaN, BufferConfig.unbounded()), /waitMs must be an integer >= 0, got NaN$/)
    assert.throws(() => Suppressed.untilWindowCloses(BufferConfig.unbounded()).withWallClockLimit(-Infinity), /withWallClockLimit: must be an integer >= 0, got -Infinity$/)
    assert.throws(() => Suppressed.untilWindowCloses(BufferConfig.unbounded()).withName(NaN as unknown as string), /withName: must be a non-empty string, got NaN$/)
  })

  it('untilWindowCloses on a table that is not windowed is refused when built (if the types are bypassed)', () => {
    const builder = new StreamsBuilder()
    const counts = builder.stream('in').groupByKey().count()
    assert.throws(() => counts.suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()) as never), /untilWindowCloses needs a windowed table/)
  })
})
