import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ChangelogTopics } from '../../src/kafka/changelog-topics.js'
import { KafkaCommitBackend, parseTaskId } from '../../src/kafka/kafka-commit-backend.js'
import { claimMark, COMMIT_HEADER, EPOCH_SIZE, formatCommitMark, MAX_EPOCH, readCommitHeader, SEQ_MAX } from '../../src/kafka/commit-numbers.js'
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
  /** What commitOffsets says: true, the group took them; false, the commit lapsed; undefined, a client that does not say. */
  const group: { takes: boolean | undefined } = { takes: true }
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
    commitOffsets: async (o: PartitionOffset[]) => {
      calls.push(`commitOffsets ${o.map((x) => `${x.topic}-${x.partition}@${x.offset}${x.metadata === undefined ? '' : ` ${x.metadata}`}`).join(' ')}`)
      return group.takes
    },
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
  return { calls, produced, numbers, sink, backend, commit, group, release: () => release() }
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

  it('at_least_once: after a claim, commits are numbered from the new epoch’s first, the claim’s voids in every mark', async () => {
    const { calls, numbers, backend, commit, release } = setup(false)
    const claimed = claimMark({ n: 0x10, voids: [] })
    backend.assigned('0_2', claimed)
    for (const offset of [1, 2]) {
      const done = backend.commit([{ ...commit, checkpoint: { ...commit.checkpoint, positions: { 'in:2': offset } } }])
      release()
      await done
    }
    assert.deepEqual(numbers, [EPOCH_SIZE + 1, EPOCH_SIZE + 2])
    assert.equal(calls.at(-1), `commitOffsets in-2@2 punctual.commit=${EPOCH_SIZE + 2};void=17-${EPOCH_SIZE - 1}`)
  })

  /** Commits of task 0_2 at the given positions (undefined: none, so no offsets), one after the other. */
  async function commitsAt(s: ReturnType<typeof setup>, positions: ReadonlyArray<number | undefined>): Promise<void> {
    for (const p of positions) {
      const done = s.backend.commit([{ ...s.commit, checkpoint: { ...s.commit.checkpoint, positions: p === undefined ? {} : { 'in:2': p } } }])
      s.release()
      await done
    }
  }

  it('at_least_once: near the end of its epoch’s numbers a task offers the next epoch’s claim; until the group takes one, it stays in its epoch', async () => {
    const s = setup(false)
    const base = 3 * EPOCH_SIZE
    s.backend.assigned('0_2', { n: base + SEQ_MAX - 4, voids: [[5, 6]] })
    // A commit the group does not take (lapsed, or a client that does not say) leaves the task in its epoch.
    s.group.takes = false
    await commitsAt(s, [0])
    s.group.takes = undefined
    await commitsAt(s, [1])
    const offered = claimMark({ n: base + SEQ_MAX - 2, voids: [[5, 6]] })
    assert.equal(offered.n, base + EPOCH_SIZE)
    assert.deepEqual(s.calls.slice(-2), ['flush', `commitOffsets in-2@1 ${formatCommitMark(offered)}`], 'the mark offered is the claim of its own commit')
    // Nor does a commit without offsets of the task (they carry the claim), though the group takes others'.
    s.group.takes = true
    s.backend.assigned('0_3', { n: base + 5, voids: [] })
    const both = s.backend.commit([s.commit, { ...s.commit, taskId: '0_3', checkpoint: { ...s.commit.checkpoint, positions: { 'in:3': 4 } } }])
    s.release()
    await both
    assert.equal(s.calls.at(-1), `commitOffsets in-3@4 punctual.commit=${base + 6}`)
    s.group.takes = false
    await commitsAt(s, [2])
    assert.deepEqual(s.numbers, [base + SEQ_MAX - 3, base + SEQ_MAX - 2, base + SEQ_MAX - 1, base + 6, base + SEQ_MAX])
    // No number left in epoch 3: the commit fails before it writes anything.
    const produced = s.produced.length
    await assert.rejects(commitsAt(s, [3]), /no at-least-once commit number left in owner epoch 3/)
    assert.equal(s.produced.length, produced)
  })

  it('at_least_once: a claim the group took moves the task to the next epoch', async () => {
    const s = setup(false)
    const base = 7 * EPOCH_SIZE
    s.backend.assigned('0_2', { n: base + SEQ_MAX - 1, voids: [] })
    await commitsAt(s, [1, 2])
    assert.deepEqual(s.numbers, [base + SEQ_MAX, base + EPOCH_SIZE + 1])
    assert.equal(s.calls.at(-1), `commitOffsets in-2@2 punctual.commit=${base + EPOCH_SIZE + 1}`)
    // Far from the end of an epoch: the plain mark.
    const early = setup(false)
    early.backend.assigned('0_2', { n: base + SEQ_MAX - 2 ** 16 - 1, voids: [] })
    await commitsAt(early, [1])
    assert.equal(early.calls.at(-1), `commitOffsets in-2@1 punctual.commit=${base + SEQ_MAX - 2 ** 16}`)
    // In the last epoch there is no next one to claim.
    const last = setup(false)
    last.backend.assigned('0_2', { n: MAX_EPOCH * EPOCH_SIZE + SEQ_MAX - 1, voids: [] })
    await commitsAt(last, [1])
    assert.equal(last.numbers.at(-1), 2 ** 48 - 1)
    assert.equal(last.calls.at(-1), `commitOffsets in-2@1 punctual.commit=${2 ** 48 - 1}`)
  })

  it('parses task ids', () => {
    assert.deepEqual(parseTaskId('12_3'), [12, 3])
  })
})
