import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { durableStore } from '../../src/state/stores.js'
import { persistentStore } from '../../src/state/persistent-store.js'
import { KeyedListStore } from '../../src/windows/keyed-list-store.js'
import { FakeStoreDisk } from '../helpers/fake-store-disk.js'

type Store = KeyedListStore<string, number>

function inMemory(): Store {
  return new KeyedListStore<string, number>('s', (n) => n, (_k, saved) => saved as number)
}

function onDisk(disk: FakeStoreDisk, cacheEntries: number): Store {
  const store = new KeyedListStore<string, number>('s', (n) => n, (_k, saved) => saved as number, cacheEntries)
  persistentStore(store)?.attach(disk)
  durableStore(store)?.trackChanges()
  return store
}

/** What a session or sliding aggregation does with a record: the key's list changes, or empties. */
function add(store: Store, key: string, n: number): void {
  const entry = store.getOrCreate(key, key)
  entry.list = [...entry.list, n]
  store.touched(key)
}

function empty(store: Store, key: string): void {
  const entry = store.get(key)
  if (entry === undefined) return
  entry.list = []
  store.touched(key)
}

const shown = (store: Store): string[] => store.inKeyIdOrder().map((e) => `${e.key}:${e.list.join(',')}`)

type Op = { kind: 'add'; key: string; n: number } | { kind: 'empty'; key: string } | { kind: 'read'; key: string } | { kind: 'take' } | { kind: 'durable' } | { kind: 'restart' }

const keyArb = fc.constantFrom('a', 'b', 'c', 'd')
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('add' as const), key: keyArb, n: fc.nat(9) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('empty' as const), key: keyArb }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('read' as const), key: keyArb }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'take' as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'durable' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'restart' as const }) },
)

describe('KeyedListStore on disk (sessions, sliding windows)', () => {
  it('holds the same lists as in memory, whatever it keeps in memory, through takes, durable commits and restarts (property)', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 100 }), fc.nat(3), (ops, cacheEntries) => {
        const memory = inMemory()
        const disk = new FakeStoreDisk()
        let store = onDisk(disk, cacheEntries)
        for (const op of ops) {
          if (op.kind === 'add') {
            add(memory, op.key, op.n)
            add(store, op.key, op.n)
          } else if (op.kind === 'empty') {
            empty(memory, op.key)
            empty(store, op.key)
          } else if (op.kind === 'read') assert.deepEqual(store.get(op.key)?.list, memory.get(op.key)?.list)
          else if (op.kind === 'take') disk.take(store)
          else if (op.kind === 'durable') disk.durable(store)
          else {
            disk.commit(store)
            store = onDisk(disk, cacheEntries)
          }
          assert.deepEqual(shown(store), shown(memory))
        }
      }),
    )
  })

  it('reads a key that left memory back from disk, and a restart reads none up front', () => {
    const disk = new FakeStoreDisk()
    const store = onDisk(disk, 1)
    store.streamTime = 7
    for (const key of ['a', 'b', 'c']) add(store, key, 1)
    disk.commit(store)
    disk.reads = 0
    add(store, 'a', 2)
    assert.equal(disk.reads, 1, 'a key that left memory is read back')
    disk.commit(store)
    disk.reads = 0
    const again = onDisk(disk, 1)
    assert.equal(again.streamTime, 7)
    assert.equal(disk.reads, 3, "the store's three fields, no list")
    assert.deepEqual(again.get('a')?.list, [1, 2])
  })
})
