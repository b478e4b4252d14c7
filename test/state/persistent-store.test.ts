import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { EmbeddedRuntime, silentLogger, Stores, StreamsBuilder, TimeWindows, Topology } from '../../src/index.js'
import type { KeyValueStore, ReadOnlyKeyValueStore, StoreKey } from '../../src/index.js'
import { DURABLE } from '../../src/state/durable.js'
import { compareStoreKeys } from '../../src/state/key-part.js'
import { PERSISTENT, PersistentKeyValueStore } from '../../src/state/persistent-store.js'
import type { StoreDisk } from '../../src/state/persistent-store.js'

/** A disk made of a Map, to which a "commit" applies the store's changes. */
function mapDisk(): { disk: StoreDisk; map: Map<StoreKey, unknown>; reads: () => number } {
  const map = new Map<StoreKey, unknown>()
  let reads = 0
  return {
    map,
    reads: () => reads,
    disk: {
      get: (k) => {
        reads++
        return map.get(k)
      },
      entries: (from) => [...map].filter(([k]) => from === undefined || compareStoreKeys(k, from) >= 0).sort((a, b) => compareStoreKeys(a[0], b[0])),
      count: () => map.size,
    },
  }
}

const key = fc.oneof(fc.integer({ min: -3, max: 3 }), fc.constantFrom('a', 'b', 'é', '𝄞', 'z'))
const op = fc.oneof(
  fc.record({ op: fc.constant('put' as const), key, value: fc.nat(99) }),
  fc.record({ op: fc.constant('delete' as const), key }),
  fc.record({ op: fc.constant('get' as const), key }),
  fc.constant({ op: 'all' as const }),
  fc.record({ op: fc.constant('range' as const), from: key, to: key }),
  fc.constant({ op: 'commit' as const }),
  fc.constant({ op: 'durable' as const }),
)

/** The model's entries from `from` to `to`, both included, in the stores' key order. */
function modelRange(model: ReadonlyMap<StoreKey, number>, from: StoreKey, to: StoreKey): Array<[StoreKey, number]> {
  return [...model].filter(([k]) => compareStoreKeys(k, from) >= 0 && compareStoreKeys(k, to) <= 0).sort((a, b) => compareStoreKeys(a[0], b[0]))
}

type StoreOp = typeof op extends fc.Arbitrary<infer O> ? O : never

/** Applies a read or write to the store and to the model, asserting that the store answers as the model does. */
function applyToBoth(store: KeyValueStore<StoreKey, number>, model: Map<StoreKey, number>, o: Exclude<StoreOp, { op: 'commit' | 'durable' }>): void {
  if (o.op === 'put') {
    store.put(o.key, o.value)
    model.set(o.key, o.value)
  } else if (o.op === 'delete') {
    assert.equal(store.delete(o.key), model.get(o.key))
    model.delete(o.key)
  } else if (o.op === 'get') assert.equal(store.get(o.key), model.get(o.key))
  else if (o.op === 'all') assert.deepEqual([...store.all()], [...model].sort((a, b) => compareStoreKeys(a[0], b[0])))
  else assert.deepEqual([...store.range(o.from, o.to)], modelRange(model, o.from, o.to), `range(${String(o.from)}, ${String(o.to)})`)
}

describe('in-memory key-value store', () => {
  it('reads, writes, deletes, iterates and ranges like a sorted map (property)', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 80 }), (ops) => {
        const store: KeyValueStore<StoreKey, number> = Stores.inMemoryKeyValueStore<StoreKey, number>('s').build()
        const model = new Map<StoreKey, number>()
        for (const o of ops) if (o.op !== 'commit' && o.op !== 'durable') applyToBoth(store, model, o)
      }),
    )
  })

  it('is a ReadOnlyKeyValueStore: a processor can hand its store to code that only reads', () => {
    const store = Stores.inMemoryKeyValueStore<string, number>('s').build()
    store.put('b', 2)
    store.put('a', 1)
    const reader: ReadOnlyKeyValueStore<string, number> = store
    assert.deepEqual([...reader.all()], [['a', 1], ['b', 2]])
    assert.deepEqual([...reader.range('b', 'z')], [['b', 2]])
    assert.equal(reader.get('c'), undefined)
  })
})

