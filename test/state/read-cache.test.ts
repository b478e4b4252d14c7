import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { ReadCache } from '../../src/state/read-cache.js'

describe('ReadCache: the bounded cache of a persistent store', () => {
  it('never holds more than its capacity, and never answers a value other than the last one set (property)', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), key: fc.integer({ min: 0, max: 30 }), value: fc.integer() }),
      fc.record({ kind: fc.constant('delete' as const), key: fc.integer({ min: 0, max: 30 }) }),
    )
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 8 }), fc.array(op, { maxLength: 200 }), (capacity, ops) => {
        const cache = new ReadCache<number, number>(capacity)
        const model = new Map<number, number>()
        for (const o of ops) {
          if (o.kind === 'set') {
            cache.set(o.key, o.value)
            model.set(o.key, o.value)
            if (capacity > 0) assert.equal(cache.get(o.key), o.value, 'the key just set is held')
          } else {
            cache.delete(o.key)
            model.delete(o.key)
          }
          assert.ok(cache.size <= capacity)
          for (let k = 0; k <= 30; k++) {
            const held = cache.get(k)
            if (held !== undefined) assert.equal(held, model.get(k), `key ${k}: a cached value is the last one set`)
          }
        }
      }),
    )
  })

  it('keeps the last `capacity` keys of distinct inserts (first in, first out)', () => {
    const cache = new ReadCache<string, number>(3)
    for (let i = 0; i < 10; i++) cache.set(`k${i}`, i)
    assert.deepEqual(
      Array.from({ length: 10 }, (_, i) => cache.get(`k${i}`)),
      [undefined, undefined, undefined, undefined, undefined, undefined, undefined, 7, 8, 9],
    )
    cache.set('k8', 80)
    assert.equal(cache.get('k8'), 80, 'setting a held key replaces its value in place')
    assert.equal(cache.size, 3)
    cache.clear()
    assert.equal(cache.size, 0)
  })
})
