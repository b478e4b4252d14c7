import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { TimerService } from '../../src/keyed/timer-service.js'

describe('TimerService with large queues (sorted runs)', () => {
  it('a jump past 40,000 user and 40,000 TTL timers fires every user timer first, each kind in (timestamp, registration) order', () => {
    const fired: Array<[string, number, string]> = []
    const ts = new TimerService(
      {
        onUserTimer: (_owner, key, timestamp) => {
          fired.push(['user', timestamp, key as string])
          // A user timer registered by a callback, already due, still goes before every TTL timer.
          if (key === 'u-0') ts.registerUser('event', 0, 'from-callback', base)
        },
        onTtlTimer: (_owner, key, timestamp) => void fired.push(['ttl', timestamp, key as string]),
      },
      () => {},
    )
    // Epoch milliseconds (above 2^32) with many ties.
    const base = 1_767_225_600_000
    for (let i = 0; i < 40_000; i++) {
      ts.registerUser('event', 0, `u-${i}`, base + ((i * 7919) % 3000))
      ts.registerTtl('event', 1, `t-${i}`, base + ((i * 104_729) % 3000))
    }
    ts.deleteUser('event', 0, 'u-1', base + (7919 % 3000))
    assert.equal(ts.advance('event', base + 10_000), 80_000)
    const users = fired.filter((f) => f[0] === 'user')
    const ttls = fired.filter((f) => f[0] === 'ttl')
    assert.equal(users.length, 40_000)
    assert.equal(ttls.length, 40_000)
    assert.ok(fired.slice(0, 40_000).every((f) => f[0] === 'user'), 'every user timer before the first TTL timer')
    assert.ok(users.some((f) => f[2] === 'from-callback'))
    assert.ok(!users.some((f) => f[2] === 'u-1'), 'the deleted timer did not fire')
    // Registration order within a timestamp: key index ascending (keys were registered in index order).
    const index = (key: string): number => (key === 'from-callback' ? Infinity : Number(key.slice(2)))
    for (const list of [users, ttls]) {
      for (let i = 1; i < list.length; i++) {
        const [, t0, k0] = list[i - 1]!
        const [, t1, k1] = list[i]!
        assert.ok(t0 < t1 || (t0 === t1 && index(k0) < index(k1)), `out of order: ${k0}@${t0} then ${k1}@${t1}`)
      }
    }
    assert.equal(ts.nextDue('event'), Infinity)
  })
})
