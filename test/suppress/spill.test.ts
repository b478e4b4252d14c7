import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { BufferConfig, Serdes, StreamsBuilder, Suppressed, TimeWindows } from '../../src/index.js'
import type { Windowed } from '../../src/index.js'
import { TimeOrderedBuffer } from '../../src/suppress/buffer.js'
import { SpillingBuffer } from '../../src/suppress/spilling-buffer.js'
import { TopologyTestDriver } from '../../src/testing/index.js'

type Rec = { key: string; value: string | null; ts: number }

function runTimeLimit(records: Rec[], waitMs: number, waitFrom: 'latest' | 'first', spillAt: number | undefined, stateDir: string): string[] {
  const out: string[] = []
  const config = spillAt === undefined ? BufferConfig.unbounded() : BufferConfig.maxRecords(spillAt).spillToDiskWhenFull()
  const b = new StreamsBuilder()
  b.table<string, string>('in')
    .suppress(Suppressed.untilTimeLimit<string, string>(waitMs, config).withWaitFrom(waitFrom).withName('s'))
    .toStream()
    .addStatelessNode(undefined, 'OUT', (r) => out.push(`${r.key}=${r.value}@${r.timestamp}`))
  const d = new TopologyTestDriver(b.build(), { errorHandler: () => 'fail', stateDir })
  const input = d.createInputTopic('in', Serdes.String(), Serdes.String())
  for (const r of records) input.pipeInput(r.key, r.value, r.ts)
  d.close()
  return out
}

/** Like runTimeLimit, but the driver restarts from its checkpoint after `split` records. */
function runTimeLimitRestarted(records: Rec[], waitMs: number, spillAt: number, split: number, stateDir: string): string[] {
  const out: string[] = []
  const topology = () => {
    const b = new StreamsBuilder()
    b.table<string, string>('in')
      .suppress(Suppressed.untilTimeLimit<string, string>(waitMs, BufferConfig.maxRecords(spillAt).spillToDiskWhenFull()).withName('s'))
      .toStream()
      .addStatelessNode(undefined, 'OUT', (r) => out.push(`${r.key}=${r.value}@${r.timestamp}`))
    return b.build()
  }
  const first = new TopologyTestDriver(topology(), { errorHandler: () => 'fail', stateDir })
  const in1 = first.createInputTopic('in', Serdes.String(), Serdes.String())
  for (const r of records.slice(0, split)) in1.pipeInput(r.key, r.value, r.ts)
  const checkpoint = first.checkpoint()
  first.close()
  const second = new TopologyTestDriver(topology(), { errorHandler: () => 'fail', stateDir, checkpoint })
  const in2 = second.createInputTopic('in', Serdes.String(), Serdes.String())
  for (const r of records.slice(split)) in2.pipeInput(r.key, r.value, r.ts)
  second.close()
  return out
}

const recs = fc.array(
  fc.record({ key: fc.constantFrom(...'ABCDEFGHIJKLMNOP'.split('')), value: fc.option(fc.stringMatching(/^[a-z]{1,3}$/), { nil: null, freq: 10 }), ts: fc.nat(60) }),
  { minLength: 1, maxLength: 60 },
)

