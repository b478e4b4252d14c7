import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { durableStore } from '../../src/state/stores.js'
import { persistentStore } from '../../src/state/persistent-store.js'
import type { StateStore } from '../../src/processor/api.js'
import { JoinBufferStore } from '../../src/joins/join-buffer.js'
import { OuterJoinStore } from '../../src/joins/outer-join-store.js'
import { FakeStoreDisk } from '../helpers/fake-store-disk.js'

function attached<S extends StateStore>(store: S, disk: FakeStoreDisk): S {
  persistentStore(store)?.attach(disk)
  durableStore(store)?.trackChanges()
  return store
}

type Commit = { kind: 'take' } | { kind: 'durable' } | { kind: 'restart' }
const commitArb: fc.Arbitrary<Commit> = fc.oneof(
  { weight: 2, arbitrary: fc.constant({ kind: 'take' as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'durable' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'restart' as const }) },
)
const keyArb = fc.constantFrom('a', 'b', 'c')

/** Applies a commit step to the store on disk; returns the store to go on with. */
function commitStep<S extends StateStore>(op: Commit, disk: FakeStoreDisk, store: S, fresh: () => S): S {
  if (op.kind === 'take') disk.take(store)
  else if (op.kind === 'durable') disk.durable(store)
  else {
    disk.commit(store)
    return attached(fresh(), disk)
  }
  return store
}

describe('join buffers on disk', () => {
  type BufferOp = { kind: 'put'; key: string; ts: number } | { kind: 'evict'; limit: number } | Commit

  it('a grace buffer on disk emits what one in memory emits, in the same order, whatever it keeps in memory (property)', () => {
    const bufferOpArb: fc.Arbitrary<BufferOp> = fc.oneof(
      { weight: 6, arbitrary: fc.record({ kind: fc.constant('put' as const), key: keyArb, ts: fc.nat(30) }) },
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('evict' as const), limit: fc.nat(30) }) },
      { weight: 3, arbitrary: commitArb },
    )
    fc.assert(
      fc.property(fc.array(bufferOpArb, { maxLength: 120 }), fc.nat(4), (ops, cacheEntries) => {
        const memory = new JoinBufferStore<string, number>('b')
        const disk = new FakeStoreDisk()
        const fresh = (): JoinBufferStore<string, number> => new JoinBufferStore<string, number>('b', cacheEntries)
        let store = attached(fresh(), disk)
        let n = 0
        for (const op of ops) {
          if (op.kind === 'put') {
            const record = { key: op.key, value: n++, ts: op.ts, headers: [] }
            memory.put(op.key, record)
            store.put(op.key, record)
          } else if (op.kind === 'evict') {
            const fromMemory: number[] = []
            const fromDisk: number[] = []
            memory.evictThrough(op.limit, (r) => fromMemory.push(r.value))
            store.evictThrough(op.limit, (r) => fromDisk.push(r.value))
            assert.deepEqual(fromDisk, fromMemory)
          } else store = commitStep(op, disk, store, fresh)
          assert.equal(store.size(), memory.size())
          assert.equal(store.streamTime, memory.streamTime)
          if (disk.inFlight === 0) assert.ok(store.entriesInMemory() <= Math.max(cacheEntries, ops.length))
        }
        const rest: number[] = []
        const restInMemory: number[] = []
        store.evictThrough(Infinity, (r) => rest.push(r.value))
        memory.evictThrough(Infinity, (r) => restInMemory.push(r.value))
        assert.deepEqual(rest, restInMemory)
      }),
    )
  })

  type OuterOp = { kind: 'park'; key: string; ts: number; left: boolean } | { kind: 'unpark'; key: string; ts: number; left: boolean } | { kind: 'emit'; limit: number; stopAfter: number } | Commit

  it('an outer-join store on disk parks, unparks and emits as one in memory does, whatever it keeps in memory (property)', () => {
    const outerOpArb: fc.Arbitrary<OuterOp> = fc.oneof(
      { weight: 6, arbitrary: fc.record({ kind: fc.constant('park' as const), key: keyArb, ts: fc.nat(20), left: fc.boolean() }) },
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('unpark' as const), key: keyArb, ts: fc.nat(20), left: fc.boolean() }) },
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('emit' as const), limit: fc.nat(20), stopAfter: fc.nat(6) }) },
      { weight: 3, arbitrary: commitArb },
    )
    /** Removes the entries at or before `limit`, in order, stopping at the first later one or after `stopAfter` entries seen. */
    const emit = (store: OuterJoinStore<string>, limit: number, stopAfter: number): string[] => {
      const out: string[] = []
      let seen = 0
      store.scan((p) => {
        if (seen++ === stopAfter) return false
        // An entry past the limit is seen and kept, as an open window's is.
        const shown = `${p.ts}${p.left ? 'L' : 'R'}${p.key}:${p.values.join(',')}`
        if (p.ts > limit) {
          out.push(`kept ${shown}`)
          return true
        }
        store.remove(p)
        out.push(shown)
        return true
      })
      return out
    }
    fc.assert(
      fc.property(fc.array(outerOpArb, { maxLength: 120 }), fc.nat(4), (ops, cacheEntries) => {
        const memory = new OuterJoinStore<string>('o')
        const disk = new FakeStoreDisk()
        const fresh = (): OuterJoinStore<string> => new OuterJoinStore<string>('o', cacheEntries)
        let store = attached(fresh(), disk)
        let n = 0
        for (const op of ops) {
          if (op.kind === 'park') {
            memory.park(op.key, op.key, op.ts, op.left, n)
            store.park(op.key, op.key, op.ts, op.left, n++)
          } else if (op.kind === 'unpark') {
            memory.unpark(op.key, op.ts, op.left)
            store.unpark(op.key, op.ts, op.left)
          } else if (op.kind === 'emit') assert.deepEqual(emit(store, op.limit, op.stopAfter), emit(memory, op.limit, op.stopAfter))
          else store = commitStep(op, disk, store, fresh)
          assert.equal(store.size(), memory.size())
          if (disk.inFlight === 0) assert.ok(store.entriesInMemory() <= Math.max(cacheEntries, ops.length))
        }
        assert.deepEqual(emit(store, Infinity, Infinity), emit(memory, Infinity, Infinity))
      }),
    )
  })

  it('keeps at most cacheEntries records in memory after a durable commit, the next to leave, and restarts reading none', () => {
    const disk = new FakeStoreDisk()
    const store = attached(new JoinBufferStore<string, number>('b', 2), disk)
    for (const ts of [5, 1, 4, 2, 3]) store.put('k', { key: 'k', value: ts, ts, headers: [] })
    disk.commit(store)
    assert.equal(store.entriesInMemory(), 2)
    disk.reads = 0
    const again = attached(new JoinBufferStore<string, number>('b', 2), disk)
    assert.equal(again.streamTime, 5)
    assert.equal(again.entriesInMemory(), 0)
    const out: number[] = []
    again.evictThrough(4, (r) => out.push(r.value))
    assert.deepEqual(out, [1, 2, 3, 4])
    assert.equal(again.size(), 1)
  })
})
