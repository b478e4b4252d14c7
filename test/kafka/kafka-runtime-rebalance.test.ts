// The Kafka runtime's rebalance and recovery, driven without a broker: KafkaRuntime on the clients of an
// in-memory cluster (mock-clients.ts). Each test asserts what was committed (outputs, offsets, marks)
// and what is redone.
import assert from 'node:assert/strict'
import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, afterEach, describe, it } from 'node:test'
import { Consumed, createConsoleLogger, Materialized, Produced, QueryableStoreTypes, Serdes, StateDescriptors, StreamsBuilder, Topology } from '../../src/index.js'
import type { KeyedProcessorContext, MapState, ValueState } from '../../src/index.js'
import { withClientSupplier } from '../../src/kafka/client-supplier.js'
import { EPOCH_SIZE, epochOf, parseCommitMark } from '../../src/kafka/commit-numbers.js'
import type { ProcessingGuarantee } from '../../src/kafka/config.js'
import { KafkaRuntime } from '../../src/kafka/kafka-runtime.js'
import { CheckpointStore } from '../../src/state/checkpoint-store.js'
import type { ChangelogPosition } from '../../src/state/checkpoint-store.js'
import { MockCluster } from './mock-clients.js'
import type { MockGroupConsumer, MockProducer } from './mock-clients.js'

const IN = 'in'
const OUT = 'out'
const CHANGELOG = 'app-counts-changelog'
const BOTH = [
  { topic: IN, partition: 0 },
  { topic: IN, partition: 1 },
]

/**
 * Counts per key in keyed state (a value state, and a map state that keeps the count doubled), each
 * new count written to OUT: keyed state restored wrong counts on from a wrong number.
 */
function keyedCounting(cacheEntries?: number): Topology {
  const options = cacheEntries === undefined ? {} : { cacheEntries }
  return new Topology()
    .addSource('in', IN, { keySerde: Serdes.String(), valueSerde: Serdes.String() })
    .addKeyedProcessor<string, string, string, string>(
      'count',
      () => {
        let ctx: KeyedProcessorContext<string, string, string>
        let value: ValueState<number>
        let map: MapState<string, number>
        return {
          init(c) {
            ctx = c
            value = c.getState(StateDescriptors.value<number>('n', options))
            map = c.getMapState(StateDescriptors.map<string, number>('twice', options))
          },
          process(r) {
            const n = (value.value() ?? 0) + 1
            value.update(n)
            map.put('n', (map.get('n') ?? 0) + 2)
            ctx.forward({ ...r, value: map.get('n') === 2 * n ? String(n) : `twice ${map.get('n')} for ${n}` })
          },
        }
      },
      'in',
    )
    .addSink('out', OUT, { keySerde: Serdes.String(), valueSerde: Serdes.String() }, 'count')
}

/** Counts per key (store `counts`), each new count written to OUT. */
function counting(store = 'counts'): Topology {
  const b = new StreamsBuilder()
  b.stream(IN, Consumed.with(Serdes.String(), Serdes.String()))
    .groupByKey()
    .count(Materialized.as(store))
    .toStream()
    .mapValues((v) => String(v))
    .to(OUT, Produced.with(Serdes.String(), Serdes.String()))
  return b.build()
}

const log: string[] = []
const logger = createConsoleLogger({ level: 'debug', write: (line) => log.push(line) })
const running: KafkaRuntime[] = []

afterEach(async (t) => {
  for (const rt of running.splice(0)) await rt.stop().catch(() => {})
  if ((t as { passed?: boolean }).passed === false) process.stderr.write(`runtime log:\n${log.join('\n')}\n`)
  log.length = 0
})

function cluster(): MockCluster {
  const c = new MockCluster()
  c.createTopic(IN, 2)
  c.createTopic(OUT, 2)
  return c
}

async function started(c: MockCluster, guarantee: ProcessingGuarantee, options: { commitIntervalMs?: number; topology?: Topology; stateDir?: string } = {}): Promise<{ rt: KafkaRuntime; consumer: MockGroupConsumer }> {
  const config = { applicationId: 'app', bootstrapServers: 'mock:9092', processingGuarantee: guarantee, commitIntervalMs: options.commitIntervalMs ?? 20, logger, ...(options.stateDir === undefined ? {} : { stateDir: options.stateDir }) }
  const rt = new KafkaRuntime(options.topology ?? counting(), withClientSupplier(config, c.supplier()))
  running.push(rt)
  await rt.start()
  return { rt, consumer: c.consumers.at(-1) as MockGroupConsumer }
}

