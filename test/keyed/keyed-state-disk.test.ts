import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { ListStateTable, MapStateTable, ValueStateTable } from '../../src/keyed/keyed-state.js'
import type { KeyedStateDisk, StateHost } from '../../src/keyed/keyed-state.js'
import type { StoreKey } from '../../src/processor/api.js'

/** A disk that holds what commits wrote: a commit applies the changes a table took. */
class FakeDisk implements KeyedStateDisk {
  readonly data = new Map<StoreKey, unknown>()
  reads = 0
  get(key: StoreKey): unknown {
    this.reads++
    return this.data.get(key)
  }
  entries(): Iterable<[StoreKey, unknown]> {
    return [...this.data]
  }
}

function host(): StateHost & { key: StoreKey } {
  return {
    key: 'a',
    currentKey() {
      return this.key
    },
    ttlNow: () => 0,
    registerTtlTimer: () => {},
    deleteTtlTimer: () => {},
    expired: () => {},
  }
}

/** Takes a table's changes as a commit does; `durable()` then writes them to the disk and tells the table. */
function take(table: ValueStateTable<number> | MapStateTable<string, number> | ListStateTable<number>, disk: FakeDisk): { durable(): void } {
  const changes = table.takeChanged().map((k) => [k, table.snapshotKey(k)] as const)
  return {
    durable() {
      for (const [k, saved] of changes) {
        if (saved === undefined) disk.data.delete(k)
        else disk.data.set(k, saved)
      }
      table.committed()
    },
  }
}

/** A value state with change tracking, on a disk holding `entries`. */
function valueStateOnDisk(entries: ReadonlyArray<[StoreKey, number]>): { disk: FakeDisk; h: StateHost & { key: StoreKey }; table: ValueStateTable<number> } {
  const disk = new FakeDisk()
  for (const [k, v] of entries) disk.data.set(k, { v, a: 0 })
  const h = host()
  const table = new ValueStateTable<number>(0, 'v', 'value', undefined, h)
  table.trackChanges()
  table.attach(disk)
  return { disk, h, table }
}

describe('keyed state on disk (a task restored from the state directory)', () => {
  it('loads a key when it is first used, once', () => {
    const { disk, h, table } = valueStateOnDisk([['a', 1]])
    assert.equal(table.value(), 1)
    assert.equal(table.value(), 1)
    assert.equal(disk.reads, 1, 'a loaded key is read from memory')
    h.key = 'c'
    table.update(6)
    assert.equal(disk.reads, 1, 'a write without a TTL does not read the disk')
    h.key = 'b'
    assert.equal(table.value(), undefined)
    table.update(5)
    assert.equal(table.value(), 5)
    assert.deepEqual(new Map(table.snapshot()), new Map([['a', { v: 1, a: 0 }], ['b', { v: 5, a: 0 }], ['c', { v: 6, a: 0 }]]))
  })

  it('a removed key does not come back from the disk, before or after its removal is durable', () => {
    const { disk, table } = valueStateOnDisk([
      ['a', 1],
      ['b', 2],
    ])
    table.clear()
    assert.equal(table.value(), undefined, 'cleared, the disk still holds it')
    const commit = take(table, disk)
    assert.equal(table.value(), undefined, 'taken, not durable yet')
    commit.durable()
    assert.equal(table.value(), undefined, 'durable: the disk no longer holds it')
    assert.deepEqual(table.snapshot(), [['b', { v: 2, a: 0 }]], 'the snapshot has what only the disk holds, not what was removed')
  })

  it('a key removed again after a commit took its removal stays removed until the next commit is durable', () => {
    const { disk, table } = valueStateOnDisk([['a', 1]])
    table.clear()
    const first = take(table, disk)
    // Before the first commit is durable: the key comes back, the second commit writes it...
    table.update(7)
    const second = take(table, disk)
    // ...and it is removed again, for a third commit to write.
    table.clear()
    first.durable()
    second.durable()
    assert.deepEqual(disk.data.get('a'), { v: 7, a: 0 }, 'the disk holds the second commit')
    assert.equal(table.value(), undefined, 'the third removal is not on disk: the disk must not be read')
    take(table, disk).durable()
    assert.equal(disk.data.has('a'), false)
    assert.equal(table.value(), undefined)
  })

  it('map and list state load a key whole and remove it when its last entry goes', () => {
    const disk = new FakeDisk()
    disk.data.set('a', [
      ['x', { v: 1, a: 0 }],
      ['y', { v: 2, a: 0 }],
    ])
    const h = host()
    const map = new MapStateTable<string, number>(0, 'm', 'map', undefined, h)
    map.trackChanges()
    map.attach(disk)
    assert.deepEqual(map.entries(), [
      ['x', 1],
      ['y', 2],
    ])
    map.remove('x')
    map.remove('y')
    assert.equal(map.get('x'), undefined)
    assert.equal(map.isEmpty(), true, 'emptied: the disk is not read again')
    take(map, disk).durable()
    assert.equal(disk.data.has('a'), false)

    const listDisk = new FakeDisk()
    listDisk.data.set('a', [{ v: 3, a: 0 }])
    const list = new ListStateTable<number>(1, 'l', 'list', undefined, h)
    list.trackChanges()
    list.attach(listDisk)
    list.add(4)
    assert.deepEqual(list.get(), [3, 4])
    list.update([])
    assert.deepEqual(list.get(), [])
    take(list, listDisk).durable()
    assert.deepEqual(list.get(), [])
    assert.equal(listDisk.data.has('a'), false)
  })
})

