import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { JoinWindowStore } from '../../src/joins/join-stores.js'
import { DURABLE } from '../../src/state/stores.js'

/** The records a fetch of the whole visible range returns, as "ts:value". */
function visible(store: JoinWindowStore<string, string>, id: string): string[] {
  const out: string[] = []
  store.fetch(id, 0, Number.MAX_SAFE_INTEGER, (ts, v) => out.push(`${ts}:${v}`))
  return out
}

describe('JoinWindowStore', () => {
  it('keeps a record while the side time is less than the retention past it', () => {
    const store = new JoinWindowStore<string, string>('s', 100)
    store.put('a', 'a', 1000, 'x')
    store.put('b', 'b', 1099, 'y')
    assert.deepEqual(visible(store, 'a'), ['1000:x'])
    store.put('b', 'b', 1100, 'z')
    assert.deepEqual(visible(store, 'a'), [])
    assert.deepEqual(visible(store, 'b'), ['1099:y', '1100:z'])
  })

  it('a key whose records all expired takes new ones, in timestamp order, late ones included', () => {
    // Retention 1000 ms: buckets of 1 s; side time far past the key's records empties it.
    const store = new JoinWindowStore<string, string>('s', 1000)
    store.put('k', 'k', 1000, 'a')
    store.put('k', 'k', 1500, 'b')
    store.put('other', 'other', 5000, 'o')
    assert.equal(store.keyCount(), 1)
    assert.deepEqual(visible(store, 'k'), [])
    store.put('k', 'k', 5200, 'c')
    store.put('k', 'k', 4500, 'late')
    store.put('k', 'k', 5100, 'd')
    assert.deepEqual(visible(store, 'k'), ['4500:late', '5100:d', '5200:c'])
    assert.equal(store.size(), 4)
    assert.equal(store.keyCount(), 2)
  })

  it('forgets emptied keys once they outnumber the live ones, and keeps the live ones', () => {
    const store = new JoinWindowStore<string, string>('s', 1000)
    for (let i = 0; i < 3000; i++) store.put(`k${i}`, `k${i}`, i * 10, `v${i}`)
    // Side time 29,990, so records at or before 28,990 are out of reach: the keys put after it are held.
    assert.equal(store.keyCount(), 100)
    assert.equal(store.size(), 100)
    // Sweeps drop the others; emptied keys stay until they are more than 1,024 and more than the
    // others: not all 2,900.
    const entries = (store as unknown as { byKey: Map<string, unknown> }).byKey.size
    assert.ok(entries <= 2 * 1025 + 1024, `${entries} entries`)
    assert.deepEqual(visible(store, 'k2999'), ['29990:v2999'])
    assert.deepEqual(visible(store, 'k2899'), [])
    assert.deepEqual(visible(store, 'k2991'), ['29910:v2991'])
    // A forgotten key comes back like a new one.
    store.put('k5', 'k5', 30_000, 'again')
    assert.deepEqual(visible(store, 'k5'), ['30000:again'])
  })

  it('a put drops its own key\'s expired records; a sweep those of keys no record came for', () => {
    const store = new JoinWindowStore<string, string>('s', 1000)
    const log = store[DURABLE]
    log.trackChanges()
    store.put('gone', 'gone', 1000, 'a')
    store.put('kept', 'kept', 1500, 'b')
    assert.deepEqual(log.takeChanges().map(([k]) => k).sort(), [-1, 'gone', 'kept'])
    store.put('kept', 'kept', 3500, 'c')
    // Out of reach at once; 'gone' leaves memory and the changelog with the next sweep.
    assert.deepEqual(visible(store, 'gone'), [])
    let changes = new Map(log.takeChanges())
    assert.deepEqual(changes.get('kept'), { key: 'kept', list: [[3500, 'c']] })
    assert.equal(changes.has('gone'), false)
    for (let i = 0; i < 1024; i++) store.put('kept', 'kept', 3500 + i, `c${i}`)
    changes = new Map(log.takeChanges())
    assert.ok(changes.has('gone'), 'the emptied key is logged as a deletion')
    assert.equal(changes.get('gone'), undefined)
    // Only 'kept' records within the second before its newest are held.
    assert.equal(store.keyCount(), 1)
    assert.equal(store.size(), 1000)
    const kept = (store as unknown as { byKey: Map<string, { end: number; head: number }> }).byKey.get('kept')
    assert.equal(kept !== undefined && kept.end - kept.head, 1000)
  })

  it('a snapshot leaves emptied keys out and restores what a fetch sees', () => {
    const store = new JoinWindowStore<string, string>('s', 1000)
    const log = store[DURABLE]
    log.trackChanges()
    store.put('gone', 'gone', 1000, 'a')
    store.put('kept', 'kept', 1500, 'b')
    store.put('kept', 'kept', 3500, 'c')
    for (let i = 0; i < 1024; i++) store.put(`x${i}`, `x${i}`, 3500, 'x')
    const snapshot = log.entries()
    assert.ok(!snapshot.some(([k]) => k === 'gone'))
    const restored = new JoinWindowStore<string, string>('s', 1000)
    restored[DURABLE].restore(snapshot)
    assert.deepEqual(visible(restored, 'kept'), ['3500:c'])
    assert.deepEqual(visible(restored, 'gone'), [])
    assert.equal(restored.time, 3500)
    assert.equal(restored.keyCount(), 1025)
  })

  it('a key emptied and filled again between two commits is logged with its new records', () => {
    const store = new JoinWindowStore<string, string>('s', 1000)
    const log = store[DURABLE]
    log.trackChanges()
    store.put('k', 'k', 1000, 'a')
    log.takeChanges()
    store.put('x', 'x', 4000, 'x')
    store.put('k', 'k', 4100, 'b')
    assert.deepEqual(new Map(log.takeChanges()).get('k'), { key: 'k', list: [[4100, 'b']] })
  })
})
