import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { durableStore } from '../../src/state/stores.js'
import { persistentStore } from '../../src/state/persistent-store.js'
import { JoinWindowStore } from '../../src/joins/join-stores.js'
import { FakeStoreDisk } from '../helpers/fake-store-disk.js'

type Store = JoinWindowStore<string, number>

const RETENTION = 5

function onDisk(disk: FakeStoreDisk, cacheEntries: number): Store {
  const store = new JoinWindowStore<string, number>('s', RETENTION, cacheEntries)
  persistentStore(store)?.attach(disk)
  durableStore(store)?.trackChanges()
  return store
}

function fetched(store: Store, key: string, from: number, to: number): string[] {
  const out: string[] = []
  store.fetch(key, from, to, (ts, value) => out.push(`${ts}:${value}`))
  return out
}

type Op = { kind: 'put'; key: string; ts: number; value: number } | { kind: 'fetch'; key: string; from: number; to: number } | { kind: 'take' } | { kind: 'durable' } | { kind: 'restart' }

const keyArb = fc.constantFrom('a', 'b', 'c', 'd', 'e')
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('put' as const), key: keyArb, ts: fc.nat(40), value: fc.nat(9) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('fetch' as const), key: keyArb, from: fc.nat(40), to: fc.nat(40) }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'take' as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'durable' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'restart' as const }) },
)

describe('JoinWindowStore on disk (stream-stream joins)', () => {
  it('fetches what an in-memory store fetches, whatever it keeps in memory, through takes, durable commits and restarts (property)', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 120 }), fc.nat(3), (ops, cacheEntries) => {
        const memory = new JoinWindowStore<string, number>('s', RETENTION)
        const disk = new FakeStoreDisk()
        let store = onDisk(disk, cacheEntries)
        for (const op of ops) {
          if (op.kind === 'put') {
            memory.put(op.key, op.key, op.ts, op.value)
            store.put(op.key, op.key, op.ts, op.value)
          } else if (op.kind === 'fetch') assert.deepEqual(fetched(store, op.key, op.from, op.to), fetched(memory, op.key, op.from, op.to))
          else if (op.kind === 'take') disk.take(store)
          else if (op.kind === 'durable') disk.durable(store)
          else {
            disk.commit(store)
            store = onDisk(disk, cacheEntries)
          }
          assert.equal(store.time, memory.time)
          assert.equal(store.size(), memory.size())
          assert.equal(store.keyCount(), memory.keyCount())
          if (disk.inFlight === 0) assert.ok(store.keysInMemory() <= Math.max(cacheEntries, 5))
        }
        for (const key of ['a', 'b', 'c', 'd', 'e']) assert.deepEqual(fetched(store, key, 0, 40), fetched(memory, key, 0, 40))
      }),
    )
  })

  it('keeps at most cacheEntries keys in memory after a durable commit, and reads a key that left it back', () => {
    const disk = new FakeStoreDisk()
    const store = onDisk(disk, 2)
    for (const [i, key] of ['a', 'b', 'c', 'd'].entries()) store.put(key, key, 10 + i, i)
    disk.commit(store)
    assert.equal(store.keysInMemory(), 2)
    disk.reads = 0
    assert.deepEqual(fetched(store, 'a', 0, 100), ['10:0'])
    assert.equal(disk.reads, 1, 'a key that left memory is read back')
  })

  it('deletes from disk the lists of keys that left memory once all their records expired', () => {
    const disk = new FakeStoreDisk()
    const store = onDisk(disk, 1)
    store.put('a', 'a', 10, 1)
    store.put('b', 'b', 11, 2)
    disk.commit(store)
    assert.ok(disk.entriesByKey.has('a'), "'a' is on disk")
    assert.equal(store.keysInMemory(), 1, "'a' left memory")
    // The side's time moves a retention on: 'a' and 'b' are out of reach; only 'c' comes.
    store.put('c', 'c', 11 + RETENTION, 3)
    store.put('c', 'c', 12 + RETENTION, 4)
    disk.commit(store)
    assert.equal(disk.entriesByKey.has('a'), false, "'a' left memory, and its list left the disk")
    assert.equal(store.size(), 2)
  })

  it('spreads that pass over the disk across puts, a few lists each', () => {
    const disk = new FakeStoreDisk()
    const store = onDisk(disk, 1)
    const keys = Array.from({ length: 40 }, (_, i) => `k${String(i).padStart(2, '0')}`)
    for (const key of keys) store.put(key, key, 10, 1)
    disk.commit(store)
    const onDiskKeys = (): number => [...disk.entriesByKey.keys()].filter((k) => typeof k === 'string').length
    assert.equal(onDiskKeys(), 40)
    // A retention later, each put of another key visits the next 16 lists on disk.
    store.put('z', 'z', 11 + RETENTION, 2)
    disk.commit(store)
    assert.equal(onDiskKeys(), 40 - 16 + 1, 'the first put deleted the first 16 expired lists')
    store.put('z', 'z', 12 + RETENTION, 3)
    store.put('z', 'z', 13 + RETENTION, 4)
    disk.commit(store)
    assert.deepEqual([...disk.entriesByKey.keys()].filter((k) => typeof k === 'string'), ['z'], 'three puts covered the 40 lists')
  })

  it('restarts reading only its time, no list', () => {
    const disk = new FakeStoreDisk()
    const store = onDisk(disk, 10)
    store.put('a', 'a', 10, 1)
    disk.commit(store)
    disk.reads = 0
    const again = onDisk(disk, 10)
    assert.equal(again.time, 10)
    assert.equal(disk.reads, 1)
    assert.deepEqual(fetched(again, 'a', 0, 100), ['10:1'])
  })
})
