import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { durableStore } from '../../src/state/stores.js'
import { FakeStoreDisk } from '../helpers/fake-store-disk.js'
import { compareStoreKeys } from '../../src/state/key-part.js'
import { persistentStore } from '../../src/state/persistent-store.js'
import { TimeWindowStore } from '../../src/windows/time-window-store.js'
import type { WindowCell } from '../../src/windows/time-window-store.js'
import { bigEndian64 } from '../../src/windows/key-id.js'

class FakeDisk extends FakeStoreDisk {}

const SIZE = 10

function onDisk(disk: FakeDisk, cacheEntries: number): TimeWindowStore<string, number> {
  const store = new TimeWindowStore<string, number>('w', SIZE, 0, cacheEntries)
  persistentStore(store)?.attach(disk)
  durableStore(store)?.trackChanges()
  return store
}

/** Adds `n` to the window at `start` of `key`, as the window aggregation does. */
function add(store: TimeWindowStore<string, number>, key: string, start: number, n: number, ts: number): void {
  const cell = store.get(start, key)
  if (cell === undefined) store.create(start, key, key, n, ts)
  else {
    store.touched(cell)
    cell.agg += n
    if (ts > cell.ts) cell.ts = ts
  }
}

const shown = (cells: ReadonlyArray<WindowCell<string, number>>): string[] => cells.map((c) => `${c.key.key}@${c.key.window.start}=${c.agg}/${c.ts}`)

type Op = { kind: 'add'; key: string; start: number; n: number } | { kind: 'expire'; t: number } | { kind: 'take' } | { kind: 'durable' } | { kind: 'restart' }

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('add' as const), key: fc.constantFrom('a', 'ab', 'b', 'b\u0000', 'c', '\u00ff'), start: fc.nat(6).map((w) => w * SIZE), n: fc.integer({ min: 1, max: 9 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('expire' as const), t: fc.nat(80) }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'take' as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'durable' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'restart' as const }) },
)

describe('TimeWindowStore on disk', () => {
  it('closes the same windows with the same cells as in memory, whatever it keeps in memory (property)', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 120 }), fc.nat(4), (ops, cacheEntries) => {
        const memory = new TimeWindowStore<string, number>('w', SIZE)
        const disk = new FakeDisk()
        let store = onDisk(disk, cacheEntries)
        const closedInMemory: string[] = []
        const closedOnDisk: string[] = []
        let ts = 0
        for (const o of ops) {
          // A window that left may start afresh (a windowed cogroup's slower stream does that).
          if (o.kind === 'add') {
            ts++
            add(memory, o.key, o.start, o.n, ts)
            add(store, o.key, o.start, o.n, ts)
          } else if (o.kind === 'expire') {
            memory.expire(o.t, (cells) => closedInMemory.push(...shown(cells)))
            store.expire(o.t, (cells) => closedOnDisk.push(...shown(cells)))
          } else if (o.kind === 'take') disk.take(store)
          else if (o.kind === 'durable') disk.durable(store)
          else {
            // A restart: what was not committed is lost on disk; the in-memory twin goes back the same way.
            disk.commit(store)
            store = onDisk(disk, cacheEntries)
          }
          assert.deepEqual(closedOnDisk, closedInMemory)
          assert.deepEqual(shown(store.allCells()), shown(memory.allCells()))
          assert.deepEqual(store.windowStarts(), memory.windowStarts())
        }
      }),
    )
  })

  it('keeps at most cacheEntries cells in memory after a durable commit, and reads the others back from disk', () => {
    const disk = new FakeDisk()
    const store = onDisk(disk, 2)
    for (const key of ['a', 'b', 'c', 'd', 'e']) add(store, key, 0, 1, 1)
    disk.commit(store)
    const resident = [...(store as unknown as { windows: Map<number, Map<string, unknown>> }).windows.get(0)?.keys() ?? []]
    assert.equal(resident.length, 2)
    disk.reads = 0
    for (const key of ['a', 'b', 'c', 'd', 'e']) add(store, key, 0, 1, 2)
    assert.equal(disk.reads, 3, 'the three cells that left memory are read back')
    let closed: string[] = []
    store.expire(SIZE, (cells) => (closed = shown(cells)))
    assert.deepEqual(closed, ['a@0=2/2', 'b@0=2/2', 'c@0=2/2', 'd@0=2/2', 'e@0=2/2'])
    disk.commit(store)
    assert.deepEqual([...disk.entriesByKey.keys()].filter((k) => typeof k === 'string'), [], 'a closed window leaves the disk')
  })

  it('keeps cells under start-first keys, and a restart reads its fields and window starts without the cells', () => {
    const disk = new FakeDisk()
    const store = onDisk(disk, 10)
    store.streamTime = 25
    add(store, 'k', 20, 1, 25)
    add(store, 'k', 10, 1, 15)
    disk.commit(store)
    const keys = [...disk.entriesByKey.keys()].filter((k) => typeof k === 'string').sort(compareStoreKeys)
    assert.deepEqual(keys, [bigEndian64(10) + 'k' + bigEndian64(10), bigEndian64(20) + 'k' + bigEndian64(20)])
    disk.reads = 0
    const again = onDisk(disk, 10)
    assert.equal(again.streamTime, 25)
    assert.deepEqual(again.windowStarts(), [10, 20])
    assert.equal(disk.reads, 5, "the store's five fields, no cell")
    assert.equal(again.get(20, 'k')?.agg, 1)
  })

  it('refuses a disk whose cells are under keys of another layout, naming the store', () => {
    const disk = new FakeDisk()
    disk.entriesByKey.set('k' + bigEndian64(10), { key: 'k', id: 'k', start: 10, agg: 1, ts: 10 })
    assert.throws(() => onDisk(disk, 10), /window store "w" holds a cell under a key of another layout/)
  })
})

describe('TimeWindowStore changes', () => {
  for (const where of ['in memory', 'on disk']) {
    it(`${where}: a cell written, removed and started afresh before the next commit is one change, its last value (a commit may write its entries in any order)`, () => {
      const store = new TimeWindowStore<string, { n: number }>('w', SIZE)
      if (where === 'on disk') persistentStore(store)?.attach(new FakeDisk())
      durableStore(store)?.trackChanges()
      store.create(0, 'a', 'a', { n: 1 }, 5)
      assert.equal(durableStore(store)?.takeChanges().length, 1)
      // The window closes, then a cogroup's slower input starts it again.
      store.expire(SIZE)
      store.create(0, 'a', 'a', { n: 2 }, 6)
      const changes = durableStore(store)?.takeChanges() ?? []
      const cells = changes.filter(([k]) => typeof k === 'string')
      assert.equal(cells.length, 1, 'one change for the cell')
      assert.deepEqual((cells[0]?.[1] as { agg: { n: number } }).agg, { n: 2 })
    })
  }
})

describe('TimeWindowStore with a retention', () => {
  it('a window started afresh behind the close time counts as closed, as after a restore', () => {
    const store = new TimeWindowStore<string, number>('w', 10, 10)
    durableStore(store)?.trackChanges()
    store.expire(10)
    store.create(0, 'a', 'a', 1, 5)
    const restored = new TimeWindowStore<string, number>('w', 10, 10)
    durableStore(restored)?.restore(durableStore(store)?.entries() ?? [])
    assert.equal(store.openCells().length, 0)
    assert.equal(restored.openCells().length, 0)
  })
})
