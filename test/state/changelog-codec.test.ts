import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { Serdes, Stores, Topology } from '../../src/index.js'
import { decodeStoreKey, encodeStoreKey, packValue, unpackValue } from '../../src/state/changelog-codec.js'
import { ChangelogRestorer, decodeTimer, TaskChangelogCodec, TASK_STORE, TIMER_STORE } from '../../src/runtime/changelog-records.js'
import type { TaskCheckpoint } from '../../src/processor/internal/task-config.js'

describe('changelog records', () => {
  it('store keys round-trip and keys of different types never collide', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.double(), fc.bigInt(), fc.boolean()), (key) => {
        const back = decodeStoreKey(encodeStoreKey(key))
        assert.ok(Object.is(back, key), `${String(key)} came back as ${String(back)}`)
      }),
    )
    const ids = [5, 5n, '5', true, 'true'].map((k) => Buffer.from(encodeStoreKey(k)).toString('hex'))
    assert.equal(new Set(ids).size, ids.length)
  })

  it('values without a serde keep plain data, bigints and bytes', () => {
    const value = { a: [1, 'x', null, undefined], n: 12345678901234567890n, b: Buffer.from('hi'), s: new Set([1]) }
    assert.deepEqual(unpackValue(packValue(value)), value)
  })

  it('a store with serdes writes its changelog with them', () => {
    const builder = Stores.inMemoryKeyValueStore<string, number>('totals', { keySerde: Serdes.String(), valueSerde: Serdes.Long() })
    const codec = new TaskChangelogCodec([builder])
    const records = codec.commitRecords(undefined, { streamTime: undefined, lastFires: {}, positions: {} }, undefined, new Map([['totals', [['a', 7], ['b', undefined]] as Array<[string, unknown]>]]))
    assert.deepEqual(
      records.map((r) => [r.store, Buffer.from(r.key).toString(), r.value === null ? null : Buffer.from(r.value).toString('hex')]),
      [
        ['totals', 'a', '0000000000000007'],
        ['totals', 'b', null],
      ],
    )
  })

  it('a checkpoint survives records and back; the last value per key wins and a tombstone deletes', () => {
    const codec = new TaskChangelogCodec([Stores.inMemoryKeyValueStore('kv')])
    const checkpoint: TaskCheckpoint = {
      streamTime: 42,
      lastFires: { 'p#0': 40 },
      positions: { 'in:0': 9 },
      keyed: {
        timers: [
          { kind: 'user', domain: 'event', timestamp: 50, seq: 2, owner: 'k', key: 'a' },
          { kind: 'ttl', domain: 'processing', timestamp: 50, seq: 1, owner: 'k/s', key: 3n },
        ],
        states: { 'k/s': { kind: 'value', entries: [[3n, { v: 'x', a: 10 }]] } },
      },
      stores: { kv: [['a', { n: 1 }]] },
    }
    const records = codec.checkpointRecords(checkpoint)
    const restored = new ChangelogRestorer(codec).applyAll(records).checkpoint()
    assert.deepEqual(restored, { ...checkpoint, keyed: { ...checkpoint.keyed!, timers: [checkpoint.keyed!.timers[1], checkpoint.keyed!.timers[0]] } })
    const later = codec.commitRecords(checkpoint, { streamTime: 60, lastFires: { 'p#0': 40 }, positions: { 'in:0': 12 } }, { states: [{ state: 'k/s', kind: 'value', key: 3n, entries: undefined }], timers: [{ added: false, record: checkpoint.keyed!.timers[0]! }] }, new Map([['kv', [['a', undefined], ['b', 2]] as Array<[string, unknown]>]]))
    assert.deepEqual(
      later.map((r) => r.store),
      [TASK_STORE, TASK_STORE, 'punctual.state.k/s', TIMER_STORE, 'kv', 'kv'],
      'only what changed: stream time and one position, not the unchanged last fire time',
    )
    const restorer = new ChangelogRestorer(codec).applyAll(records).applyAll(later)
    assert.equal(restorer.applied, records.length + later.length)
    assert.deepEqual(restorer.checkpoint(), {
      streamTime: 60,
      lastFires: { 'p#0': 40 },
      positions: { 'in:0': 12 },
      keyed: { timers: [checkpoint.keyed!.timers[1]], states: {} },
      stores: { kv: [['b', 2]] },
    })
  })

  it('a timer record round-trips any owner, key, timestamp and sequence, and malformed bytes are refused', () => {
    fc.assert(
      fc.property(
        fc.record({
          kind: fc.constantFrom<'user' | 'ttl'>('user', 'ttl'),
          domain: fc.constantFrom<'event' | 'processing'>('event', 'processing'),
          owner: fc.string({ unit: 'grapheme', maxLength: 12 }),
          key: fc.oneof(fc.string({ unit: 'grapheme' }), fc.double({ noNaN: true }), fc.bigInt(), fc.boolean()),
          timestamp: fc.integer({ min: -1, max: Number.MAX_SAFE_INTEGER }),
          seq: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
        }),
        (timer) => {
          const [record] = new TaskChangelogCodec([]).commitRecords(undefined, { streamTime: undefined, lastFires: {}, positions: {} }, { states: [], timers: [{ added: true, record: timer }] }, new Map())
          assert.deepEqual(decodeTimer(record!), { ...timer })
        },
      ),
    )
    const good = new TaskChangelogCodec([]).checkpointRecords({ streamTime: undefined, lastFires: {}, positions: {}, keyed: { timers: [{ kind: 'user', domain: 'event', owner: 'p', key: 'k', timestamp: 5, seq: 1 }], states: {} } })
    const timer = good.find((r) => r.store === TIMER_STORE)!
    for (const bad of [{ ...timer, key: Buffer.from([9]) }, { ...timer, key: (timer.key as Buffer).subarray(0, 12) }, { ...timer, value: Buffer.from([1]) }]) {
      assert.throws(() => new ChangelogRestorer(new TaskChangelogCodec([])).apply(bad), /changelog of punctual\.timers: a timer record is malformed/)
    }
  })

  it('refuses a store name that starts with punctual. (the changelog reserves it)', () => {
    assert.throws(() => new Topology().addSource('s', 'in').addProcessor('p', () => ({ process() {} }), 's').addStateStore(Stores.inMemoryKeyValueStore('punctual.task'), 'p'), /does not start with "punctual\." \(reserved\), got "punctual\.task"/)
  })

  it('refuses a store serde that is not a serde, naming the store', () => {
    assert.throws(() => Stores.persistentKeyValueStore('s', { valueSerde: 'json' as never }), /store "s": valueSerde must be a Serde/)
  })
})
