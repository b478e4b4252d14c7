import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { freshStateDir } from '../helpers/durable.js'
import {
  EmbeddedRuntime,
  JoinWindows,
  QueryableStoreTypes,
  Serdes,
  SessionWindows,
  SlidingWindows,
  silentLogger,
  Stores,
  StreamsBuilder,
  TimeWindows,
} from '../../src/index.js'
import type { Processor, ProcessorContext, KeyValueStore, PunctualError, StreamRecord, Topology } from '../../src/index.js'
import { TopologyTestDriver } from '../../src/testing/index.js'
import { queryableStore } from '../../src/query/queryable-stores.js'
import { partitionForStringKey } from '../../src/processor/murmur2.js'
import type { StateStore } from '../../src/processor/api.js'

const str = { keySerde: Serdes.String(), valueSerde: Serdes.String() }

/** in -> count per key ('counts'), 10 ms tumbling windows ('windows'), sessions with a 5 ms gap ('sessions'), 10 ms sliding windows ('sliding'). */
function aggregations(): Topology {
  const b = new StreamsBuilder()
  const grouped = b.stream<string, string>('in', str).groupByKey()
  grouped.count({ name: 'counts' })
  grouped.windowedBy(TimeWindows.ofSizeAndGrace(10, 100)).count({ name: 'windows' })
  grouped.windowedBy(SessionWindows.ofInactivityGapAndGrace(5, 100)).count({ name: 'sessions' })
  grouped.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(10, 100)).count({ name: 'sliding' })
  return b.build()
}

