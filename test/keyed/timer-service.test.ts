import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { TimerService } from '../../src/keyed/timer-service.js'
import { KeyedTaskState } from '../../src/keyed/keyed-task-state.js'
import type { KeyedNodeHandle } from '../../src/keyed/keyed-task-state.js'
import { StateDescriptors } from '../../src/keyed/api.js'

describe('TimerService with large queues', () => {
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

  it('durable changes give each fired timer its own sequence, also when a callback reuses its id at once', () => {
    const changes: string[] = []
    const take = (): void => {
      for (const c of ts.takeChanges()) changes.push(`${c.added ? '+' : '-'}${c.owner}/${String(c.key)}@${c.timestamp}#${c.seq}`)
    }
    const ts = new TimerService(
      {
        // The registration takes the id the fired timer just freed.
        onUserTimer: (_owner, key, timestamp) => {
          if (key !== 'a') return
          ts.registerUser('event', 1, 'a+', timestamp + 5)
          ts.deleteUser('event', 1, 'absent', 0)
        },
        onTtlTimer: () => {},
      },
      () => {},
    )
    ts.trackChanges()
    ts.registerUser('event', 0, 'a', 10)
    ts.registerUser('event', 0, 'b', 20)
    ts.registerUser('event', 1, 'c', 20)
    take()
    assert.equal(ts.advance('event', 25), 4)
    take()
    assert.deepEqual(changes, ['+0/a@10#0', '+0/b@20#1', '+1/c@20#2', '-0/a@10#0', '+1/a+@15#3', '-1/a+@15#3', '-0/b@20#1', '-1/c@20#2'])
  })
})

describe('KeyedTaskState', () => {
  it('refuses a keyed processor past the 65,536 a task can hold (timer owners are 16-bit), naming it', () => {
    const state = new KeyedTaskState(() => {}, () => {}, undefined)
    for (let i = 0; i < 65_536; i++) state.addNode({ name: `p${i}` } as KeyedNodeHandle)
    assert.throws(() => state.addNode({ name: 'one-too-many' } as KeyedNodeHandle), /keyed processor "one-too-many": a task holds at most 65536 keyed processors/)
  })

  it('refuses a keyed state past the 65,536 a task can hold (TTL timer owners are 16-bit), naming it', () => {
    const state = new KeyedTaskState(() => {}, () => {}, undefined)
    const node = { name: 'p' } as KeyedNodeHandle
    const ttlNow = (): number => 0
    for (let i = 0; i < 65_536; i++) state.stateTable(node, StateDescriptors.value(`s${i}`), ttlNow)
    assert.throws(() => state.stateTable(node, StateDescriptors.value('one-too-many'), ttlNow), /keyed processor "p" state "one-too-many": a task holds at most 65536 keyed states/)
  })
})

describe('TimerService: re-arming the alarm for processing-time timers', () => {
  it('tells of a processing-time registration only when it is earlier than the head the alarm was armed for', () => {
    let told = 0
    const ts = new TimerService({ onUserTimer: () => {}, onTtlTimer: () => {} }, () => void told++)
    ts.registerUser('processing', 0, 'a', 1000)
    assert.equal(told, 1, 'the first one: nothing was armed')
    assert.equal(ts.nextProcessingDueToArm(), 1000)
    for (let i = 0; i < 100; i++) ts.registerUser('processing', 0, `later-${i}`, 1000 + i)
    ts.registerTtl('processing', 1, 'ttl', 5000)
    ts.registerUser('event', 0, 'e', 1)
    assert.equal(told, 1, 'later ones, and event-time ones, cannot move the alarm')
    ts.registerUser('processing', 0, 'earlier', 500)
    assert.equal(told, 2)
    ts.registerTtl('processing', 1, 'earlier-still', 400)
    assert.equal(told, 3, 'each new earliest tells, until the alarm is armed again')
    assert.equal(ts.nextProcessingDueToArm(), 400)
    ts.registerUser('processing', 0, 'same', 400)
    assert.equal(told, 3)
    ts.advance('processing', 1000)
    assert.equal(ts.nextProcessingDueToArm(), 1001, 'armed again after firing: the head moved on')
    ts.registerUser('processing', 0, 'between', 1000)
    assert.equal(told, 4)
  })
})

describe('TimerService snapshot', () => {
  it('lists every pending timer in the order the service fires them, per domain (property)', () => {
    const registration = fc.record({
      kind: fc.constantFrom<'user' | 'ttl'>('user', 'ttl'),
      domain: fc.constantFrom<'event' | 'processing'>('event', 'processing'),
      key: fc.constantFrom('a', 'b', 'c', 'd', 'e'),
      timestamp: fc.integer({ min: 1_767_225_600_000, max: 1_767_225_600_020 }),
    })
    fc.assert(
      fc.property(fc.array(registration, { maxLength: 60 }), (registrations) => {
        const fired: string[] = []
        const ts = new TimerService(
          {
            onUserTimer: (_owner, key, timestamp) => void fired.push(`user ${String(key)}@${timestamp}`),
            onTtlTimer: (_owner, key, timestamp) => void fired.push(`ttl ${String(key)}@${timestamp}`),
          },
          () => {},
        )
        for (const r of registrations) {
          if (r.kind === 'user') ts.registerUser(r.domain, 0, r.key, r.timestamp)
          else ts.registerTtl(r.domain, 0, r.key, r.timestamp)
        }
        const snapshot = ts.snapshot(['p'], ['p/s'])
        for (const domain of ['event', 'processing'] as const) {
          fired.length = 0
          ts.advance(domain, Number.MAX_SAFE_INTEGER)
          assert.deepEqual(
            snapshot.filter((r) => r.domain === domain).map((r) => `${r.kind} ${String(r.key)}@${r.timestamp}`),
            fired,
          )
        }
      }),
    )
  })
})