async function until(what: string, condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

/** `n` records of keys k0..k{keys-1} into a partition. */
function feed(c: MockCluster, partition: number, n: number, keys = 3, from = 0): void {
  c.produce(
    IN,
    partition,
    Array.from({ length: n }, (_, i) => ({ key: `p${partition}k${(from + i) % keys}`, value: String(from + i), timestamp: 1_000 + from + i })),
  )
}

/** Per key, the counts committed to OUT, in order. */
function outputs(c: MockCluster): Map<string, number[]> {
  const out = new Map<string, number[]>()
  for (const r of c.committed(OUT)) out.set(r.key, [...(out.get(r.key) ?? []), Number(r.value)])
  return out
}

/** Exactly once: each key's committed counts are 1, 2, ... its records, each once. */
function assertExactlyOnce(c: MockCluster, perKey: ReadonlyMap<string, number>): void {
  const out = outputs(c)
  for (const [key, n] of perKey) assert.deepEqual(out.get(key), Array.from({ length: n }, (_, i) => i + 1), `the committed counts of ${key}`)
  assert.deepEqual([...out.keys()].sort(), [...perKey.keys()].sort())
}

function keyCounts(partitions: ReadonlyArray<[partition: number, records: number]>, keys = 3): Map<string, number> {
  const m = new Map<string, number>()
  for (const [p, n] of partitions) for (let i = 0; i < n; i++) m.set(`p${p}k${i % keys}`, (m.get(`p${p}k${i % keys}`) ?? 0) + 1)
  return m
}

const committedOffset = (c: MockCluster, partition: number): number | undefined => c.groupOffsets.get(`${IN}:${partition}`)?.offset

const dirs = mkdtempSync(join(tmpdir(), 'punctual-kafka-local-'))
after(() => rmSync(dirs, { recursive: true, force: true }))
let dirCount = 0
const stateDir = (): string => join(dirs, `state-${++dirCount}`)

/** Where task `taskId`'s local state stands in its changelog topics, as its last local commit wrote. */
async function localChangelogPosition(dir: string, taskId: string): Promise<ChangelogPosition | undefined> {
  const store = CheckpointStore.open(dir)
  try {
    return store.load(taskId)?.changelog
  } finally {
    await store.close()
  }
}

/** The end offsets of task 0_0's changelog partitions (its store's, and punctual's own: clocks and positions). */
const changelogEnds = (c: MockCluster): Record<string, number> => Object.fromEntries([CHANGELOG, 'app-punctual-0-changelog'].map((t) => [t, c.partition(t, 0).length]))

/** The last restore report of a task in the log: records from local state and from the changelog's tail. */
function lastRestore(taskId: string): { local: number; tail: number } | { changelog: number } | undefined {
  const lines = log.filter((l) => l.includes(`task ${taskId} restored from`))
  const line = lines.at(-1)
  if (line === undefined) return undefined
  const both = /its local state \((\d+) records\) and the changelog's tail \((\d+) records\)/.exec(line)
  if (both !== null) return { local: Number(both[1]), tail: Number(both[2]) }
  const changelog = /its changelog topics \((\d+) records\)/.exec(line)
  return changelog === null ? undefined : { changelog: Number(changelog[1]) }
}

describe('KafkaRuntime on mock clients: rebalance and recovery', () => {
  it('assignment: the tasks restore, process, and commit their outputs with their offsets (exactly-once)', async () => {
    const c = cluster()
    feed(c, 0, 30)
    feed(c, 1, 20)
    const { rt, consumer } = await started(c, 'exactly_once_v2')
    consumer.groupAssigns(BOTH)
    await until('both partitions are committed', () => committedOffset(c, 0) === 30 && committedOffset(c, 1) === 20)
    assert.deepEqual(rt.taskIds().sort(), ['0_0', '0_1'])
    await rt.stop()
    assertExactlyOnce(c, keyCounts([[0, 30], [1, 20]]))
  })

  it('revocation during a commit: the revocation waits for it, commits the revoked task, and its next owner goes on exactly once', async () => {
    const c = cluster()
    feed(c, 0, 10)
    feed(c, 1, 10)
    const { rt, consumer } = await started(c, 'exactly_once_v2')
    let release: (() => void) | undefined
    c.holds.set('commitTransaction', (r) => (release = r))
    consumer.groupAssigns(BOTH)
    await until('a commit is held', () => release !== undefined)
    feed(c, 0, 10, 3, 10)
    await until('the new records are processed', () => rt.metrics().processedRecords === 30)
    consumer.groupRevokes([{ topic: IN, partition: 0 }])
    await new Promise((resolve) => setTimeout(resolve, 50))
    assert.ok(consumer.assignment.has(`${IN}:0`), 'the partition stays assigned while the commit in flight is held')
    ;(release as () => void)()
    await until('the partition is unassigned', () => !consumer.assignment.has(`${IN}:0`))
    assert.equal(committedOffset(c, 0), 20, "the revoked task's last position is committed before its partition goes")
    assert.deepEqual(rt.taskIds(), ['0_1'])
    const other = await started(c, 'exactly_once_v2')
    other.consumer.groupAssigns([{ topic: IN, partition: 0 }])
    feed(c, 0, 5, 3, 20)
    await until('the new owner committed the new records', () => committedOffset(c, 0) === 25)
    await other.rt.stop()
    await rt.stop()
    assertExactlyOnce(c, keyCounts([[0, 25], [1, 10]]))
  })

  it('lost tasks under exactly-once: the open transaction, holding their output, is aborted before anything commits', async () => {
    const c = cluster()
    // One commit when the first records come, then none for an hour: later output stays in the open transaction.
    const { rt, consumer } = await started(c, 'exactly_once_v2', { commitIntervalMs: 3_600_000 })
    consumer.groupAssigns(BOTH)
    feed(c, 0, 2)
    await until('the first records are processed', () => rt.metrics().processedRecords === 2)
    feed(c, 0, 10, 3, 2)
    feed(c, 1, 6)
    await until('the records are processed', () => rt.metrics().processedRecords === 18)
    await until('their output is in the open transaction', () => c.openRecords(OUT) >= 16)
    const committedBefore = outputs(c)
    const commitsBefore = c.events.filter((e) => e.startsWith('commit ')).length
    consumer.lose()
    await until('the lost tasks are closed', () => rt.taskIds().length === 0)
    await until('the transaction is aborted', () => c.openRecords(OUT) === 0)
    await rt.stop()
    assert.deepEqual(outputs(c), committedBefore, 'nothing of the lost tasks was committed after the loss')
    const after = c.events.filter((e) => e.startsWith('commit ')).slice(commitsBefore)
    assert.ok(after.every((e) => e.startsWith('commit 0 ')), `no transaction with records committed after the loss: ${after.join(' | ')}`)
    const other = await started(c, 'exactly_once_v2')
    other.consumer.groupAssigns(BOTH)
    await until('the new owner committed everything', () => committedOffset(c, 0) === 12 && committedOffset(c, 1) === 6)
    await other.rt.stop()
    assertExactlyOnce(c, keyCounts([[0, 12], [1, 6]]))
  })

  it('exactly-once, offsets the group refuses because it dropped this member (the consumer told nothing): the tasks are lost, the consumer joins again, and the output stays exactly once', async () => {
    const c = cluster()
    const { rt, consumer } = await started(c, 'exactly_once_v2')
    consumer.groupAssigns(BOTH)
    feed(c, 0, 6)
    feed(c, 1, 4)
    await until('the first records are committed', () => committedOffset(c, 0) === 6 && committedOffset(c, 1) === 4)
    assert.equal(consumer.joins, 1)
    // The group dropped the member (a broker restart, heartbeats missed): librdkafka reports no lost
    // assignment, and only a transaction's offsets tell, refused with ILLEGAL_GENERATION.
    consumer.fenced = true
    feed(c, 0, 6, 3, 6)
    await until('the consumer left the group and joined it again', () => consumer.joins === 2)
    await until('the tasks are closed', () => rt.taskIds().length === 0)
    assert.equal(consumer.assignment.size, 0, 'the partitions the group took are unassigned')
    assert.equal(rt.state, 'RUNNING')
    assert.equal(c.openRecords(OUT), 0, "the refused transaction's output is aborted")
    // The group assigns the partitions to the member that joined: the tasks restore and go on.
    consumer.groupAssigns(BOTH)
    feed(c, 1, 2, 3, 4)
    await until('every record is committed', () => committedOffset(c, 0) === 12 && committedOffset(c, 1) === 6)
    await rt.stop()
    assertExactlyOnce(c, keyCounts([[0, 12], [1, 6]]))
  })

  it('exactly-once, a revocation whose commit the group refuses because it dropped this member: the tasks are lost, the consumer joins again, the instance keeps running, and the output stays exactly once', async () => {
    const c = cluster()
    // No commit of the loop's own for an hour: the revocation's is the one the group refuses.
    const { rt, consumer } = await started(c, 'exactly_once_v2', { commitIntervalMs: 3_600_000 })
    consumer.groupAssigns(BOTH)
    feed(c, 0, 8)
    feed(c, 1, 4)
    await until('the records are processed', () => rt.metrics().processedRecords === 12)
    consumer.fenced = true
    // The revocation commits the revoked task; the group refuses its offsets (ILLEGAL_GENERATION).
    consumer.groupRevokes([{ topic: IN, partition: 0 }])
    await until('the consumer left the group and joined it again', () => consumer.joins === 2)
    await until('the tasks are closed', () => rt.taskIds().length === 0)
    assert.equal(rt.state, 'RUNNING')
    assert.equal(c.openRecords(OUT), 0, "the refused transaction's output is aborted")
    consumer.groupAssigns(BOTH)
    await until('the tasks are back', () => rt.taskIds().length === 2)
    await until('every record is processed again', () => rt.metrics().processedRecords >= 24)
    // The stop commits them.
    await rt.stop()
    assert.equal(committedOffset(c, 0), 8)
    assert.equal(committedOffset(c, 1), 4)
    assertExactlyOnce(c, keyCounts([[0, 8], [1, 4]]))
  })

  it('exactly-once, a stop whose last commit the group refuses because it dropped this member: the transaction is aborted, the stop ends cleanly, and the output stays exactly once', async () => {
    const c = cluster()
    const { rt, consumer } = await started(c, 'exactly_once_v2', { commitIntervalMs: 3_600_000 })
    consumer.groupAssigns(BOTH)
    feed(c, 0, 8)
    feed(c, 1, 4)
    await until('the records are processed', () => rt.metrics().processedRecords === 12)
    assert.ok(c.openRecords(OUT) > 0, 'their output waits in the open transaction')
    // A broker away past the session timeout: the group dropped the member, and the stop's commit is refused.
    consumer.fenced = true
    await rt.stop()
    assert.equal(rt.state, 'NOT_RUNNING')
    assert.equal(c.openRecords(OUT), 0, "the refused transaction's output is aborted")
    assert.equal(committedOffset(c, 0), undefined)
    // The next owner processes every record from the last commit: exactly once.
    const next = await started(c, 'exactly_once_v2')
    next.consumer.groupAssigns(BOTH)
    await until('every record is committed', () => committedOffset(c, 0) === 8 && committedOffset(c, 1) === 4)
    await next.rt.stop()
    assertExactlyOnce(c, keyCounts([[0, 8], [1, 4]]))
  })

  it('a fenced producer is replaced: its transaction is aborted, the tasks go back to their last commit, and the output stays exactly once', async () => {
    const c = cluster()
    feed(c, 0, 10)
    const { rt, consumer } = await started(c, 'exactly_once_v2')
    consumer.groupAssigns(BOTH)
    await until('the first records are committed', () => committedOffset(c, 0) === 10)
    const producersBefore = c.events.filter((e) => e === 'producer created').length
    // Another producer took the transactional id (what a zombie's successor does): this one is fenced.
    const fenced = c.lastProducer() as MockProducer
    fenced.fenced = true
    fenced.emit('event.error', { message: 'Local: This instance has been fenced by a newer instance', code: -144, isFatal: true })
    feed(c, 0, 10, 3, 10)
    feed(c, 1, 7)
    await until('everything is committed', () => committedOffset(c, 0) === 20 && committedOffset(c, 1) === 7)
    assert.equal(c.events.filter((e) => e === 'producer created').length, producersBefore + 1, 'one new producer replaced the fenced one')
    assert.equal(rt.state, 'RUNNING')
    await rt.stop()
    assertExactlyOnce(c, keyCounts([[0, 20], [1, 7]]))
  })

  it('a failed transaction is aborted, its records are processed again, and the output stays exactly once', async () => {
    const c = cluster()
    const { rt, consumer } = await started(c, 'exactly_once_v2')
    consumer.groupAssigns(BOTH)
    feed(c, 0, 10)
    await until('the first records are committed', () => committedOffset(c, 0) === 10)
    c.failures.set('commitTransaction', { message: 'Broker: Producer attempted a transactional operation in an invalid state', code: 48, isTxnRequiresAbort: true })
    feed(c, 0, 8, 3, 10)
    feed(c, 1, 9)
    await until('everything is committed', () => committedOffset(c, 0) === 18 && committedOffset(c, 1) === 9)
    assert.ok(c.events.some((e) => e.startsWith('abort ') && !e.startsWith('abort 0 ')), `the failed transaction was aborted: ${c.events.join(' | ')}`)
    assert.equal(rt.state, 'RUNNING')
    await rt.stop()
    assertExactlyOnce(c, keyCounts([[0, 18], [1, 9]]))
  })

  it('a transaction whose offsets request timed out is aborted and the producer replaced, so the late request cannot land in the next transaction (librdkafka has no KIP-890)', async () => {
    const c = cluster()
    const { rt, consumer } = await started(c, 'exactly_once_v2')
    consumer.groupAssigns(BOTH)
    feed(c, 0, 10)
    await until('the first records are committed', () => committedOffset(c, 0) === 10)
    const producersBefore = c.events.filter((e) => e === 'producer created').length
    const old = c.lastProducer() as MockProducer
    let aborted = 0
    c.holds.set('abortTransaction', (release) => {
      aborted++
      release()
    })
    c.failures.set('sendOffsetsToTransaction', { message: 'Local: Timed out', code: -185 })
    feed(c, 0, 8, 3, 10)
    feed(c, 1, 9)
    await until('everything is committed', () => committedOffset(c, 0) === 18 && committedOffset(c, 1) === 9)
    assert.equal(aborted, 1, 'the transaction was aborted')
    assert.equal(c.events.filter((e) => e === 'producer created').length, producersBefore + 1, 'then one new producer replaced the producer')
    assert.ok(old.fenced, "the new producer's initialization fenced the old one")
    assert.equal(rt.state, 'RUNNING')
    await rt.stop()
    assertExactlyOnce(c, keyCounts([[0, 18], [1, 9]]))
  })

  it('at least once, a record the producer gave up on (the cluster away past message.timeout.ms) stops the instance with an error naming the cluster', async () => {
    const c = cluster()
    const { rt, consumer } = await started(c, 'at_least_once')
    consumer.groupAssigns(BOTH)
    const failed = new Promise<Error>((resolve) => rt.on('error', resolve))
    ;(c.lastProducer() as MockProducer).emit('delivery-report', { message: 'Local: Message timed out', code: -192 }, { topic: OUT, partition: 1 })
    const err = await failed
    assert.match(err.message, /a record could not be written to out-1: Local: Message timed out \(the Kafka cluster at mock:9092 did not take it within the producer's message.timeout.ms\)/)
    assert.equal(rt.state, 'ERROR')
  })

  it('a restore interrupted by a revocation stops, and restores again in full when the task comes back', async () => {
    const c = cluster()
    feed(c, 0, 300, 100)
    const first = await started(c, 'exactly_once_v2')
    first.consumer.groupAssigns([{ topic: IN, partition: 0 }])
    await until('the first owner committed', () => committedOffset(c, 0) === 300)
    await first.rt.stop()
    c.restoresStalled = true
    const { rt, consumer } = await started(c, 'exactly_once_v2')
    consumer.groupAssigns([{ topic: IN, partition: 0 }])
    await until('the task restores', () => rt.restoreProgress().some((r) => r.taskId === '0_0'))
    consumer.groupRevokes([{ topic: IN, partition: 0 }])
    await until('the partition is unassigned', () => !consumer.assignment.has(`${IN}:0`))
    assert.deepEqual(rt.restoreProgress(), [], 'the restore stopped')
    assert.deepEqual(rt.taskIds(), [])
    c.restoresStalled = false
    feed(c, 0, 100, 100, 300)
    consumer.groupAssigns([{ topic: IN, partition: 0 }])
    await until('the new records are committed', () => committedOffset(c, 0) === 400)
    await rt.stop()
    assertExactlyOnce(c, keyCounts([[0, 400]], 100))
  })

  it('at least once, a new owner claims its tasks: a paused previous owner that commits late never wins over it at a restore', async () => {
    const c = cluster()
    // The zombie: one commit when the first records come, then none for an hour, until it stops.
    const zombie = await started(c, 'at_least_once', { commitIntervalMs: 3_600_000 })
    zombie.consumer.groupAssigns([{ topic: IN, partition: 0 }])
    feed(c, 0, 5, 1)
    await until('the zombie processed the first records', () => zombie.rt.metrics().processedRecords === 5)
    feed(c, 0, 2, 1, 5)
    await until('the zombie processed two more', () => zombie.rt.metrics().processedRecords === 7)
    assert.ok((committedOffset(c, 0) ?? 0) <= 5, 'the two are not committed')
    // It pauses past its session timeout: the group fences it and gives its partition to another member.
    zombie.consumer.fenced = true
    zombie.consumer.stalled = true
    const owner = await started(c, 'at_least_once')
    owner.consumer.groupAssigns([{ topic: IN, partition: 0 }])
    await until('the new owner claimed the task', () => parseCommitMark(c.groupOffsets.get(`${IN}:0`)?.metadata) !== undefined)
    const claim = parseCommitMark(c.groupOffsets.get(`${IN}:0`)?.metadata)
    assert.equal(epochOf(claim?.n ?? 0), 1, 'the claim opens epoch 1')
    feed(c, 0, 3, 1, 7)
    await until('the new owner committed every record', () => committedOffset(c, 0) === 10)
    await owner.rt.stop()
    // The zombie resumes and commits its state (count 7) after the new owner's (count 10); the group refuses its offsets.
    const owned = c.committed(CHANGELOG).length
    await zombie.rt.stop()
    assert.ok(c.committed(CHANGELOG).length > owned, "the zombie's records follow the new owner's in the changelog")
    const restored = await started(c, 'at_least_once')
    restored.consumer.groupAssigns([{ topic: IN, partition: 0 }])
    await until('the task runs', () => restored.rt.taskIds().includes('0_0'))
    const count = restored.rt.store('counts', QueryableStoreTypes.keyValueStore<string, number>()).get('p0k0')
    assert.equal(count, 10, "the restored count is the new owner's, not the zombie's late one")
    assert.ok((parseCommitMark(c.groupOffsets.get(`${IN}:0`)?.metadata)?.n ?? 0) >= 2 * EPOCH_SIZE, 'the third owner claimed epoch 2')
  })

  it('an instance of another topology under the same applicationId is refused, naming both', async () => {
    const c = cluster()
    const { consumer } = await started(c, 'at_least_once')
    consumer.groupAssigns(BOTH)
    const other = new KafkaRuntime(counting('other-counts'), withClientSupplier({ applicationId: 'app', bootstrapServers: 'mock:9092', logger }, c.supplier()))
    await assert.rejects(other.start(), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'INVALID_TOPOLOGY')
      assert.match(err.message, /applicationId "app": the group's running instances run a different topology/)
      return true
    })
    assert.equal(other.state, 'ERROR')
    const same = await started(c, 'at_least_once')
    assert.equal(same.rt.state, 'RUNNING', 'an instance of the same topology joins')
  })

  for (const guarantee of ['exactly_once_v2', 'at_least_once'] as const) {
    it(`${guarantee}: keyed state comes back from the state directory a key at a time: a restart reads none of it up front, and every count goes on`, async () => {
      const c = cluster()
      const dir = stateDir()
      feed(c, 0, 30)
      const first = await started(c, guarantee, { stateDir: dir, topology: keyedCounting() })
      first.consumer.groupAssigns([{ topic: IN, partition: 0 }])
      await until('the first run committed', () => committedOffset(c, 0) === 30)
      await first.rt.stop()
      feed(c, 0, 30, 3, 30)
      const second = await started(c, guarantee, { stateDir: dir, topology: keyedCounting() })
      second.consumer.groupAssigns([{ topic: IN, partition: 0 }])
      await until('the second run committed', () => committedOffset(c, 0) === 60)
      await second.rt.stop()
      // Only the task's stream time and position: the 3 keys' value and map entries stay on disk.
      assert.deepEqual(lastRestore('0_0'), { local: 2, tail: 0 })
      const counts = outputs(c)
      for (const key of ['p0k0', 'p0k1', 'p0k2']) assert.deepEqual(guarantee === 'exactly_once_v2' ? counts.get(key) : [...new Set(counts.get(key))], Array.from({ length: 20 }, (_, i) => i + 1), key)
    })

    it(`${guarantee}: keyed state that keeps one key in memory: the others leave after each commit and are read back from the state directory, and every count goes on`, async () => {
      const c = cluster()
      const { rt, consumer } = await started(c, guarantee, { stateDir: stateDir(), topology: keyedCounting(1) })
      consumer.groupAssigns([{ topic: IN, partition: 0 }])
      for (let batch = 0; batch < 10; batch++) {
        feed(c, 0, 6, 3, batch * 6)
        await until(`batch ${batch} is committed`, () => committedOffset(c, 0) === (batch + 1) * 6)
      }
      await rt.stop()
      const counts = outputs(c)
      for (const key of ['p0k0', 'p0k1', 'p0k2']) assert.deepEqual(guarantee === 'exactly_once_v2' ? counts.get(key) : [...new Set(counts.get(key))], Array.from({ length: 20 }, (_, i) => i + 1), key)
    })

    it(`${guarantee}: a restart on its own state directory reads only the changelog after its last local commit; an older local state reads the longer tail`, async () => {
      const c = cluster()
      const dir = stateDir()
      feed(c, 0, 30)
      const first = await started(c, guarantee, { stateDir: dir })
      first.consumer.groupAssigns([{ topic: IN, partition: 0 }])
      await until('the first run committed', () => committedOffset(c, 0) === 30)
      await first.rt.stop()
      assert.deepEqual(lastRestore('0_0'), { changelog: 0 })
      // Counted offsets: the changelog's records and, exactly-once, one marker per transaction that wrote to it.
      assert.deepEqual((await localChangelogPosition(dir, '0_0'))?.offsets, changelogEnds(c))

      // As the state directory stood before the second run's commits: an instance killed after them on Kafka and before them here.
      const older = stateDir()
      cpSync(dir, older, { recursive: true })
      feed(c, 0, 30, 3, 30)
      const second = await started(c, guarantee, { stateDir: dir })
      second.consumer.groupAssigns([{ topic: IN, partition: 0 }])
      await until('the second run committed', () => committedOffset(c, 0) === 60)
      await second.rt.stop()
      const fromLocal = lastRestore('0_0')
      assert.ok(fromLocal !== undefined && 'local' in fromLocal && fromLocal.local > 0, `restored from local state: ${JSON.stringify(fromLocal)}`)
      // The persistent store's 3 entries stay on disk, where it reads them: only the task's stream time and position are read.
      assert.equal(fromLocal.local, 2, 'the persistent store is not loaded')
      assert.equal(fromLocal.tail, 0, 'nothing after the last local commit')
      assert.deepEqual((await localChangelogPosition(dir, '0_0'))?.offsets, changelogEnds(c))
      const changelogAfterSecond = c.committed(CHANGELOG).length

      feed(c, 0, 30, 3, 60)
      const third = await started(c, guarantee, { stateDir: older })
      third.consumer.groupAssigns([{ topic: IN, partition: 0 }])
      await until('the third run committed', () => committedOffset(c, 0) === 90)
      const counts = third.rt.store('counts', QueryableStoreTypes.keyValueStore<string, number>())
      assert.deepEqual([counts.get('p0k0'), counts.get('p0k1'), counts.get('p0k2')], [30, 30, 30])
      await third.rt.stop()
      const fromOlder = lastRestore('0_0')
      assert.ok(fromOlder !== undefined && 'tail' in fromOlder && fromOlder.tail > 0, `the tail holds the second run's commits: ${JSON.stringify(fromOlder)}`)
      assert.ok(fromOlder.tail <= changelogAfterSecond, 'not the whole changelog')
      assert.deepEqual((await localChangelogPosition(older, '0_0'))?.offsets, changelogEnds(c))
      if (guarantee === 'exactly_once_v2') assertExactlyOnce(c, keyCounts([[0, 90]]))
    })
  }
})
