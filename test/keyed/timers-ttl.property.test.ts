import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { Serdes, StateDescriptors, Topology } from '../../src/index.js'
import type { KeyedProcessorContext, TimeDomain, ValueState } from '../../src/index.js'
import { TopologyTestDriver } from '../../src/testing/index.js'

interface Ttl {
  ttlMs: number
  update: 'onCreateAndWrite' | 'onReadAndWrite'
  visibility: 'neverReturnExpired' | 'returnExpiredIfNotCleanedUp'
  timeDomain: TimeDomain
}

type Op =
  | { kind: 'record'; key: string; ts: number; cmd: string }
  | { kind: 'wall'; ms: number }

const key = fc.constantFrom('a', 'b', 'c')
const domain = fc.constantFrom<TimeDomain>('event', 'processing')
const cmd = fc.oneof(
  fc.constantFrom('get', 'clear'),
  fc.nat(9).map((v) => `set:${v}`),
  fc.tuple(fc.constantFrom('reg', 'del'), domain, fc.nat(80)).map(([op, d, t]) => `${op}:${d}:${t}`),
)
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant<'record'>('record'), key, ts: fc.nat(60), cmd }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant<'wall'>('wall'), ms: fc.nat(12) }) },
)
const ttlArb: fc.Arbitrary<Ttl> = fc.record({
  ttlMs: fc.integer({ min: 1, max: 15 }),
  update: fc.constantFrom('onCreateAndWrite', 'onReadAndWrite'),
  visibility: fc.constantFrom('neverReturnExpired', 'returnExpiredIfNotCleanedUp'),
  timeDomain: domain,
})

/** Expiry events of one advance may come in any order at equal times; compare them sorted. */
function canonical(step: string[]): string[] {
  const firstExpiry = step.findIndex((e) => e.startsWith('expired'))
  if (firstExpiry < 0) return step
  return [...step.slice(0, firstExpiry), ...step.slice(firstExpiry).sort()]
}

/** The reference: SEMANTICS 3 and 4 written as directly as possible, with no queues. */
function reference(ops: Op[], ttl: Ttl, withTtl: boolean): string[][] {
  const state = new Map<string, { v: string; a: number }>()
  let timers: Array<{ key: string; domain: TimeDomain; ts: number; seq: number }> = []
  let seq = 0
  let streamTime = -1
  let wall = 0
  const now = (d: TimeDomain): number => (d === 'event' ? Math.max(streamTime, 0) : wall)
  const read = (k: string): string | null => {
    const e = state.get(k)
    if (e === undefined) return null
    if (!withTtl) return e.v
    const t = now(ttl.timeDomain)
    if (t >= e.a + ttl.ttlMs) return ttl.visibility === 'returnExpiredIfNotCleanedUp' ? e.v : null
    if (ttl.update === 'onReadAndWrite') e.a = t
    return e.v
  }
  const advance = (d: TimeDomain, t: number, out: string[]): void => {
    for (;;) {
      const due = timers.filter((x) => x.domain === d && x.ts <= t).sort((x, y) => x.ts - y.ts || x.seq - y.seq)[0]
      if (due === undefined) break
      timers = timers.filter((x) => x !== due)
      out.push(`timer ${d} ${due.key}@${due.ts} state=${read(due.key)}`)
    }
    if (!withTtl || d !== ttl.timeDomain) return
    for (const [k, e] of [...state]) {
      if (e.a + ttl.ttlMs <= t) {
        state.delete(k)
        out.push(`expired ${k} at ${t}`)
      }
    }
  }
  return ops.map((o) => {
    const out: string[] = []
    if (o.kind === 'wall') {
      wall += o.ms
      advance('processing', wall, out)
      return out
    }
    streamTime = Math.max(streamTime, o.ts)
    const [op, a, b] = o.cmd.split(':') as [string, string, string]
    if (op === 'set') state.set(o.key, { v: a, a: now(ttl.timeDomain) })
    else if (op === 'get') out.push(`get ${o.key}=${read(o.key)}`)
    else if (op === 'clear') state.delete(o.key)
    else if (op === 'reg') {
      if (!timers.some((x) => x.key === o.key && x.domain === a && x.ts === Number(b))) timers.push({ key: o.key, domain: a as TimeDomain, ts: Number(b), seq })
      seq++
    } else timers = timers.filter((x) => !(x.key === o.key && x.domain === a && x.ts === Number(b)))
    advance('event', streamTime, out)
    return out
  })
}

function implementation(ops: Op[], ttl: Ttl, withTtl: boolean): string[][] {
  let out: string[] = []
  const descriptor = StateDescriptors.value<string>('s', withTtl ? { ttl } : {})
  const topology = new Topology().addSource('in', 'input').addKeyedProcessor<string, string>(
    'k',
    () => {
      let ctx: KeyedProcessorContext<string>
      let s: ValueState<string>
      return {
        init(c) {
          ctx = c
          s = c.getState(descriptor)
        },
        process(r) {
          const [op, a, b] = r.value.split(':') as [string, string, string]
          if (op === 'set') s.update(a)
          else if (op === 'get') out.push(`get ${r.key}=${s.value() ?? null}`)
          else if (op === 'clear') s.clear()
          else if (op === 'reg' && a === 'event') ctx.timers.registerEventTimeTimer(Number(b))
          else if (op === 'reg') ctx.timers.registerProcessingTimeTimer(Number(b))
          else if (a === 'event') ctx.timers.deleteEventTimeTimer(Number(b))
          else ctx.timers.deleteProcessingTimeTimer(Number(b))
        },
        onTimer(t) {
          out.push(`timer ${t.domain} ${t.key}@${t.timestamp} state=${s.value() ?? null}`)
        },
        onExpire(e) {
          out.push(`expired ${e.key} at ${e.now}`)
        },
      }
    },
    'in',
  )
  const driver = new TopologyTestDriver(topology, { errorHandler: () => 'fail' })
  const input = driver.createInputTopic('input', Serdes.String(), Serdes.String())
  return ops.map((o) => {
    out = []
    if (o.kind === 'wall') driver.advanceWallClockTime(o.ms)
    else input.pipeInput(o.key, o.cmd, o.ts)
    return out
  })
}

describe('timer service and TTL state against a reference model (property)', () => {
  it('boundary: a read exactly at expiry (last access + ttl) sees nothing under neverReturnExpired', () => {
    const ops: Op[] = [{ kind: 'record', key: 'a', ts: 0, cmd: 'set:1' }, { kind: 'record', key: 'a', ts: 5, cmd: 'get' }]
    const ttl: Ttl = { ttlMs: 5, update: 'onCreateAndWrite', visibility: 'neverReturnExpired', timeDomain: 'event' }
    assert.deepEqual(implementation(ops, ttl, true), reference(ops, ttl, true))
  })

  it('produce the same gets, timer firings (user first) and expiries for random operation sequences', () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 1, maxLength: 50 }), ttlArb, fc.boolean(), (ops, ttl, withTtl) => {
        const expected = reference(ops, ttl, withTtl).map(canonical)
        const actual = implementation(ops, ttl, withTtl).map(canonical)
        assert.deepEqual(actual, expected)
      }),
      { numRuns: 5000 },
    )
  })
})
