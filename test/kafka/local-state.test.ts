// The Kafka runtime's local state: a local commit after each Kafka one (LocalCommitBackend), and what a
// restore takes from it (LocalTaskRecords), over a real checkpoint store in a temporary directory.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { ChangelogTopics } from '../../src/kafka/changelog-topics.js'
import { KafkaCommitBackend } from '../../src/kafka/kafka-commit-backend.js'
import type { CommitClient } from '../../src/kafka/kafka-commit-backend.js'
import { LocalCommitBackend } from '../../src/kafka/local-commit-backend.js'
import { LOCAL_STATE_MAX_AGE_MS, LocalTaskRecords } from '../../src/kafka/local-task-records.js'
import type { Watermarks } from '../../src/kafka/local-task-records.js'
import { ProducerSink } from '../../src/kafka/producer-sink.js'
import type { StoreBuilder } from '../../src/state/stores.js'
import { ChangelogRestorer, TaskChangelogCodec } from '../../src/runtime/changelog-records.js'
import type { TaskCommit } from '../../src/runtime/commit-backend.js'
import { CheckpointStore } from '../../src/state/checkpoint-store.js'
import { silentLogger } from '../../src/index.js'
import { ManualClock } from '../../src/testing/index.js'

const root = mkdtempSync(join(tmpdir(), 'punctual-local-state-'))
after(() => rmSync(root, { recursive: true, force: true }))
let n = 0
const freshStore = (): CheckpointStore => CheckpointStore.open(join(root, `s${++n}`))

const TOPIC = 'app-counts-changelog'
const TASK_TOPIC = 'app-punctual-0-changelog'
const codec = new TaskChangelogCodec([{ name: 'counts' } as StoreBuilder])

/** A commit of task 0_0: `changes` to store `counts`, and a timer added. */
function commitOf(changes: Array<[string, number | undefined]>, position: number): TaskCommit {
  const stores = new Map([['counts', changes]])
  const checkpoint = { streamTime: position, lastFires: {}, positions: { 'in:0': position } }
  const keyed = { states: [], timers: [{ added: true, record: { kind: 'user' as const, domain: 'event' as const, timestamp: position, seq: position, owner: 'p', key: `t${position}` } }] }
  return { taskId: '0_0', checkpoint, keyed, stores, records: () => codec.commitRecords(undefined, checkpoint, keyed, stores) }
}

function setup(exactlyOnce: boolean, store: CheckpointStore) {
  const steps: string[] = []
  let finish: (err?: Error) => void = () => {}
  const client: CommitClient = {
    sendOffsetsToTransaction: async () => void steps.push('sendOffsets'),
    commitTransaction: () => {
      steps.push('commitTransaction')
      return new Promise<void>((resolve, reject) => (finish = (err) => (err === undefined ? resolve() : reject(err))))
    },
    beginTransaction: async () => void steps.push('beginTransaction'),
    flush: () => {
      steps.push('flush')
      return new Promise<void>((resolve, reject) => (finish = (err) => (err === undefined ? resolve() : reject(err))))
    },
    commitOffsets: async () => true,
  }
  const sink = new ProducerSink({ produce: () => {} })
  const topics = new ChangelogTopics('app', 0, ['counts'])
  const kafka = new KafkaCommitBackend(exactlyOnce, client, sink, () => topics, (t) => t, new ManualClock(5))
  return { steps, backend: new LocalCommitBackend(kafka, store, exactlyOnce, () => 1_000), finish: (err?: Error) => finish(err) }
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 20))

/** A task's local records folded as a restore folds them: its stores' entries and its timers' keys. */
function localState(store: CheckpointStore, taskId: string): { stores: unknown; timers: unknown[] } {
  const restorer = new ChangelogRestorer(codec).applyAll(store.records.of(taskId))
  const checkpoint = restorer.checkpoint()
  return { stores: checkpoint?.stores, timers: (checkpoint?.keyed?.timers ?? []).map((t) => t.key) }
}

