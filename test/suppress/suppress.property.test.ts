import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { BufferConfig, PunctualError, Serdes, StreamsBuilder, Suppressed } from '../../src/index.js'
import type { BufferConfig as BufferConfigType } from '../../src/index.js'
import { TopologyTestDriver } from '../../src/testing/index.js'

interface Case {
  records: Array<{ key: string; value: string | null; ts: number }>
  waitMs: number
  waitFrom: 'latest' | 'first'
  maxRecords: number | undefined
  maxBytes: number | undefined
  shutDown: boolean
}

const caseArb: fc.Arbitrary<Case> = fc.record({
  records: fc.array(
    fc.record({ key: fc.constantFrom('A', 'B', 'C', 'D', 'E'), value: fc.option(fc.stringMatching(/^[a-z]{0,4}$/), { nil: null, freq: 8 }), ts: fc.nat(30) }),
    { minLength: 1, maxLength: 40 },
  ),
  waitMs: fc.nat(10),
  waitFrom: fc.constantFrom<'latest' | 'first'>('latest', 'first'),
  maxRecords: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
  maxBytes: fc.option(fc.integer({ min: 1, max: 8 }), { nil: undefined }),
  shutDown: fc.boolean(),
})

const size = (v: string | null): number => (v === null ? 0 : Buffer.byteLength(v))

/** The reference: SEMANTICS 6 and the KIP-328 tables, with a plain array sorted on every step. */
function reference(c: Case): string[] {
  const out: string[] = []
  let buffer: Array<{ key: string; value: string | null; t: number; f: number }> = []
  let streamTime = -1
  const order = (e: { t: number; f: number }): number => (c.waitFrom === 'latest' ? e.t : e.f)
  const sorted = (): typeof buffer => [...buffer].sort((a, b) => order(a) - order(b) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
  const over = (): boolean => (c.maxRecords !== undefined && buffer.length > c.maxRecords) || (c.maxBytes !== undefined && buffer.reduce((n, e) => n + size(e.value), 0) > c.maxBytes)
  const emit = (e: (typeof buffer)[number]): void => {
    buffer = buffer.filter((x) => x !== e)
    out.push(`${e.key}=${e.value}@${e.t}`)
  }
  for (const r of c.records) {
    streamTime = Math.max(streamTime, r.ts)
    const existing = buffer.find((e) => e.key === r.key)
    if (existing === undefined) buffer.push({ key: r.key, value: r.value, t: r.ts, f: r.ts })
    else {
      existing.value = r.value
      existing.t = r.ts
    }
    for (const e of sorted()) if (order(e) <= streamTime - c.waitMs) emit(e)
    if (over()) {
      if (c.shutDown) {
        out.push('buffer-full')
        return out
      }
      for (const e of sorted()) if (over()) emit(e)
    }
  }
  return out
}

function implementation(c: Case): string[] {
  const out: string[] = []
  let config: BufferConfigType = BufferConfig.unbounded()
  if (c.maxRecords !== undefined || c.maxBytes !== undefined) {
    let eager = c.maxRecords !== undefined ? BufferConfig.maxRecords(c.maxRecords) : BufferConfig.maxBytes(c.maxBytes as number)
    if (c.maxRecords !== undefined && c.maxBytes !== undefined) eager = eager.withMaxBytes(c.maxBytes)
    config = c.shutDown ? eager.shutDownWhenFull() : eager
  }
  const builder = new StreamsBuilder()
  builder
    .table<string, string>('in')
    .suppress(Suppressed.untilTimeLimit<string, string>(c.waitMs, config).withWaitFrom(c.waitFrom).withSizer((_k, v) => size(v)))
    .toStream()
    .addStatelessNode(undefined, 'OUT', (r) => out.push(`${r.key}=${r.value}@${r.timestamp}`))
  const driver = new TopologyTestDriver(builder.build(), { errorHandler: () => 'fail' })
  const input = driver.createInputTopic('in', Serdes.String(), Serdes.String())
  for (const r of c.records) {
    try {
      input.pipeInput(r.key, r.value, r.ts)
    } catch (err) {
      if (err instanceof PunctualError && err.code === 'BUFFER_FULL') {
        out.push('buffer-full')
        return out
      }
      throw err
    }
  }
  return out
}

describe('suppression buffer against a reference model (property)', () => {
  it('emits the same records, in the same order, for random updates, waits and bounds', () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        assert.deepEqual(implementation(c), reference(c))
      }),
      { numRuns: 3000 },
    )
  })
})
