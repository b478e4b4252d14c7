import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { CheckpointStore } from '../../src/state/checkpoint-store.js'
import { defaultStoreCodec, encodeStoreKey, packValue } from '../../src/state/changelog-codec.js'
import { PersistentKeyValueStore, persistentStore } from '../../src/state/persistent-store.js'
import { DURABLE } from '../../src/state/durable.js'
import { TaskChangelogCodec } from '../../src/runtime/changelog-records.js'

const task = (streamTime: number): (() => Map<string, { streamTime: number; lastFires: Record<string, number>; positions: Record<string, number> }>) => () => new Map([['0_0', { streamTime, lastFires: {}, positions: {} }]])
const record = (store: string, key: string | number, value: unknown): { store: string; key: Uint8Array; value: Uint8Array | null } => ({ store, key: encodeStoreKey(key), value: value === null ? null : packValue(value) })

describe("task records: a Kafka instance's changelog records in the state directory", () => {
  it('a persistent store reads its entries there, in the order of its serialized keys, whether a restore or a commit wrote them', async () => {
    const store = CheckpointStore.open(mkdtempSync(join(tmpdir(), 'punctual-records-')))
    const writer = store.records.writer('0_0')
    for (let i = 0; i < 30; i++) writer.write(record('counts', `k${i}`, i))
    writer.write(record('other', 'k1', 'not a count'))
    await writer.written()
    // A commit large enough to go through the journal, and one small: both after the restore's writes.
    await store.saveRecordsAfter(Promise.resolve(true), task(1), new Map([['0_0', [record('counts', 'k1', 100), record('counts', 'k2', null), record('counts', 'k30', 30)]]]))
    const disk = store.records.storeDisk('0_0', 'counts', defaultStoreCodec)
    // Every key, each read alone (a read must not disturb the next).
    for (let i = 0; i < 31; i++) assert.equal(disk.get(`k${i}`), i === 1 ? 100 : i === 2 ? undefined : i, `k${i}`)
    assert.equal(disk.get('k31'), undefined)
    assert.equal(disk.count(), 30)
    const keys = [...disk.entries()].map(([k]) => k)
    assert.deepEqual(keys, [...keys].sort(), 'byte order of the serialized keys (here, of the strings)')
    assert.deepEqual(keys.slice(0, 4), ['k0', 'k1', 'k10', 'k11'])
    assert.deepEqual([...disk.entries('k28')], [['k28', 28], ['k29', 29], ['k3', 3], ['k30', 30], ['k4', 4], ['k5', 5], ['k6', 6], ['k7', 7], ['k8', 8], ['k9', 9]])
    assert.ok((disk.compare as (a: string, b: string) => number)('k10', 'k9') < 0, "the disk's order, not the store's (k10 before k9)")
    assert.equal(store.records.storeDisk('0_0', 'other', defaultStoreCodec).get('k1'), 'not a count')
    assert.equal(store.records.storeDisk('0_1', 'counts', defaultStoreCodec).count(), 0, "another task's records are not its")
    await store.close()
  })

  it("a task's records without those of the stores that read them on disk, counted alike", async () => {
    const store = CheckpointStore.open(mkdtempSync(join(tmpdir(), 'punctual-records-')))
    const writer = store.records.writer('0_0')
    for (const name of ['a', 'counts', 'm', 'punctual.task', 'z']) for (let i = 0; i < 3; i++) writer.write(record(name, i, i))
    await writer.written()
    const stores = (except: ReadonlySet<string>): string[] => [...store.records.of('0_0', (s) => except.has(s))].map((r) => r.store)
    assert.deepEqual(stores(new Set(['counts', 'z'])), ['a', 'a', 'a', 'm', 'm', 'm', 'punctual.task', 'punctual.task', 'punctual.task'])
    assert.equal(store.records.count('0_0', (s) => s === 'counts' || s === 'z'), 9)
    assert.equal(store.records.count('0_0', (s) => s === 'counts' || s === 'z', 4), 4, 'counting stops at the limit')
    assert.equal(stores(new Set(['a', 'm', 'punctual.task', 'z'])).join(), 'counts,counts,counts')
    assert.equal(store.records.count('0_0'), 15)
    await store.records.remove('0_0')
    assert.equal(store.records.count('0_0'), 0)
    await store.close()
  })

  it('a keyed state reads its entries there, a key at a time, with its kind', async () => {
    const store = CheckpointStore.open(mkdtempSync(join(tmpdir(), 'punctual-records-')))
    const codec = new TaskChangelogCodec([])
    const writer = store.records.writer('0_0')
    const keyed = { states: [{ state: 'p/totals', kind: 'value' as const, key: 'a', entries: { v: 1, a: 5 } }, { state: 'p/totals', kind: 'value' as const, key: 7, entries: { v: 2, a: 6 } }, { state: 'p/seen', kind: 'list' as const, key: 'a', entries: [{ v: 'x', a: 1 }] }], timers: [] }
    for (const r of codec.commitRecords({ streamTime: 1, lastFires: {}, positions: {} }, { streamTime: 1, lastFires: {}, positions: {} }, keyed, new Map())) writer.write(r)
    await writer.written()
    const totals = store.records.keyedStateDisk('0_0', 'punctual.state.p/totals')
    assert.equal(totals?.kind, 'value')
    assert.deepEqual(totals?.disk.get('a'), { v: 1, a: 5 })
    assert.deepEqual(totals?.disk.get(7), { v: 2, a: 6 })
    assert.equal(totals?.disk.get('b'), undefined)
    assert.deepEqual([...(totals?.disk.entries() ?? [])].length, 2)
    assert.equal(store.records.keyedStateDisk('0_0', 'punctual.state.p/seen')?.kind, 'list')
    assert.equal(store.records.keyedStateDisk('0_0', 'punctual.state.p/none').kind, undefined, 'a state with no entries has no kind')
    await store.close()
  })

  it('a persistent store attached to them holds its changes and a bounded cache; reads and scans merge them with the disk in its order', async () => {
    const checkpoints = CheckpointStore.open(mkdtempSync(join(tmpdir(), 'punctual-records-')))
    const writer = checkpoints.records.writer('0_0')
    for (let i = 0; i < 20; i++) writer.write(record('counts', `k${i}`, i))
    await writer.written()
    const store = new PersistentKeyValueStore<string, number>('counts', 5)
    store[DURABLE].trackChanges()
    persistentStore(store)?.attach(checkpoints.records.storeDisk('0_0', 'counts', defaultStoreCodec))
    assert.equal(store.get('k7'), 7)
    store.put('k10', 1000)
    store.put('k95', 95)
    store.delete('k3')
    assert.deepEqual(
      [...store.range('k1', 'k2')].map(([k, v]) => `${k}=${v}`),
      ['k1=1', 'k10=1000', 'k11=11', 'k12=12', 'k13=13', 'k14=14', 'k15=15', 'k16=16', 'k17=17', 'k18=18', 'k19=19', 'k2=2'],
    )
    const all = [...store.all()].map(([k]) => k)
    assert.deepEqual(all, [...all].sort())
    assert.ok(all.includes('k95') && !all.includes('k3'))
    // Approximate (Kafka Streams' too): a put of a key already on disk counts as a new one.
    assert.equal(store.approximateNumEntries(), 21)
    await checkpoints.close()
  })
})