describe('LocalCommitBackend', () => {
  it('writes a commit locally only once its Kafka commit is complete, with offsets counted past the restore (records, and a marker per transaction)', async () => {
    const store = freshStore()
    const { backend, finish } = setup(true, store)
    backend.restored('0_0', { [TOPIC]: 10, [TASK_TOPIC]: 4 })
    const done = backend.commit([commitOf([['a', 1], ['b', 2]], 7)])
    await settle()
    assert.equal(store.load('0_0'), undefined, 'nothing local before the transaction commits')
    finish()
    await done
    const state = store.load('0_0')
    // 2 store records + marker; the task's topic: stream time, position, the timer + marker.
    assert.deepEqual(state?.changelog, { offsets: { [TOPIC]: 13, [TASK_TOPIC]: 8 }, writtenAt: 1_000 })
    assert.deepEqual(state?.positions, { 'in:0': 7 })
    assert.deepEqual(localState(store, '0_0'), { stores: { counts: [['a', 1], ['b', 2]] }, timers: ['t7'] })
    // A partition the commit did not write keeps its offset (and gets no marker).
    const next = backend.commit([{ ...commitOf([['a', 3]], 8), keyed: undefined, records: () => codec.commitRecords(undefined, { streamTime: 8, lastFires: {}, positions: {} }, undefined, new Map([['counts', [['a', 3]]]])) }])
    await settle()
    finish()
    await next
    assert.deepEqual(store.load('0_0')?.changelog?.offsets, { [TOPIC]: 15, [TASK_TOPIC]: 8 + 2 })
    await store.close()
  })

  it('a Kafka commit that fails writes nothing locally, and the commit fails with its error', async () => {
    const store = freshStore()
    const { backend, finish } = setup(true, store)
    backend.restored('0_0', { [TOPIC]: 10, [TASK_TOPIC]: 4 })
    const done = backend.commit([commitOf([['a', 1]], 7)])
    await settle()
    finish(new Error('transaction aborted'))
    await assert.rejects(done, /transaction aborted/)
    await settle()
    assert.equal(store.load('0_0'), undefined)
    assert.equal(store.records.count('0_0'), 0)
    // The offsets did not move: the next commit counts from the restore still.
    const again = backend.commit([commitOf([['a', 1]], 7)])
    await settle()
    finish()
    await again
    assert.equal(store.load('0_0')?.changelog?.offsets[TOPIC], 10 + 1 + 1)
    await store.close()
  })

  it('at least once: no markers; the commit number and whether the group took it are kept', async () => {
    const store = freshStore()
    const { backend, finish } = setup(false, store)
    backend.restored('0_0', { [TOPIC]: 10, [TASK_TOPIC]: 4 })
    const done = backend.commit([commitOf([['a', 1], ['b', 2]], 7)])
    await settle()
    finish()
    await done
    assert.deepEqual(store.load('0_0')?.changelog, { offsets: { [TOPIC]: 12, [TASK_TOPIC]: 7 }, writtenAt: 1_000, n: 1, confirmed: true })
    await store.close()
  })

  it('a task not restored here yet writes nothing locally', async () => {
    const store = freshStore()
    const { backend, finish } = setup(true, store)
    const done = backend.commit([commitOf([['a', 1]], 7)])
    await settle()
    finish()
    await done
    assert.equal(store.load('0_0'), undefined)
    await store.close()
  })
})