type Op = { kind: 'update'; key: string; v: number } | { kind: 'read'; key: string } | { kind: 'clear'; key: string } | { kind: 'take' } | { kind: 'durable' }

const keyArb = fc.constantFrom('a', 'b', 'c', 'd', 'e')
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('update' as const), key: keyArb, v: fc.nat(99) }),
  fc.record({ kind: fc.constant('read' as const), key: keyArb }),
  fc.record({ kind: fc.constant('clear' as const), key: keyArb }),
  fc.constant({ kind: 'take' as const }),
  fc.constant({ kind: 'durable' as const }),
)

describe('keyed state on disk, bounded (cacheEntries)', () => {
  it('reads what was last written, whatever left memory, through takes and durable commits (property)', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 80 }), fc.nat(3), (ops, cacheEntries) => {
        const disk = new FakeDisk()
        const h = host()
        const table = new ValueStateTable<number>(0, 'v', 'value', undefined, h)
        table.trackChanges()
        table.attach(disk, false, cacheEntries)
        const model = new Map<string, number>()
        let inFlight: { durable(): void } | undefined
        for (const op of ops) {
          if (op.kind === 'take') inFlight ??= take(table, disk)
          else if (op.kind === 'durable') {
            inFlight?.durable()
            inFlight = undefined
          } else {
            h.key = op.key
            if (op.kind === 'update') {
              table.update(op.v)
              model.set(op.key, op.v)
            } else if (op.kind === 'clear') {
              table.clear()
              model.delete(op.key)
            } else assert.equal(table.value(), model.get(op.key))
          }
        }
        inFlight?.durable()
        assert.deepEqual(new Map(table.snapshot().map(([k, c]) => [k, (c as { v: number }).v])), model)
      }),
    )
  })

  it('keeps at most cacheEntries keys after a durable commit, and reads a key that left back from the disk', () => {
    const disk = new FakeDisk()
    const h = host()
    const table = new ValueStateTable<number>(0, 'v', 'value', undefined, h)
    table.trackChanges()
    table.attach(disk, false, 2)
    for (const [i, key] of ['a', 'b', 'c', 'd'].entries()) {
      h.key = key
      assert.equal(table.value(), undefined)
      table.update(i)
    }
    assert.equal(disk.reads, 0, 'an empty disk is not read')
    take(table, disk).durable()
    h.key = 'a'
    assert.equal(table.value(), 0)
    assert.equal(disk.reads, 1, 'a key that left memory is read back')
    assert.equal(table.value(), 0)
    assert.equal(disk.reads, 1)
  })

  it('a state restored into memory from elsewhere (changelog records) keeps every key: those are not on this disk', () => {
    const disk = new FakeDisk()
    const h = host()
    const table = new ValueStateTable<number>(0, 'v', 'value', undefined, h)
    table.restore([['a', { v: 1, a: 0 }], ['b', { v: 2, a: 0 }]])
    table.trackChanges()
    table.attach(disk, false, 0)
    h.key = 'c'
    table.update(3)
    take(table, disk).durable()
    h.key = 'a'
    assert.equal(table.value(), 1)
    assert.equal(disk.reads, 0)
  })
})

describe('keyed state on disk, bounded, with two commits in flight', () => {
  it('a key the second commit holds stays in memory when the first becomes durable', () => {
    const disk = new FakeDisk()
    const h = host()
    const table = new ValueStateTable<number>(0, 'v', 'value', undefined, h)
    table.trackChanges()
    table.attach(disk, false, 0)
    table.update(1)
    const first = take(table, disk)
    table.update(2)
    const second = take(table, disk)
    first.durable()
    assert.equal(table.value(), 2, 'not the older value the disk holds')
    second.durable()
    assert.equal(table.value(), 2)
  })
})
