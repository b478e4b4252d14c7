import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { StateDescriptors } from '../../src/index.js'
import type { ExpiredEntry, TtlConfig } from '../../src/index.js'
import type { TaskCheckpoint } from '../../src/processor/internal/task-config.js'
import { keyedDriver } from '../helpers/keyed.js'

/**
 * A value state with TTL driven by commands: "set:v", "get", "clear"; gets and expiries are recorded.
 * Event-time TTL unless told otherwise.
 */
function valueDriver(ttl: TtlConfig, wallClockStartMs = 0) {
  return keyedDriver<string>(
    (ctx, ev) => {
      const s = ctx.getState(StateDescriptors.value<string>('s', { ttl }))
      return {
        process(r) {
          if (r.value.startsWith('set:')) s.update(r.value.slice(4))
          else if (r.value === 'get') ev.push(`get ${r.key}=${s.value() ?? 'null'}`)
          else if (r.value === 'clear') s.clear()
        },
        onExpire(e: ExpiredEntry<string>) {
          ev.push(`expired ${e.key}=${String(e.value)} at ${e.now} (expiredAt ${e.expiredAt})`)
        },
      }
    },
    { wallClockStartMs },
  )
}

describe('state TTL on value state (SEMANTICS 4)', () => {
  it('an entry expires at last access + ttl; neverReturnExpired hides it at exactly that time', () => {
    const { events, pipe } = valueDriver({ ttlMs: 10, timeDomain: 'event', visibility: 'neverReturnExpired' })
    pipe('a', 'set:v', 0)
    pipe('b', '', 9)
    pipe('a', 'get', 9)
    assert.deepEqual(events, ['get a=v'])
    // The record is processed first (the entry is hidden, not yet removed), then the TTL timer runs.
    pipe('a', 'get', 10)
    assert.deepEqual(events.slice(1), ['get a=null', 'expired a=v at 10 (expiredAt 10)'])
  })

  it('returnExpiredIfNotCleanedUp returns an expired entry until its TTL timer runs; reads never remove', () => {
    const { events, pipe, driver } = keyedDriver<string>((ctx, ev) => {
      const s = ctx.getState(StateDescriptors.value<string>('s', { ttl: { ttlMs: 10, timeDomain: 'event', visibility: 'returnExpiredIfNotCleanedUp' } }))
      return {
        process(r) {
          if (r.value === 'set') s.update('v')
          // A user timer at 10 runs before the TTL timer at 10 and still sees the value.
          if (r.value === 'set') ctx.timers.registerEventTimeTimer(10)
        },
        onTimer() {
          ev.push(`timer sees ${s.value() ?? 'null'}`)
          ev.push(`timer sees ${s.value() ?? 'null'} again`)
        },
        onExpire(e) {
          ev.push(`expired ${e.key}`)
        },
      }
    })
    pipe('a', 'set', 0)
    pipe('b', '', 10)
    assert.deepEqual(events, ['timer sees v', 'timer sees v again', 'expired a'])
    assert.deepEqual(driver.pendingTimers('keyed', 'a'), { event: [], processing: [] })
  })

  it('onCreateAndWrite: reads do not extend the life of an entry, writes do', () => {
    const { events, pipe } = valueDriver({ ttlMs: 10, timeDomain: 'event' })
    pipe('a', 'set:v', 0)
    pipe('a', 'get', 8)
    pipe('a', 'set:w', 8) // now lives until 18
    pipe('b', '', 12)
    pipe('a', 'get', 17)
    pipe('b', '', 18)
    assert.deepEqual(events, ['get a=v', 'get a=w', 'expired a=w at 18 (expiredAt 18)'])
  })

  it('onReadAndWrite: a read refreshes an unexpired entry, never an expired one', () => {
    const { events, pipe } = valueDriver({ ttlMs: 10, timeDomain: 'event', update: 'onReadAndWrite', visibility: 'returnExpiredIfNotCleanedUp' })
    pipe('a', 'set:v', 0)
    pipe('a', 'get', 9) // refreshed: lives until 19
    pipe('b', '', 15)
    assert.deepEqual(events, ['get a=v'])
    pipe('b', '', 19)
    assert.deepEqual(events.slice(1), ['expired a=v at 19 (expiredAt 19)'])
  })

  it('an entry refreshed after a TTL timer was set is left alone by that timer', () => {
    const { events, pipe } = valueDriver({ ttlMs: 10, timeDomain: 'event', update: 'onReadAndWrite' })
    pipe('a', 'set:v', 0) // TTL timer at 10
    pipe('a', 'get', 5) // refreshed to 15 (new TTL timer at 15)
    pipe('b', '', 10)
    pipe('a', 'get', 14)
    assert.deepEqual(events, ['get a=v', 'get a=v'])
    pipe('b', '', 30)
    assert.deepEqual(events.slice(2), ['expired a=v at 30 (expiredAt 24)'])
  })

  it('processing-time TTL (the default) runs on the wall clock', () => {
    const { events, pipe, driver } = valueDriver({ ttlMs: 100 }, 1000)
    pipe('a', 'set:v', 0)
    pipe('a', 'get', 5_000_000) // stream time is irrelevant
    driver.advanceWallClockTime(99)
    assert.deepEqual(events, ['get a=v'])
    driver.advanceWallClockTime(1)
    assert.deepEqual(events.slice(1), ['expired a=v at 1100 (expiredAt 1100)'])
  })

  it('clear removes the entry and its TTL timer: no expiry is reported', () => {
    const { events, pipe, driver } = valueDriver({ ttlMs: 10, timeDomain: 'event' })
    pipe('a', 'set:v', 0)
    pipe('a', 'clear', 1)
    pipe('b', '', 50)
    assert.deepEqual(events, [])
    void driver
  })
})

