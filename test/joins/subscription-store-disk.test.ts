import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { durableStore } from '../../src/state/stores.js'
import { persistentStore } from '../../src/state/persistent-store.js'
import { SubscriptionStore } from '../../src/joins/subscription-store.js'
import { FakeStoreDisk } from '../helpers/fake-store-disk.js'

type Store = SubscriptionStore<string>

function onDisk(disk: FakeStoreDisk, cacheEntries: number): Store {
  const store = new SubscriptionStore<string>('s', cacheEntries)
  persistentStore(store)?.attach(disk)
  durableStore(store)?.trackChanges()
  return store
}

const subscriber = (pk: string, ts: number) => ({ hash: null, primaryKey: pk, primaryPartition: 0, ts })

/** A foreign key's subscribers as `pk@ts`, in the order the store answers them. */
const shown = (store: Store, fk: string): string[] => [...store.subscribers(fk)].map((s) => `${s.primaryKey}@${s.ts}`)

type Op = { kind: 'put'; fk: string; pk: string; ts: number } | { kind: 'delete'; fk: string; pk: string } | { kind: 'read'; fk: string } | { kind: 'take' } | { kind: 'durable' } | { kind: 'restart' }

const FKS = ['x', 'y', 'yy', 'z']
const fkArb = fc.constantFrom(...FKS)
// Primary key ids whose order as strings differs from their order of arrival.
const pkArb = fc.constantFrom('b', 'a', 'ab', 'c', '\u00ff')
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('put' as const), fk: fkArb, pk: pkArb, ts: fc.nat(9) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('delete' as const), fk: fkArb, pk: pkArb }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('read' as const), fk: fkArb }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'take' as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'durable' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'restart' as const }) },
)

describe('SubscriptionStore on disk (foreign-key joins)', () => {
  it('answers as an in-memory store does, whatever it keeps in memory, through takes, durable commits and restarts (property)', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 120 }), fc.nat(2), (ops, cacheEntries) => {
        const memory = new SubscriptionStore<string>('s')
        const disk = new FakeStoreDisk()
        let store = onDisk(disk, cacheEntries)
        for (const op of ops) {
          if (op.kind === 'put') {
            memory.put(op.fk, op.pk, subscriber(op.pk, op.ts))
            store.put(op.fk, op.pk, subscriber(op.pk, op.ts))
          } else if (op.kind === 'delete') {
            memory.delete(op.fk, op.pk)
            store.delete(op.fk, op.pk)
          } else if (op.kind === 'read') assert.deepEqual(shown(store, op.fk), shown(memory, op.fk))
          else if (op.kind === 'take') disk.take(store)
          else if (op.kind === 'durable') disk.durable(store)
          else {
            disk.commit(store)
            store = onDisk(disk, cacheEntries)
          }
          if (disk.inFlight === 0) assert.ok(store.foreignKeysInMemory() <= Math.max(cacheEntries, FKS.length))
        }
        for (const fk of FKS) assert.deepEqual(shown(store, fk), shown(memory, fk), `foreign key ${fk}`)
        disk.commit(store)
        const entries = (durableStore(store)?.entries() ?? []).map(([k]) => k).sort()
        assert.deepEqual(entries, (durableStore(memory)?.entries() ?? []).map(([k]) => k).sort())
      }),
    )
  })

  it('keeps at most cacheEntries foreign keys in memory after a durable commit, and reads one back whole', () => {
    const disk = new FakeStoreDisk()
    const store = onDisk(disk, 1)
    store.put('x', 'b', subscriber('b', 1))
    store.put('x', 'a', subscriber('a', 2))
    store.put('y', 'c', subscriber('c', 3))
    disk.commit(store)
    assert.equal(store.foreignKeysInMemory(), 1)
    assert.deepEqual(shown(store, 'x'), ['a@2', 'b@1'])
    const again = onDisk(disk, 1)
    assert.equal(again.foreignKeysInMemory(), 0, 'a restart reads no subscription up front')
    assert.deepEqual(shown(again, 'y'), ['c@3'])
  })
})
