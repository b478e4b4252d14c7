import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { ShardedMap } from '../../src/util/sharded-map.js'
import type { ShardableKey } from '../../src/util/sharded-map.js'

/** Past the split (65,536 entries): the map is in shards for what follows. */
function splitMap(): { map: ShardedMap<ShardableKey, number>; model: Map<ShardableKey, number> } {
  const map = new ShardedMap<ShardableKey, number>()
  const model = new Map<ShardableKey, number>()
  for (let i = 0; i < 70_000; i++) {
    const k = i % 2 === 0 ? `key-${i}` : i
    map.set(k, i)
    model.set(k, i)
  }
  return { map, model }
}

function assertSame(map: ShardedMap<ShardableKey, number>, model: Map<ShardableKey, number>): void {
  assert.equal(map.size, model.size)
  const seen = new Map(map)
  assert.equal(seen.size, model.size, 'iteration visits each entry once')
  for (const [k, v] of model) assert.equal(seen.get(k), v, `entry ${String(k)}`)
  assert.deepEqual(new Set(map.keys()), new Set(model.keys()))
}

const keyArb = fc.oneof(fc.string({ maxLength: 12 }), fc.integer(), fc.double(), fc.bigInt(), fc.boolean())

describe('ShardedMap', () => {
  it('keeps every entry through the split', () => {
    const { map, model } = splitMap()
    assertSame(map, model)
    for (let i = 0; i < 70_000; i += 3) {
      const k = i % 2 === 0 ? `key-${i}` : i
      assert.equal(map.delete(k), model.delete(k))
    }
    assertSame(map, model)
    map.clear()
    assert.equal(map.size, 0)
    assert.equal(map.get('key-0'), undefined)
  })

  it('behaves as a Map for any keys, before and after the split', () => {
    const { map: big, model: bigModel } = splitMap()
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom('set', 'delete', 'get', 'has'), keyArb, fc.integer()), { maxLength: 200 }), (ops) => {
        for (const [map, model] of [[new ShardedMap<ShardableKey, number>(), new Map<ShardableKey, number>()], [big, bigModel]] as const) {
          for (const [op, k, v] of ops) {
            if (op === 'set') {
              map.set(k, v)
              model.set(k, v)
            } else if (op === 'delete') assert.equal(map.delete(k), model.delete(k))
            else if (op === 'get') assert.equal(map.get(k), model.get(k))
            else assert.equal(map.has(k), model.has(k))
          }
          assert.equal(map.size, model.size)
        }
      }),
      { numRuns: 200 },
    )
    assertSame(big, bigModel)
  })
})
