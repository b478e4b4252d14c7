import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { EmbeddedRuntime, silentLogger, StateDescriptors, Topology } from '../../src/index.js'
import type { KeyedProcessorContext, ValueState } from '../../src/index.js'
import type { TaskChangelog } from '../../src/runtime/changelog.js'
import { ManualClock } from '../../src/testing/index.js'
import { countingTopology } from '../helpers/counting.js'
import { decodeStoreKey, unpackValue } from '../../src/state/changelog-codec.js'
import { decodeTimer, KEYED_STATE_STORE_PREFIX, TIMER_STORE } from '../../src/runtime/changelog-records.js'

describe('changelog listener (the change stream for changelog topics)', () => {
  it('replaying the store changes rebuilds the store, deletions as tombstones', async () => {
    const commits: Array<readonly TaskChangelog[]> = []
    const rt = new EmbeddedRuntime(countingTopology('in'), { applicationId: 'cl', changelog: (c) => commits.push(c), logger: silentLogger })
    await rt.start()
    const p = rt.producer('in')
    for (const k of ['x', 'y', 'x', 'z']) p.send(k, 'v', 1)
    p.send('z', 'forget', 2)
    await rt.stop()
    const table = new Map<unknown, unknown>()
    let tombstones = 0
    for (const commit of commits) {
      for (const task of commit) {
        assert.equal(task.taskId, '0_0')
        for (const r of task.records) {
          if (r.store !== 'counts') continue
          const key = decodeStoreKey(r.key)
          if (r.value === null) {
            tombstones++
            table.delete(key)
          } else table.set(key, unpackValue(r.value))
        }
      }
    }
    assert.deepEqual([...table].sort(), [
      ['x', 2],
      ['y', 1],
    ])
    assert.ok(tombstones <= 1, 'z, created and deleted, is at most one tombstone')
  })

  it('reports keyed state and timers as they are added and fire', async () => {
    const commits: TaskChangelog[] = []
    const topology = new Topology().addSource('in', 'input').addKeyedProcessor<string, string>(
      'k',
      () => {
        let ctx: KeyedProcessorContext<string>
        let seen: ValueState<number>
        return {
          init(c) {
            ctx = c
            seen = c.getState(StateDescriptors.value<number>('seen'))
          },
          process(r) {
            seen.update(r.timestamp)
            ctx.timers.registerEventTimeTimer(r.timestamp + 10)
          },
          onTimer() {},
        }
      },
      'in',
    )
    const clock = new ManualClock(0)
    const rt = new EmbeddedRuntime(topology, { applicationId: 'cl-keyed', changelog: (c) => commits.push(...c), logger: silentLogger, commitIntervalMs: 1, clock })
    await rt.start()
    rt.producer('input').send('a', 'v', 1)
    await new Promise((r) => setImmediate(r))
    clock.advance(1) // a commit
    rt.producer('input').send('b', 'v', 20) // stream time 20 fires a's timer at 11
    await rt.stop()
    const timers = commits
      .flatMap((c) => c.records.filter((r) => r.store === TIMER_STORE))
      .map((r) => {
        // A tombstone has no sequence number to decode: give it one to read the key.
        const timer = decodeTimer(r.value === null ? { ...r, value: new Uint8Array(8) } : r)
        assert.equal(timer.owner, 'k')
        return `${r.value === null ? '-' : '+'}${String(timer.key)}@${timer.timestamp}`
      })
    assert.ok(timers.includes('+a@11') && timers.includes('+b@30'), `timers added: ${timers.join(' ')}`)
    assert.ok(timers.indexOf('-a@11') > timers.indexOf('+a@11'), 'the fired timer is removed after it was added')
    const states = commits.flatMap((c) => c.records.filter((r) => r.store.startsWith(KEYED_STATE_STORE_PREFIX))).map((r) => `${r.store.slice(KEYED_STATE_STORE_PREFIX.length)}:${String(decodeStoreKey(r.key))}`)
    assert.ok(states.includes('k/seen:a') && states.includes('k/seen:b'), `states: ${states.join(' ')}`)
  })

  it('refuses a changelog that is not a function', () => {
    assert.throws(() => new EmbeddedRuntime(new Topology(), { applicationId: 'x', changelog: 'topic' as never }), /changelog must be a function/)
  })
})