describe('interactive queries', () => {
  it('read an aggregation by key: get, range and all in serialized-key order, and the entry count', () => {
    const d = new TopologyTestDriver(aggregations())
    const input = d.createInputTopic('in', Serdes.String(), Serdes.String())
    for (const [k, ts] of [['b', 1], ['a', 2], ['c', 3], ['b', 4], ['b', 5], ['d', 6]] as const) input.pipeInput(k, 'x', ts)
    const counts = d.store('counts', QueryableStoreTypes.keyValueStore<string, number>())
    assert.equal(counts.get('b'), 3)
    assert.equal(counts.get('a'), 1)
    assert.equal(counts.get('z'), undefined)
    assert.deepEqual([...counts.all()], [['a', 1], ['b', 3], ['c', 1], ['d', 1]])
    assert.deepEqual([...counts.range('b', 'c')], [['b', 3], ['c', 1]])
    assert.equal(counts.approximateNumEntries(), 4)
    // The view follows the store: a later record shows at the next call.
    input.pipeInput('a', 'x', 7)
    assert.equal(counts.get('a'), 2)
    d.close()
  })

  it('read windowed aggregations: a window by start, a key’s windows over a time range, every window', () => {
    const d = new TopologyTestDriver(aggregations())
    const input = d.createInputTopic('in', Serdes.String(), Serdes.String())
    for (const [k, ts] of [['a', 1], ['a', 12], ['b', 13], ['a', 14], ['a', 25]] as const) input.pipeInput(k, 'x', ts)
    const windows = d.store('windows', QueryableStoreTypes.windowStore<string, number>())
    assert.equal(windows.fetch('a', 10), 2)
    assert.equal(windows.fetch('a', 11), undefined)
    assert.deepEqual([...windows.fetch('a', 0, 19)], [[0, 1], [10, 2]])
    assert.deepEqual([...windows.fetch('a', 10, 20)], [[10, 2], [20, 1]], 'both ends included')
    assert.deepEqual([...windows.fetch('a', 0, 30)], [[0, 1], [10, 2], [20, 1]])
    assert.deepEqual(
      [...windows.fetchAll(10, 10)].map(([w, n]) => `${w.key}@${w.window.start}-${w.window.end}=${n}`),
      ['a@10-20=2', 'b@10-20=1'],
    )
    assert.equal([...windows.all()].length, 4)

    const sessions = d.store('sessions', QueryableStoreTypes.sessionStore<string, number>())
    // a: 1 alone, then 12 and 14 within the 5 ms gap, then 25.
    assert.deepEqual([...sessions.fetch('a')].map(([w, n]) => `${w.window.start}-${w.window.end}=${n}`), ['1-1=1', '12-14=2', '25-25=1'])
    assert.deepEqual([...sessions.findSessions('a', 13, 20)].map(([w]) => w.window.start), [12])
    assert.deepEqual([...sessions.fetch('nobody')], [])

    const sliding = d.store('sliding', QueryableStoreTypes.windowStore<string, number>())
    // b's only record at 13 makes its left window [3, 13].
    assert.deepEqual([...sliding.fetch('b', 0, 100)], [[3, 1]])
    assert.ok([...sliding.all()].length > 0)
    d.close()
  })

  it('read a table with a named store, a versioned table as of a time, and a store of your own', () => {
    const b = new StreamsBuilder()
    b.table<string, string>('cities', str, { name: 'cities' })
    b.table<string, string>('levels', str, { historyRetentionMs: 1000, name: 'levels' })
    b.addStateStore(Stores.inMemoryKeyValueStore<string, number>('lengths'))
    b.stream<string, string>('words', str).process(
      (): Processor<string, string> => {
        let lengths: KeyValueStore<string, number>
        return {
          init: (ctx: ProcessorContext) => void (lengths = ctx.getStateStore('lengths')),
          process: (r: StreamRecord<string, string>) => lengths.put(r.value, r.value.length),
        }
      },
      'lengths',
    )
    const d = new TopologyTestDriver(b.build())
    d.createInputTopic('cities', Serdes.String(), Serdes.String()).pipeInput('SEA', 'Seattle', 1)
    const levels = d.createInputTopic('levels', Serdes.String(), Serdes.String())
    levels.pipeInput('SEA', 'low', 10)
    levels.pipeInput('SEA', 'high', 20)
    d.createInputTopic('words', Serdes.String(), Serdes.String()).pipeInput('k', 'punctual', 1)

    assert.equal(d.store('cities', QueryableStoreTypes.keyValueStore<string, string>()).get('SEA'), 'Seattle')
    const versions = d.store('levels', QueryableStoreTypes.versionedKeyValueStore<string, string>())
    assert.deepEqual(versions.get('SEA'), { value: 'high', timestamp: 20 })
    assert.deepEqual(versions.get('SEA', 15), { value: 'low', timestamp: 10, validTo: 20 })
    assert.equal(versions.get('SEA', 5), undefined)
    assert.deepEqual([...d.store('lengths', QueryableStoreTypes.keyValueStore<string, number>()).all()], [['punctual', 8]])
    d.close()
  })

  it('refuse an unknown store (listing the stores), the wrong type, and a store that cannot be queried', () => {
    const b = new StreamsBuilder()
    const left = b.stream<string, string>('left', str)
    left.join(b.stream<string, string>('right', str), (l, r) => l + r, JoinWindows.ofTimeDifferenceWithNoGrace(10), { storeName: 'pairs' }).to('out', str)
    left.groupByKey().count({ name: 'counts' })
    const d = new TopologyTestDriver(b.build())
    assert.throws(() => d.store('count', QueryableStoreTypes.keyValueStore()), /no store named "count" in this topology \(its stores: .*counts/)
    assert.throws(() => d.store('counts', QueryableStoreTypes.windowStore()), /store "counts" is a keyValue store; query it with QueryableStoreTypes.keyValueStore\(\), not QueryableStoreTypes.windowStore\(\)/)
    assert.throws(() => d.store('pairs-this-join-store', QueryableStoreTypes.keyValueStore()), /store "pairs-this-join-store" cannot be queried/)
    d.close()
  })

  it('on the embedded runtime, see every task’s keys, restored after a restart, and only while it runs', async () => {
    const topics = { in: { partitions: 4 } }
    const dir = freshStateDir()
    const keys = Array.from({ length: 40 }, (_, i) => `key-${i}`)
    const first = new EmbeddedRuntime(aggregations(), { applicationId: 'iq', stateDir: dir, topics, logger: silentLogger })
    const counts = first.store('counts', QueryableStoreTypes.keyValueStore<string, number>())
    assert.throws(() => counts.get('key-1'), /store "counts": the runtime is CREATED; stores can be queried while it runs/)
    await first.start()
    keys.forEach((k, i) => {
      for (let n = 0; n <= i % 3; n++) first.producer<string, string>('in').send(k, 'x', 1000 + i)
    })
    await first.idle()
    assert.equal(counts.approximateNumEntries(), 40)
    for (const [i, k] of keys.entries()) assert.equal(counts.get(k), (i % 3) + 1, k)
    assert.deepEqual([...counts.all()].map(([k]) => k).sort(), [...keys].sort(), 'all() reads the four tasks')
    await first.stop()
    assert.throws(() => counts.all(), /the runtime is NOT_RUNNING/)

    const second = new EmbeddedRuntime(aggregations(), { applicationId: 'iq', stateDir: dir, topics, logger: silentLogger })
    await second.start()
    const restored = second.store('counts', QueryableStoreTypes.keyValueStore<string, number>())
    for (const [i, k] of keys.entries()) assert.equal(restored.get(k), (i % 3) + 1, `${k} after the restart`)
    assert.equal(second.store('windows', QueryableStoreTypes.windowStore<string, number>()).fetch('key-5', 1000), 3)
    await second.stop()
  })

  it('the embedded runtime: a task assigned while running answers STORE_NOT_READY until it has restored', async () => {
    const b = new StreamsBuilder()
    b.stream<string, string>('in').groupByKey().count({ name: 'counts' })
    const rt = new EmbeddedRuntime(b.build(), { applicationId: 'iq-restoring', topics: { in: { partitions: 2 } }, logger: silentLogger })
    await rt.start()
    const keys = Array.from({ length: 8000 }, (_, i) => `key-${i}`)
    const p = rt.producer<string, string>('in')
    for (const k of keys) p.send(k, 'v', 1)
    await rt.idle()
    const counts = rt.store('counts', QueryableStoreTypes.keyValueStore<string, number>())
    const of1 = keys.find((k) => partitionForStringKey(k, 2) === 1)!
    const of0 = keys.find((k) => partitionForStringKey(k, 2) === 0)!
    await rt.revokeTasks(['0_1'])
    const assigned = rt.assignTasks(['0_1'])
    while (rt.restoreProgress().length === 0) await new Promise((r) => setImmediate(r))
    assert.equal(counts.get(of0), 1, 'a key of the running task is answered')
    assert.throws(() => counts.get(of1), (e: PunctualError) => e.code === 'STORE_NOT_READY' && /task 0_1 holding it is restoring/.test(e.message))
    assert.throws(() => counts.all(), (e: PunctualError) => e.code === 'STORE_NOT_READY')
    await assigned
    assert.equal(counts.get(of1), 1, 'restored: the key is answered')
    assert.equal([...counts.all()].length, keys.length)
    await rt.stop()
  })

  it('while a task holding the store restores, fail with STORE_NOT_READY where "absent" may be wrong, and answer keys of running tasks', () => {
    const topology = aggregations()
    const d = new TopologyTestDriver(topology)
    const input = d.createInputTopic('in', Serdes.String(), Serdes.String())
    for (const [k, ts] of [['a', 1], ['b', 2], ['b', 3]] as const) input.pipeInput(k, 'x', ts)
    // The driver's one task runs; task 0_1 of the same store is taken to be restoring on this instance.
    let restoring: string[] = ['0_1']
    const local = (name: string): StateStore[] => [d.getStateStore(name) as StateStore]
    const notReady = (): string[] => restoring
    const counts = queryableStore(topology, 'counts', QueryableStoreTypes.keyValueStore<string, number>(), local, notReady)
    const windows = queryableStore(topology, 'windows', QueryableStoreTypes.windowStore<string, number>(), local, notReady)
    const sessions = queryableStore(topology, 'sessions', QueryableStoreTypes.sessionStore<string, number>(), local, notReady)
    const notReadyError = (err: unknown): boolean => {
      const e = err as PunctualError
      assert.equal(e.code, 'STORE_NOT_READY')
      assert.equal(e.retriable, true)
      assert.match(e.message, /store "(counts|windows|sessions)" is not ready on this instance: task 0_1 holding it is restoring; retry the query/)
      return true
    }
    assert.equal(counts.get('b'), 2, 'a key of a running task is answered')
    assert.equal(windows.fetch('a', 0), 1)
    assert.deepEqual([...sessions.fetch('b')], [[{ key: 'b', window: { start: 2, end: 3 } }, 2]])
    assert.throws(() => counts.get('z'), notReadyError)
    assert.throws(() => counts.all(), notReadyError)
    assert.throws(() => counts.range('a', 'z'), notReadyError)
    assert.throws(() => counts.approximateNumEntries(), notReadyError)
    assert.throws(() => windows.fetch('z', 0), notReadyError)
    assert.throws(() => windows.fetch('z', 0, 100), notReadyError)
    assert.throws(() => windows.fetchAll(0, 100), notReadyError)
    assert.throws(() => sessions.fetch('z'), notReadyError)
    restoring = []
    assert.equal(counts.get('z'), undefined, 'once every task runs, a missing key is absent')
    assert.deepEqual([...counts.all()], [['a', 1], ['b', 2]])
    assert.deepEqual([...windows.fetch('z', 0, 100)], [])
    d.close()
  })

  it('a count store answers as a model of the input does, for random keys (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom('a', 'b', 'é', 'ab', 'B', ''), fc.integer({ min: 0, max: 50 })), { maxLength: 40 }), (records) => {
        const d = new TopologyTestDriver(aggregations())
        const input = d.createInputTopic('in', Serdes.String(), Serdes.String())
        const model = new Map<string, number>()
        for (const [k, ts] of records) {
          input.pipeInput(k, 'x', ts)
          model.set(k, (model.get(k) ?? 0) + 1)
        }
        const counts = d.store('counts', QueryableStoreTypes.keyValueStore<string, number>())
        // Serialized (UTF-8) key order.
        const expected = [...model].sort(([x], [y]) => Buffer.compare(Buffer.from(x), Buffer.from(y)))
        assert.deepEqual([...counts.all()], expected)
        for (const [k, n] of model) assert.equal(counts.get(k), n)
        assert.deepEqual([...counts.range('a', 'b')], expected.filter(([k]) => Buffer.compare(Buffer.from(k), Buffer.from('a')) >= 0 && Buffer.compare(Buffer.from(k), Buffer.from('b')) <= 0))
        d.close()
      }),
      { numRuns: 100 },
    )
  })
})