describe('LocalTaskRecords', () => {
  const task = { taskId: '0_0', partition: 0, topics: [TOPIC] }
  const ends = (low: number, high: number) => async (): Promise<Watermarks> => ({ lowOffset: low, highOffset: high })

  async function withState(changelog: { offsets: Record<string, number>; writtenAt: number; n?: number; confirmed?: boolean }): Promise<CheckpointStore> {
    const store = freshStore()
    const checkpoint = { streamTime: 5, lastFires: {}, positions: { 'in:0': 3 } }
    const keyed = { states: [], timers: [{ added: true, record: { kind: 'user' as const, domain: 'event' as const, timestamp: 9, seq: 1, owner: 'p', key: 'x' } }] }
    const records = codec.commitRecords(undefined, checkpoint, keyed, new Map([['counts', [['a', 1], ['b', 2]] as Array<[string, number]>]]))
    await store.saveRecordsAfter(Promise.resolve(true), () => new Map([['0_0', { ...checkpoint, changelog }]]), new Map([['0_0', records]]))
    return store
  }

  it('gives usable local records, which fold back into the state, then keeps them up with the tail (a timer removed, a key deleted, one changed)', async () => {
    const store = await withState({ offsets: { [TOPIC]: 6 }, writtenAt: 1_000 })
    const local = new LocalTaskRecords(store, silentLogger, () => 2_000)
    await local.load([task], ends(0, 8), () => undefined)
    const start = local.take('0_0', () => false)
    assert.deepEqual(start?.offsets, { [TOPIC]: 6 })
    const restorer = new ChangelogRestorer(codec)
    assert.ok((start?.source.remaining() ?? 0) > 0)
    for (let batch = start?.source.read(1); batch !== undefined && batch.length > 0; batch = start?.source.read(1)) restorer.applyAll(batch)
    assert.equal(start?.source.remaining(), 0)
    assert.deepEqual(restorer.checkpoint()?.stores, { counts: [['a', 1], ['b', 2]] })
    assert.deepEqual(restorer.checkpoint()?.positions, { 'in:0': 3 })
    // The tail: the timer's tombstone, b deleted, a changed, c added.
    const timer = { kind: 'user' as const, domain: 'event' as const, timestamp: 9, seq: 1, owner: 'p', key: 'x' }
    const tail = codec.commitRecords({ streamTime: 5, lastFires: {}, positions: {} }, { streamTime: 5, lastFires: {}, positions: {} }, { states: [], timers: [{ added: false, record: timer }] }, new Map([['counts', [['b', undefined], ['a', 7], ['c', 1]]]]))
    const writer = local.tailWriter('0_0')
    for (const r of tail) writer.write(r)
    await writer.written()
    assert.deepEqual(localState(store, '0_0'), { stores: { counts: [['a', 7], ['c', 1]] }, timers: [] })
    await store.close()
  })

  const refusals: Array<[string, Parameters<typeof withState>[0], () => Promise<Watermarks>, { n: number; voids: Array<[number, number]> } | undefined, RegExp]> = [
    ['other changelog topics', { offsets: { 'app-other-changelog': 6 }, writtenAt: 1_000 }, ends(0, 8), undefined, /changelog topics app-other-changelog are not the task's app-counts-changelog/],
    ['too old', { offsets: { [TOPIC]: 6 }, writtenAt: 1_000 - LOCAL_STATE_MAX_AGE_MS - 5_000 }, ends(0, 8), undefined, /older than the changelogs keep tombstones/],
    ['past the end', { offsets: { [TOPIC]: 9 }, writtenAt: 1_000 }, ends(0, 8), undefined, /whose end is 8: the topic was made again/],
    ['before the start', { offsets: { [TOPIC]: 6 }, writtenAt: 1_000 }, ends(7, 8), undefined, /which starts at 7 now/],
    ['at least once, not taken by the group', { offsets: { [TOPIC]: 6 }, writtenAt: 1_000, n: 4, confirmed: false }, ends(0, 8), { n: 4, voids: [] }, /the group did not take the offsets/],
    ['at least once, not covered by the mark', { offsets: { [TOPIC]: 6 }, writtenAt: 1_000, n: 4, confirmed: true }, ends(0, 8), { n: 9, voids: [[3, 5]] }, /does not cover commit 4/],
  ]
  for (const [what, changelog, watermarks, mark, why] of refusals) {
    it(`refuses and removes local state: ${what}`, async () => {
      const store = await withState(changelog)
      const logged: string[] = []
      const logger = { ...silentLogger, info: (_o: object, msg: string) => void logged.push(msg) }
      const local = new LocalTaskRecords(store, logger, () => 2_000)
      await local.load([task], watermarks, () => mark)
      assert.equal(local.take('0_0', () => false), undefined)
      assert.match(logged.join('\n'), why)
      assert.equal(store.load('0_0'), undefined)
      assert.equal(store.records.count('0_0'), 0)
      await store.close()
    })
  }

  it('at least once, usable when the group took the commit and its mark covers it', async () => {
    const store = await withState({ offsets: { [TOPIC]: 6 }, writtenAt: 1_000, n: 4, confirmed: true })
    const local = new LocalTaskRecords(store, silentLogger, () => 2_000)
    await local.load([task], ends(0, 8), () => ({ n: 9, voids: [[5, 8]] }))
    assert.deepEqual(local.take('0_0', () => false)?.offsets, { [TOPIC]: 6 })
    await store.close()
  })
})
