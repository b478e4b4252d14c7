import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import type { StoreKey } from '../../src/index.js'
import { ChangeLog, LoggedField } from '../../src/state/change-log.js'

/** The smallest store a change log can serve: a map of strings, plus one field, as a new store type would be written. */
class TinyStore {
  readonly map = new Map<string, number>()
  readonly time = new LoggedField(-1, -1)
  readonly log = new ChangeLog<string>(
    {
      saved: (k) => this.map.get(k),
      savedEntries: () => this.map,
      load: (k, v) => this.put(k, v as number),
    },
    [this.time] as Array<LoggedField<unknown>>,
  )

  put(k: string, v: number): void {
    const c = this.log.changes
    if (c !== undefined && !c.has(k)) c.first(k, this.map.has(k))
    this.map.set(k, v)
  }

  delete(k: string): void {
    const c = this.log.changes
    if (c !== undefined && !c.has(k)) c.first(k, this.map.has(k))
    this.map.delete(k)
  }
}

/** A changelog table: the last value per key, tombstones delete. */
function apply(table: Map<StoreKey, unknown>, records: Array<[StoreKey, unknown]>): void {
  for (const [k, v] of records) {
    if (v === undefined) table.delete(k)
    else table.set(k, v)
  }
}

const op = fc.oneof(
  fc.record({ op: fc.constant('put' as const), key: fc.constantFrom('a', 'b', 'c', 'd'), value: fc.nat(9) }),
  fc.record({ op: fc.constant('delete' as const), key: fc.constantFrom('a', 'b', 'c', 'd') }),
  fc.record({ op: fc.constant('time' as const), value: fc.nat(99) }),
  fc.constant({ op: 'commit' as const }),
)

describe('change log', () => {
  it('its records rebuild the store, and write only what the previous commit does not hold (property)', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const store = new TinyStore()
        store.log.trackChanges()
        const table = new Map<StoreKey, unknown>()
        const commit = (): void => {
          const records = store.log.takeChanges()
          for (const [k, v] of records) {
            // A tombstone only for a key the table holds.
            if (v === undefined && k !== -1) assert.ok(table.has(k), `tombstone for ${String(k)}, which no commit wrote`)
          }
          apply(table, records)
          // A field never set has no record: a restore leaves it at its initial value.
          const snapshot = new Map(store.log.entries())
          if (!table.has(-1)) assert.equal(snapshot.get(-1), -1)
          if (!table.has(-1)) snapshot.delete(-1)
          assert.deepEqual(snapshot, table)
        }
        for (const o of ops) {
          if (o.op === 'put') store.put(o.key, o.value)
          else if (o.op === 'delete') store.delete(o.key)
          else if (o.op === 'time') store.time.value = o.value
          else commit()
        }
        commit()
        const rebuilt = new TinyStore()
        rebuilt.log.restore([...table])
        assert.deepEqual(rebuilt.map, store.map)
        assert.equal(rebuilt.time.value, store.time.value)
      }),
    )
  })

  it('writes nothing for a key created and removed between two commits, and nothing for a restore', () => {
    const store = new TinyStore()
    store.log.trackChanges()
    store.log.restore([['a', 1], [-1, 7]])
    assert.deepEqual(store.log.takeChanges(), [])
    assert.equal(store.time.value, 7)
    store.put('b', 2)
    store.delete('b')
    store.delete('a')
    assert.deepEqual(store.log.takeChanges(), [['a', undefined]])
  })

  it('a field whose saved form is undefined is a tombstone, and absent from a snapshot', () => {
    const flag = new LoggedField(-2, false, (on) => (on ? true : undefined), (saved) => saved === true)
    const log = new ChangeLog<string>({ saved: () => undefined, savedEntries: () => [], load: () => {} }, [flag] as Array<LoggedField<unknown>>)
    log.trackChanges()
    flag.value = true
    assert.deepEqual(log.takeChanges(), [[-2, true]])
    assert.deepEqual(log.entries(), [[-2, true]])
    flag.value = false
    assert.deepEqual(log.takeChanges(), [[-2, undefined]])
    assert.deepEqual(log.entries(), [])
    assert.deepEqual(log.takeChanges(), [])
  })
})
