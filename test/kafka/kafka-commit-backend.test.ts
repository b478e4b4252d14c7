import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ChangelogTopics } from '../../src/kafka/changelog-topics.js'
import { KafkaCommitBackend, parseTaskId } from '../../src/kafka/kafka-commit-backend.js'
import { COMMIT_HEADER, readCommitHeader } from '../../src/kafka/commit-numbers.js'
import type { CommitClient, PartitionOffset } from '../../src/kafka/kafka-commit-backend.js'
import { ProducerSink } from '../../src/kafka/producer-sink.js'
import type { TaskCommit } from '../../src/runtime/commit-backend.js'
import { ManualClock } from '../../src/testing/index.js'

const bytes = (s: string) => new TextEncoder().encode(s)

function setup(exactlyOnce: boolean) {
  const calls: string[] = []
  const produced: string[] = []
  /** The commit number each produced record carries (undefined: none). */
  const numbers: Array<number | undefined> = []
  const sink = new ProducerSink({
    produce: (topic, partition, value, key, _timestamp, _opaque, headers) => {
      produced.push(`${topic}/${partition} ${String(key)}=${String(value)}`)
      const header = headers?.find((h) => COMMIT_HEADER in h)?.[COMMIT_HEADER]
      numbers.push(header === undefined ? undefined : readCommitHeader(header))
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
    commitOffsets: async (o: PartitionOffset[]) => void calls.push(`commitOffsets ${o.map((x) => `${x.topic}-${x.partition}@${x.offset}${x.metadata === undefined ? '' : ` ${x.metadata}`}`).join(' ')}`),
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
  return { calls, produced, numbers, sink, backend, commit, release: () => release() }
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

  it("at_least_once: the changelog records, numbered, a flush, then the offsets naming the commit; outputs are never held", async () => {
    const { calls, produced, numbers, sink, backend, commit, release } = setup(false)
    const records = [
      { store: 'punctual.task', key: bytes('t'), value: bytes('pos') },
      { store: 'counts', key: bytes('k'), value: bytes('1') },
    ]
    // Assigned with the group's offsets naming commit 41: the next one is 42.
    backend.assigned('0_2', { n: 41, voids: [] })
    const done = backend.commit([{ ...commit, checkpoint: { ...commit.checkpoint, positions: { 'in:2': 9 } }, records: () => records }])
    sink.send('out', 1, bytes('o'), bytes('y'), 6, [])
    assert.equal(produced.length, 3, 'the changelog records, and the output at once')
    assert.match(produced[0] ?? '', /^app-punctual-0-changelog\/2 /)
    assert.equal(produced[1], 'app-counts-changelog/2 k=1')
    assert.equal(produced[2], 'out/1 o=y')
    assert.deepEqual(numbers, [42, 42, undefined], 'changelog records carry the commit number, outputs do not')
    assert.deepEqual(calls, ['flush'], 'the offsets wait until every record is acknowledged')
    release()
    await done
    assert.deepEqual(calls, ['flush', 'commitOffsets in-2@9 punctual.commit=42'])
    const next = backend.commit([{ ...commit, checkpoint: { ...commit.checkpoint, positions: { 'in:2': 12 } } }])
    release()
    await next
    assert.equal(numbers.at(-1), 43)
    assert.equal(calls.at(-1), 'commitOffsets in-2@12 punctual.commit=43')
  })

  it('exactly_once_v2 numbers nothing: its transactions keep an incomplete commit out', async () => {
    const { numbers, backend, commit, release } = setup(true)
    const done = backend.commit([{ ...commit, checkpoint: { ...commit.checkpoint, positions: { 'in:2': 1 } } }])
    await new Promise((r) => setImmediate(r))
    release()
    await done
    assert.deepEqual(numbers, [undefined])
  })

  it('at_least_once: numbers left out by a restore stay void in every later mark', async () => {
    const { calls, numbers, backend, commit, release } = setup(false)
    backend.assigned('0_2', { n: 9, voids: [[3, 4]] })
    const done = backend.commit([{ ...commit, checkpoint: { ...commit.checkpoint, positions: { 'in:2': 1 } } }])
    release()
    await done
    assert.deepEqual(numbers, [10])
    assert.deepEqual(calls, ['flush', 'commitOffsets in-2@1 punctual.commit=10;void=3-4'])
  })

  it('parses task ids', () => {
    assert.deepEqual(parseTaskId('12_3'), [12, 3])
  })
})