describe('state TTL on map and list state: per entry, per element', () => {
  it('map entries expire one by one and the listener learns the map key', () => {
    const { events, pipe } = keyedDriver<string>((ctx, ev) => {
      const m = ctx.getMapState(StateDescriptors.map<string, number>('m', { ttl: { ttlMs: 10, timeDomain: 'event' } }))
      return {
        process(r) {
          const [op, k] = r.value.split(':') as [string, string]
          if (op === 'put') m.put(k, r.timestamp)
          else ev.push(`entries ${JSON.stringify(m.entries())}`)
        },
        onExpire(e) {
          ev.push(`expired ${e.key}.${String(e.mapKey)}`)
        },
      }
    })
    pipe('a', 'put:x', 0)
    pipe('a', 'put:y', 5)
    pipe('a', 'show:', 9)
    pipe('a', 'show:', 10)
    pipe('a', 'show:', 15)
    // Each record is processed before the TTL timers its stream time makes due.
    assert.deepEqual(events, ['entries [["x",0],["y",5]]', 'entries [["y",5]]', 'expired a.x', 'entries []', 'expired a.y'])
  })

  it('list elements expire one by one', () => {
    const { events, pipe } = keyedDriver<string>((ctx, ev) => {
      const l = ctx.getListState(StateDescriptors.list<string>('l', { ttl: { ttlMs: 10, timeDomain: 'event', visibility: 'returnExpiredIfNotCleanedUp' } }))
      return {
        process(r) {
          if (r.value === 'show') ev.push(`list ${l.get().join(',')}`)
          else l.add(r.value)
        },
        onExpire(e) {
          ev.push(`expired ${String(e.value)}`)
        },
      }
    })
    pipe('a', 'p', 0)
    pipe('a', 'q', 4)
    pipe('a', 'show', 10)
    pipe('a', 'show', 14)
    // returnExpiredIfNotCleanedUp: the expired element is still read until its TTL timer removes it.
    assert.deepEqual(events, ['list p,q', 'expired p', 'list q', 'expired q'])
  })

  it('state without TTL never expires and registers no timers', () => {
    const { pipe, driver } = keyedDriver<string>((ctx) => {
      const s = ctx.getState(StateDescriptors.value<string>('plain'))
      return { process: (r) => s.update(r.value) }
    })
    pipe('a', 'v', 0)
    pipe('a', 'w', 1e9)
    const tasks = driver.checkpoint() as unknown as Record<string, TaskCheckpoint>
    assert.deepEqual(tasks['0_0']?.keyed?.timers, [])
    assert.deepEqual(tasks['0_0']?.keyed?.states['keyed/plain'], { kind: 'value', entries: [['a', { v: 'w', a: 0 }]] })
  })
})
