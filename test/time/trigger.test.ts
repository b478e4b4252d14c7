import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { CronRule, IntervalRule } from '../../src/time/trigger.js'

describe('IntervalRule first due time (SEMANTICS 2)', () => {
  it('unanchored stream-time schedule is due at 0, so it fires at the first check', () => {
    const r = new IntervalRule(10, undefined, 'zero')
    assert.equal(r.first(undefined), 0)
    assert.equal(r.first(500), 0)
  })

  it('unanchored wall-clock schedule is due at now + interval', () => {
    assert.equal(new IntervalRule(10, undefined, 'now+interval').first(1234), 1244)
  })

  it('anchor with unknown stream time is due at the anchor', () => {
    assert.equal(new IntervalRule(10, 15, 'zero').first(undefined), 15)
  })

  it('anchor in the future, or exactly now, is due at the anchor', () => {
    const r = new IntervalRule(10, 15, 'zero')
    assert.equal(r.first(3), 15)
    assert.equal(r.first(15), 15)
  })

  it('anchor in the past: the first grid point strictly after now (KIP-1146: 90, 101, 10 s -> 110 s)', () => {
    assert.equal(new IntervalRule(10_000, 90_000, 'now+interval').first(101_000), 110_000)
  })

  it('anchor in the past with now on the grid skips the point equal to now', () => {
    assert.equal(new IntervalRule(10, 90, 'zero').first(100), 110)
    assert.equal(new IntervalRule(10, 90, 'zero').first(99), 100)
  })
})

describe('IntervalRule next due time', () => {
  it('collapses missed points and keeps the grid phase (20, 142 -> 150)', () => {
    const r = new IntervalRule(10, undefined, 'zero')
    assert.equal(r.next(0, 20), 30)
    assert.equal(r.next(30, 142), 150)
    assert.equal(r.next(150, 155), 160)
    assert.equal(r.next(160, 160), 170)
  })

  it('is always the first grid point strictly after now (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 0, max: 1e6 }), fc.integer({ min: 0, max: 1e6 }), (interval, due, lag) => {
        const now = due + lag
        const next = new IntervalRule(interval, undefined, 'zero').next(due, now)
        assert.ok(next > now)
        assert.ok(next - interval <= now)
        assert.equal((next - due) % interval, 0)
      }),
    )
  })
})

describe('IntervalRule.missedSince (onMissed fireOnce)', () => {
  const r = new IntervalRule(100, 0, 'now+interval')
  it('is true when a grid point lies in (lastFire, now]', () => {
    assert.equal(r.missedSince(100, 200), true)
    assert.equal(r.missedSince(100, 350), true)
  })
  it('is false when no grid point passed since the last fire', () => {
    assert.equal(r.missedSince(100, 199), false)
    assert.equal(r.missedSince(100, 100), false)
  })
  it('counts the anchor itself when the last fire was before it', () => {
    assert.equal(new IntervalRule(100, 1000, 'zero').missedSince(500, 1000), true)
    assert.equal(new IntervalRule(100, 1000, 'zero').missedSince(500, 999), false)
  })
  it('unanchored schedules never count as missed', () => {
    assert.equal(new IntervalRule(10, undefined, 'now+interval').missedSince(0, 1e9), false)
  })
})

const iso = (t: number): string => new Date(t).toISOString()
const at = (s: string): number => Date.parse(s)

/** Walks a cron rule from `from`, returning the next `n` due times as ISO strings. */
function walk(rule: CronRule, from: string, n: number): string[] {
  const out: string[] = []
  let t = rule.first(at(from))
  for (let i = 0; i < n; i++) {
    out.push(iso(t))
    t = rule.next(t, t)
  }
  return out
}

describe('CronRule across daylight-saving changes', () => {
  it('Europe/Berlin spring forward: 02:30 does not exist on 2026-03-29 and fires once at 03:00 CEST', () => {
    const r = new CronRule('30 2 * * *', 'Europe/Berlin', 'test')
    assert.deepEqual(walk(r, '2026-03-27T12:00:00Z', 3), ['2026-03-28T01:30:00.000Z', '2026-03-29T01:00:00.000Z', '2026-03-30T00:30:00.000Z'])
  })

  it('Europe/Berlin fall back: a daily 02:30 fires once on 2026-10-25, in the first (CEST) 02:30', () => {
    const r = new CronRule('30 2 * * *', 'Europe/Berlin', 'test')
    assert.deepEqual(walk(r, '2026-10-23T12:00:00Z', 3), ['2026-10-24T00:30:00.000Z', '2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z'])
  })

  it('Europe/Berlin fall back: every 30 minutes keeps firing every 30 real minutes through the repeated hour', () => {
    const r = new CronRule('*/30 * * * *', 'Europe/Berlin', 'test')
    assert.deepEqual(walk(r, '2026-10-24T23:45:00Z', 5), [
      '2026-10-25T00:00:00.000Z',
      '2026-10-25T00:30:00.000Z',
      '2026-10-25T01:00:00.000Z',
      '2026-10-25T01:30:00.000Z',
      '2026-10-25T02:00:00.000Z',
    ])
  })

  it('America/New_York spring forward: 02:30 on 2026-03-08 is skipped forward to 03:00 EDT', () => {
    const r = new CronRule('30 2 * * *', 'America/New_York', 'test')
    assert.deepEqual(walk(r, '2026-03-06T12:00:00Z', 3), ['2026-03-07T07:30:00.000Z', '2026-03-08T07:00:00.000Z', '2026-03-09T06:30:00.000Z'])
  })

  it('America/New_York fall back: a daily 01:30 fires once on 2026-11-01, in the first (EDT) 01:30', () => {
    const r = new CronRule('30 1 * * *', 'America/New_York', 'test')
    assert.deepEqual(walk(r, '2026-10-31T12:00:00Z', 3), ['2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z', '2026-11-03T06:30:00.000Z'])
  })

  it('next is strictly after now and collapses missed points', () => {
    const r = new CronRule('0 * * * *', 'UTC', 'test')
    assert.equal(iso(r.first(at('2026-01-01T10:00:00Z'))), '2026-01-01T11:00:00.000Z')
    assert.equal(iso(r.next(at('2026-01-01T11:00:00Z'), at('2026-01-01T15:20:00Z'))), '2026-01-01T16:00:00.000Z')
  })

  it('missedSince finds a cron point between the last fire and now', () => {
    const r = new CronRule('0 0 * * *', 'UTC', 'test')
    assert.equal(r.missedSince(at('2026-01-01T00:00:00Z'), at('2026-01-02T00:00:00Z')), true)
    assert.equal(r.missedSince(at('2026-01-01T00:00:00Z'), at('2026-01-01T23:59:59Z')), false)
  })

  it('rejects a bad expression and an unknown time zone, naming the place and the value', () => {
    assert.throws(() => new CronRule('61 * * * *', 'UTC', 'processor "p" schedule'), /processor "p" schedule: invalid cron expression "61 \* \* \* \*"/)
    assert.throws(() => new CronRule('0 0 * * *', 'Mars/Olympus', 'processor "p" schedule'), /processor "p" schedule: unknown IANA time zone "Mars\/Olympus"/)
  })
})
