import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ChangelogTopics } from '../../src/kafka/changelog-topics.js'
import { KafkaCommitBackend, parseTaskId } from '../../src/kafka/kafka-commit-backend.js'
import type { CommitClient, PartitionOffset } from '../../src/kafka/kafka-commit-backend.js'
import { ProducerSink } from '../../src/kafka/producer-sink.js'
import type { TaskCommit } from '../../src/runtime/commit-backend.js'
import { ManualClock } from '../../src/testing/index.js'

const bytes = (s: string) => new TextEncoder().encode(s)

function setup(exactlyOnce: boolean) {
  const calls: string[] = []
  const produced: string[] = []
  const sink = new ProducerSink({
    produce: (topic, partition, value, key) => {
      produced.push(`${topic}/${partition} ${String(key)}=${String(value)}`)
    },
  })
  let release: () => void = () => {}
  const client: CommitClient = {
    sendOffsetsToTransaction: async (o: PartitionOffset[]) => void calls.push(`sendOffsets ${o.map((x) => `${x.topic}-${x.partition}@${x.offset}`).join(' ')}`),
    commitTransaction: () => {
      calls.push('commitTransaction')
      return new Promise<void>((resolve) => (release = resolve))
    },
    beginTransaction: async () => void calls.push('beginTransaction'),
    flush: () => {
      calls.push('flush')
      return new Promise<void>((resolve) => (release = resolve))
    },
    commitOffsets: async (o: PartitionOffset[]) => void calls.push(`commitOffsets ${o.map((x) => `${x.topic}-${x.partition}@${x.offset}`).join(' ')}`),
  }
  const topics = new ChangelogTopics('app', 0, ['counts'])
  const backend = new KafkaCommitBackend(exactlyOnce, client, sink, () => topics, (t) => (t === 'rep' ? 'app-rep' : t), new ManualClock(5))
  const commit: TaskCommit = {
    taskId: '0_2',
    checkpoint: { streamTime: 100, lastFires: {}, positions: {} },
    keyed: undefined,
    stores: new Map(),
    records: () => [{ store: 'counts', key: bytes('k'), value: bytes('1') }],
  }
  return { calls, produced, sink, backend, commit, release: () => release() }
}

describe('KafkaCommitBackend', () => {
  it('exactly_once_v2: changelog records into the open transaction, the offsets with it, commit, begin; outputs written meanwhile wait for the next one', async () => {
    const { calls, produced, sink, backend, commit, release } = setup(true)
    // Positions name the topology's topics; offsets go to the cluster's names of them.
    const done = backend.commit([{ ...commit, checkpoint: { ...commit.checkpoint, positions: { 'in:2': 7, 'rep:2': 3 } } }])
    assert.deepEqual(produced, ['app-counts-changelog/2 k=1'])
    sink.send('out', 0, bytes('late'), bytes('x'), 6, [])
    assert.deepEqual(produced, ['app-counts-changelog/2 k=1'], 'an output after the take is held')
    await new Promise((r) => setImmediate(r))
    assert.deepEqual(calls, ['sendOffsets in-2@7 app-rep-2@3', 'commitTransaction'])
    release()
    await done
    assert.deepEqual(calls, ['sendOffsets in-2@7 app-rep-2@3', 'commitTransaction', 'beginTransaction'])
    assert.deepEqual(produced, ['app-counts-changelog/2 k=1', 'out/0 late=x'], 'released into the next transaction')
  })

  it("at_least_once: the state's changelog records, a flush, then the task's positions, a flush, then the offsets; outputs are never held", async () => {
    const { calls, produced, sink, backend, commit, release } = setup(false)
    const records = [
      { store: 'punctual.task', key: bytes('t'), value: bytes('pos') },
      { store: 'counts', key: bytes('k'), value: bytes('1') },
    ]
    const done = backend.commit([{ ...commit, checkpoint: { ...commit.checkpoint, positions: { 'in:2': 9 } }, records: () => records }])
    sink.send('out', 1, bytes('o'), bytes('y'), 6, [])
    assert.deepEqual(produced, ['app-counts-changelog/2 k=1', 'out/1 o=y'], 'positions wait for the rest of the state')
    assert.deepEqual(calls, ['flush'])
    release()
    await new Promise((r) => setImmediate(r))
    assert.equal(produced.length, 3)
    assert.match(produced[2] ?? '', /^app-punctual-0-changelog\/2 /)
    assert.deepEqual(calls, ['flush', 'flush'], 'offsets wait for the positions')
    release()
    await done
    assert.deepEqual(calls, ['flush', 'flush', 'commitOffsets in-2@9'])
  })

  it('parses task ids', () => {
    assert.deepEqual(parseTaskId('12_3'), [12, 3])
  })
})