describe('spillToDiskWhenFull (beyond Kafka)', () => {
  it('emits exactly what an unbounded buffer emits, with most entries spilled (property)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'punctual-spill-'))
    fc.assert(
      fc.property(recs, fc.nat(12), fc.constantFrom<'latest' | 'first'>('latest', 'first'), fc.integer({ min: 1, max: 2 }), (records, wait, waitFrom, bound) => {
        assert.deepEqual(runTimeLimit(records, wait, waitFrom, bound, dir), runTimeLimit(records, wait, waitFrom, undefined, dir))
      }),
      { numRuns: 300 },
    )
    assert.deepEqual(readdirSync(dir).flatMap((t) => readdirSync(join(dir, t))), [], 'spill files are removed on close')
  })

  it('a restart from a checkpoint restores the spilled entries too: output as if uninterrupted (property)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'punctual-spill-'))
    fc.assert(
      fc.property(recs, fc.nat(12), fc.integer({ min: 1, max: 2 }), fc.nat(60), (records, wait, bound, at) => {
        const split = at % (records.length + 1)
        assert.deepEqual(runTimeLimitRestarted(records, wait, bound, split, dir), runTimeLimit(records, wait, 'latest', undefined, dir))
      }),
      { numRuns: 200 },
    )
  })

  it('final results of windowed counts are identical to unbounded, with a bound of one window in memory', () => {
    const run = (spill: boolean): string[] => {
      const out: string[] = []
      const config = spill ? BufferConfig.unbounded().withMaxRecords(1).spillToDiskWhenFull() : BufferConfig.unbounded()
      const b = new StreamsBuilder()
      b.stream('in')
        .groupByKey()
        .windowedBy(TimeWindows.ofSizeAndGrace(10, 5))
        .count()
        .suppress(Suppressed.untilWindowCloses<Windowed<string>, number>(config))
        .toStream()
        .addStatelessNode(undefined, 'OUT', (r) => out.push(`${r.key.key}@${r.key.window.start}=${r.value}`))
      const d = new TopologyTestDriver(b.build())
      const input = d.createInputTopic('in', Serdes.String(), Serdes.String())
      for (let i = 0; i < 500; i++) input.pipeInput(`k${(i * 7) % 13}`, 'v', i + ((i * 31) % 9))
      d.close()
      return out
    }
    const spilled = run(true)
    assert.ok(spilled.length > 100)
    assert.deepEqual(spilled, run(false))
  })

  it('keeps its memory part within the bound and the rest on disk', () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'punctual-spill-')), 'buffer')
    const buf = new SpillingBuffer<string, string>(dir, 3, Infinity)
    for (let i = 0; i < 20; i++) buf.put(`k${String(i).padStart(2, '0')}`, `k${i}`, 'v', i, i, 10)
    assert.equal(buf.numRecords, 20)
    assert.equal(buf.memoryRecords, 3)
    assert.equal(buf.spilledRecords, 17)
    assert.equal(buf.bufferSize, 200)
    // An update that makes a spilled key the oldest brings it into memory.
    buf.put('k15', 'k15', 'w', 0, -1, 10)
    const emitted: string[] = []
    buf.evictWhile((e) => e.orderTime <= 4, (e) => emitted.push(`${e.key}=${e.value}`))
    assert.deepEqual(emitted, ['k15=w', 'k0=v', 'k1=v', 'k2=v', 'k3=v', 'k4=v'])
    assert.ok(buf.memoryRecords <= 3)
    buf.close()
    assert.equal(existsSync(dir), false)
  })
})

describe('SpillingBuffer with colliding key hashes', () => {
  it('finds spilled keys by checking every candidate: same results as an unbounded buffer (property)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'punctual-spill-'))
    // put(key, order time) or evict up to a time; keys collide in the index under both hashes.
    const op = fc.oneof(
      fc.record({ key: fc.constantFrom(...'ABCDEFGHIJ'.split('')), time: fc.integer({ min: 0, max: 30 }) }),
      fc.record({ evictTo: fc.integer({ min: 0, max: 30 }) }),
    )
    let run = 0
    fc.assert(
      fc.property(fc.array(op, { maxLength: 80 }), fc.integer({ min: 1, max: 3 }), fc.constantFrom<(k: string) => number>(() => 7, (k) => k.charCodeAt(0) & 1), (ops, bound, hash) => {
        const spill = new SpillingBuffer<string, number>(join(dir, `b${run++}`), bound, Infinity, hash)
        const plain = new TimeOrderedBuffer<string, number>()
        const out = { spill: [] as string[], plain: [] as string[] }
        ops.forEach((o, i) => {
          if ('key' in o) {
            spill.put(o.key, o.key, i, i, o.time, 10)
            plain.put(o.key, o.key, i, i, o.time, 10)
          } else {
            spill.evictWhile((e) => e.orderTime <= o.evictTo, (e) => out.spill.push(`${e.key}=${e.value}@${e.orderTime}`))
            plain.evictWhile((e) => e.orderTime <= o.evictTo, (e) => out.plain.push(`${e.key}=${e.value}@${e.orderTime}`))
          }
          assert.equal(spill.numRecords, plain.numRecords)
          for (const k of 'ABCDEFGHIJ') assert.equal(spill.orderTimeOf(k), plain.orderTimeOf(k))
        })
        spill.evictWhile(() => true, (e) => out.spill.push(`${e.key}=${e.value}@${e.orderTime}`))
        plain.evictWhile(() => true, (e) => out.plain.push(`${e.key}=${e.value}@${e.orderTime}`))
        spill.close()
        assert.deepEqual(out.spill, out.plain)
      }),
      { numRuns: 300 },
    )
  })
})