describe('persistent key-value store', () => {
  it('reads, writes, deletes and iterates like a map, across commits, with a tiny cache (property)', () => {
    // A commit takes the changes; they reach the disk later, when it is durable (lmdb writes off the
    // main thread): in between, reads must see them, and the disk must not be read for them.
    fc.assert(
      fc.property(fc.array(op, { maxLength: 80 }), fc.nat(3), (ops, cache) => {
        const { disk, map } = mapDisk()
        const store = new PersistentKeyValueStore<StoreKey, number>('s', cache)
        store[PERSISTENT].attach(disk)
        store[DURABLE].trackChanges()
        const model = new Map<StoreKey, number>()
        let taken: Array<[StoreKey, unknown]> | undefined
        const durable = (): void => {
          if (taken === undefined) return
          for (const [k, v] of taken) {
            if (v === undefined) map.delete(k)
            else map.set(k, v)
          }
          taken = undefined
          store[DURABLE].committed!()
        }
        for (const o of ops) {
          if (o.op !== 'commit' && o.op !== 'durable') applyToBoth(store, model, o)
          else if (o.op === 'commit') {
            durable() // one commit in flight at a time
            taken = store[DURABLE].takeChanges()
          } else durable()
        }
        durable()
        store[DURABLE].takeChanges().forEach(([k, v]) => (v === undefined ? map.delete(k) : map.set(k, v)))
        assert.deepEqual(new Map([...map].sort((a, b) => compareStoreKeys(a[0], b[0]))), new Map([...model].sort((a, b) => compareStoreKeys(a[0], b[0]))), 'the disk holds the model after the last commit')
      }),
      { numRuns: 1000 },
    )
  })

  it('in a durable run, its entries stay on disk: a restart reads only what it needs', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'punctual-persistent-')), 'state')
    let store: KeyValueStore<string, number> | undefined
    const topology = () =>
      new Topology()
        .addSource('in', 'in')
        .addProcessor<string, string>(
          'count',
          () => ({
            init(c) {
              store = c.getStateStore<KeyValueStore<string, number>>('counts')
            },
            process(r) {
              if (r.value === 'forget') store!.delete(r.key)
              else store!.put(r.key, (store!.get(r.key) ?? 0) + 1)
            },
          }),
          'in',
        )
        .addStateStore(Stores.persistentKeyValueStore<string, number>('counts', { cacheEntries: 10 }), 'count')
    const a = new EmbeddedRuntime(topology(), { applicationId: 'pkv', stateDir: dir, logger: silentLogger })
    await a.start()
    for (let i = 0; i < 5000; i++) a.producer('in').send(`k${i % 1000}`, 'v', i)
    a.producer('in').send('k7', 'forget', 5000)
    await a.stop()

    const b = new EmbeddedRuntime(topology(), { applicationId: 'pkv', stateDir: dir, logger: silentLogger })
    await b.start()
    assert.equal(store!.approximateNumEntries(), 999)
    assert.equal(store!.get('k3'), 5)
    assert.equal(store!.get('k7'), undefined)
    b.producer('in').send('k3', 'v', 6000)
    b.producer('in').send('new', 'v', 6001)
    await b.stop()
    const c = new EmbeddedRuntime(topology(), { applicationId: 'pkv', stateDir: dir, logger: silentLogger })
    await c.start()
    // Counting first: the count must leave the range it counts usable for iterating.
    assert.equal(store!.approximateNumEntries(), 1000)
    const all = [...store!.all()]
    assert.equal(all.length, 1000)
    assert.deepEqual(all.slice(0, 2), [
      ['k0', 5],
      ['k1', 5],
    ])
    assert.equal(store!.get('k3'), 6)
    assert.equal(store!.get('new'), 1)
    // A range reads the disk from its first key on, and ends at its last.
    assert.deepEqual([...store!.range('k997', 'k999')], [
      ['k997', 5],
      ['k998', 5],
      ['k999', 5],
    ])
    assert.deepEqual([...store!.range('k69', 'k7')], [
      ['k69', 5],
      ['k690', 5],
      ['k691', 5],
      ['k692', 5],
      ['k693', 5],
      ['k694', 5],
      ['k695', 5],
      ['k696', 5],
      ['k697', 5],
      ['k698', 5],
      ['k699', 5],
    ], 'k7 itself was deleted')
    c.producer('in').send('k6999', 'v', 6002)
    await c.idle()
    assert.deepEqual([...store!.range('k699', 'k6999z')], [['k699', 5], ['k6999', 1]], 'a change not yet committed is in the range')
    await c.stop()
  })
})

describe('DSL aggregations choose their store type (Materialized storeType)', () => {
  for (const storeType of ['persistent', 'inMemory', undefined] as const) {
    it(`${storeType ?? 'default (persistent)'}: a count continues across a restart with the same state directory`, async () => {
      const dir = join(mkdtempSync(join(tmpdir(), 'punctual-dsl-store-')), 'state')
      const counts: string[] = []
      const topology = () => {
        const b = new StreamsBuilder()
        b.stream('in')
          .groupByKey()
          .count(storeType === undefined ? {} : { storeType })
          .toStream()
          .addStatelessNode(undefined, 'OUT', (r) => counts.push(`${r.key}=${r.value}`))
        return b.build()
      }
      for (const keys of [['a', 'b', 'a'], ['a', 'c', 'b']]) {
        const rt = new EmbeddedRuntime(topology(), { applicationId: 'dsl-store', stateDir: dir, logger: silentLogger })
        await rt.start()
        for (const k of keys) rt.producer('in').send(k, 'v', 1)
        await rt.stop()
      }
      assert.deepEqual(counts, ['a=1', 'b=1', 'a=2', 'a=3', 'c=1', 'b=2'])
    })
  }

  it('a time-windowed aggregation is on disk unless its Materialized says inMemory, and refuses a bad store type or cache, naming it', () => {
    const persistent = (materialized: object): boolean | undefined => {
      const b = new StreamsBuilder()
      b.stream('in').groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(10)).count({ name: 'w', ...materialized })
      return b.build().subtopologies()[0]?.stores.find((s) => s.name === 'w')?.persistent
    }
    assert.equal(persistent({}), true)
    assert.equal(persistent({ storeType: 'inMemory' }), false)
    assert.throws(() => persistent({ storeType: 'rocksdb' }), /aggregation "w": storeType must be 'persistent' or 'inMemory', got "rocksdb"/)
    assert.throws(() => persistent({ cacheEntries: -1 }), /aggregation "w": cacheEntries must be an integer >= 0, got -1/)
  })

  it('refuses an unknown store type, naming the aggregation', () => {
    const b = new StreamsBuilder()
    assert.throws(() => b.stream('in').groupByKey().count({ name: 'counts', storeType: 'rocksdb' as never }), /aggregation "counts": storeType must be 'persistent' or 'inMemory', got "rocksdb"/)
  })
})
