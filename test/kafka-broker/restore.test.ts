import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { PunctualError, QueryableStoreTypes, Serdes, silentLogger, StreamsBuilder } from '../../src/index.js'
import type { Logger } from '../../src/util/logger.js'
import { KafkaRuntime } from '../../src/kafka/kafka-runtime.js'
import { COMMIT_HEADER, commitHeaderValue, parseCommitMark } from '../../src/kafka/commit-numbers.js'
import { changelogTopic } from '../../src/kafka/topics.js'
import { CheckpointStore } from '../../src/state/checkpoint-store.js'
import { bootstrapServers, TestCluster } from './cluster.js'
import { onSharedBroker } from './shared-broker.js'
import { until } from './workload.js'

const KEYS = Number(process.env.PUNCTUAL_KAFKA_RESTORE_KEYS ?? 1_000_000)
/** Keys of the test of an instance that comes back with its state directory (more to measure its restore). */
const LOCAL_KEYS = Number(process.env.PUNCTUAL_KAFKA_LOCAL_KEYS ?? 20_000)
const str = { keySerde: Serdes.String(), valueSerde: Serdes.String() }

/** Counts per key in a table; only counts above 1 reach the output, so a first pass over new keys writes nothing. */
function countsAboveOne(input: string, output: string) {
  const b = new StreamsBuilder()
  b.stream<string, string>(input, str)
    .groupByKey()
    .count({ name: 'counts' })
    .toStream()
    .filter((_k, v) => v !== null && v > 1)
    .mapValues((v) => String(v))
    .to(output, str)
  return b.build()
}

/**
 * A logger that hands each restore report (the info line with taskId, records and ms) to `onRestored`,
 * with the records of them its local checkpoint gave.
 */
function restoreLogger(onRestored: (taskId: string, records: number, ms: number, local: number, skipped: number) => void): Logger {
  const logger: Logger = {
    ...silentLogger,
    info: (fields: unknown) => {
      const f = fields as { taskId?: unknown; records?: unknown; ms?: unknown; local?: unknown; skipped?: unknown }
      if (typeof f.taskId === 'string' && typeof f.records === 'number' && typeof f.ms === 'number') onRestored(f.taskId, f.records, f.ms, f.local as number, f.skipped as number)
    },
    child: () => logger,
  }
  return logger
}

/** The number the group's next at-least-once commit of the input's partition 0 would carry. */
async function nextCommitNumber(cluster: { committedMarks(group: string, topic: string): Promise<Array<string | undefined>> }, group: string, topic: string): Promise<number> {
  const [metadata] = await cluster.committedMarks(group, topic)
  return (parseCommitMark(metadata)?.n ?? 0) + 1
}

/** A task's local state reaches the end of each of its changelog partitions (read once the instance stopped). */
async function assertLocalStateAtEnd(stateDir: string, taskId: string, applicationId: string): Promise<void> {
  const store = CheckpointStore.open(stateDir)
  const offsets = store.load(taskId)?.changelog?.offsets
  await store.close()
  const partition = Number(taskId.slice(taskId.indexOf('_') + 1))
  const cluster = await TestCluster.connect()
  try {
    const ends: Record<string, number> = {}
    for (const topic of Object.keys(offsets ?? {})) ends[topic] = ((await cluster.offsets(topic))[partition] as { high: number }).high
    assert.ok(offsets !== undefined && Object.keys(offsets).length > 0, `task ${taskId} has local state with changelog offsets`)
    assert.ok(Object.keys(offsets).every((t) => t.startsWith(applicationId)), `the task's changelog topics: ${Object.keys(offsets).join(', ')}`)
    assert.deepEqual(offsets, ends, 'the counted offsets are the changelog partitions’ ends')
  } finally {
    await cluster.close()
  }
}

describe('KafkaRuntime: a big task moves', () => {
  const broker = onSharedBroker('rs')
  const { run } = broker

  it(`a task holding ${KEYS.toLocaleString('en')} keys is restored from its changelog by another instance, every count intact`, async () => {
    const input = `${run}-in`
    const output = `${run}-out`
    await broker.cluster.createTopic(input, 1)
    await broker.cluster.createTopic(output, 1)
    // Values are not empty: the client reads an empty value as null, which an aggregation skips.
    const keys = Array.from({ length: KEYS }, (_, i) => ({ key: `key-${i}`, value: 'v', timestamp: 1_700_000_000_000 + i }))
    await broker.cluster.produce(input, 1, keys)

    const config = { applicationId: `${run}-app`, bootstrapServers: bootstrapServers(), groupProtocol: 'consumer' as const, processingGuarantee: 'at_least_once' as const, commitIntervalMs: 1000 }
    const first = new KafkaRuntime(countsAboveOne(input, output), { ...config, logger: silentLogger })
    broker.track(first)
    await first.start()
    await until('the first instance counted every key once', () => first.metrics().processedRecords >= KEYS, 600_000)
    await first.stop()

    const restores: Array<{ taskId: string; records: number; ms: number }> = []
    const second = new KafkaRuntime(countsAboveOne(input, output), { ...config, logger: restoreLogger((taskId, records, ms) => restores.push({ taskId, records, ms })) })
    broker.track(second)
    await second.start()
    // While the task restores here, a query of a key it holds fails and asks for a retry; it never says "absent".
    const counts = second.store('counts', QueryableStoreTypes.keyValueStore<string, number>())
    const answers = new Set<string>()
    await until(
      'the second instance restored the task',
      () => {
        // Before the group assigns the task, this instance holds none of the store's keys.
        if (second.restoreProgress().length === 0) return restores.length === 1
        try {
          answers.add(`get=${String(counts.get('key-1'))}`)
        } catch (err) {
          answers.add(err instanceof PunctualError ? `${err.code} retriable=${err.retriable}: ${err.message}` : String(err))
        }
        return restores.length === 1
      },
      600_000,
    )
    assert.deepEqual([...answers].filter((a) => a !== 'get=1'), ['STORE_NOT_READY retriable=true: store "counts" is not ready on this instance: task 0_0 holding it is restoring; retry the query shortly'], 'answers during the restore')
    assert.equal(counts.get('key-1'), 1, 'restored, the key is answered')
    assert.equal(counts.get('no-such-key'), undefined, 'restored, a key nobody counted is absent')
    const [restore] = restores as [{ taskId: string; records: number; ms: number }]
    process.stdout.write(`# restored task ${restore.taskId}: ${restore.records} changelog records in ${restore.ms} ms\n`)
    assert.equal(restore.taskId, '0_0')
    assert.ok(restore.records >= KEYS, `${restore.records} changelog records restored, at least one per key`)

    // Every key seen again: each count goes on from the restored one.
    const again = [0, 1, Math.floor(KEYS / 2), KEYS - 1].map((i) => ({ key: `key-${i}`, value: 'v', timestamp: 1_700_000_000_000 + KEYS + i }))
    await broker.cluster.produce(input, 1, again)
    await until('the second instance counted them', () => second.metrics().processedRecords >= again.length, 120_000)
    await second.stop()
    const out = (await broker.cluster.readAll(output, 1)).flat().map((r) => `${r.key}=${r.value}`)
    assert.deepEqual(out.sort(), again.map((r) => `${r.key}=2`).sort())
  })

  it('an instance that comes back with its state directory reads its local state, then only the changelog written since', async () => {
    const input = `${run}-local-in`
    const output = `${run}-local-out`
    await broker.cluster.createTopic(input, 1)
    await broker.cluster.createTopic(output, 1)
    const n = LOCAL_KEYS
    const at = (i: number, pass: number) => ({ key: `key-${i}`, value: 'v', timestamp: 1_700_000_000_000 + pass * n + i })
    const dir = mkdtempSync(join(tmpdir(), 'punctual-local-'))
    const stateDir = join(dir, 'state')
    const config = { applicationId: `${run}-local-app`, bootstrapServers: bootstrapServers(), groupProtocol: 'consumer' as const, processingGuarantee: 'exactly_once_v2' as const }
    const restores: Array<{ records: number; local: number; ms: number }> = []
    const logger = restoreLogger((_t, records, ms, local) => restores.push({ records, local, ms }))
    const firstRestores: number[] = []
    try {
      // Every key counted once, on an instance with a state directory: its commits keep the task there.
      await broker.cluster.produce(input, 1, Array.from({ length: n }, (_, i) => at(i, 0)))
      const first = new KafkaRuntime(countsAboveOne(input, output), { ...config, stateDir, logger: restoreLogger((_t, records) => firstRestores.push(records)) })
      broker.track(first)
      await first.start()
      await until('the first run counted every key', () => first.metrics().processedRecords >= n, 300_000)
      await first.stop()
      assert.deepEqual(firstRestores, [0], 'nothing to restore the first time')
      // Each commit left the task's state in the state directory, with offsets counted, not asked for: they reach the changelogs' ends.
      await assertLocalStateAtEnd(stateDir, '0_0', `${run}-local-app`)

      // Meanwhile another instance (no state directory of its own) runs the task: 100 counts go to 2.
      const other = new KafkaRuntime(countsAboveOne(input, output), { ...config, logger })
      broker.track(other)
      await other.start()
      await until('the other instance restored the task', () => restores.length === 1, 300_000)
      assert.equal(restores[0]?.local, 0, 'the other instance has no local state')
      await broker.cluster.produce(input, 1, Array.from({ length: 100 }, (_, i) => at(i, 1)))
      await until('the other instance counted them', () => other.metrics().processedRecords >= 100, 120_000)
      await other.stop()

      // Back with its state directory: its local state, then the other instance's changes from the changelog.
      const back = new KafkaRuntime(countsAboveOne(input, output), { ...config, stateDir, logger })
      broker.track(back)
      await back.start()
      await until('the instance that came back restored the task', () => restores.length === 2, 300_000)
      const { records, local, ms } = restores[1] as { records: number; local: number; ms: number }
      process.stdout.write(`# restored from local state: ${local} records, then ${records - local} from the changelog's tail, in ${ms} ms (the other instance, from the changelog: ${restores[0]?.records} records in ${restores[0]?.ms} ms)\n`)
      // The counts (a persistent store) stay on disk, where the store reads them: the restore reads only the task's clocks and positions.
      assert.ok(local > 0 && local < 10, `${local} records from local state: the task's own, none of the store's`)
      assert.ok(records - local >= 100 && records - local < 1_000, `${records - local} records from the changelog: the other instance's 100 counts and its clocks, not the whole changelog`)
      // Keys the other instance counted go to 3 (the tail was applied); a key only the local state knows goes to 2.
      const last = [...Array.from({ length: 100 }, (_, i) => at(i, 2)), at(n - 1, 2)]
      await broker.cluster.produce(input, 1, last)
      await until('the instance that came back counted them', () => back.metrics().processedRecords >= last.length, 120_000)
      await back.stop()
      await assertLocalStateAtEnd(stateDir, '0_0', `${run}-local-app`)
      const out = (await broker.cluster.readAll(output, 1)).flat().map((r) => `${r.key}=${r.value}`)
      const expected = [...Array.from({ length: 100 }, (_, i) => `key-${i}=2`), ...Array.from({ length: 100 }, (_, i) => `key-${i}=3`), `key-${n - 1}=2`]
      assert.deepEqual(out.sort(), expected.sort())
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('at least once, a restore leaves out changelog records of a commit the group does not name (one a crash cut short)', async () => {
    const input = `${run}-cut-in`
    const output = `${run}-cut-out`
    await broker.cluster.createTopic(input, 1)
    await broker.cluster.createTopic(output, 1)
    const config = { applicationId: `${run}-cut-app`, bootstrapServers: bootstrapServers(), groupProtocol: 'consumer' as const, processingGuarantee: 'at_least_once' as const }
    const at = (i: number, pass: number) => ({ key: `key-${i}`, value: 'v', timestamp: 1_700_000_000_000 + pass * 100 + i })
    // Ten keys counted twice: every count is 2, and the offsets of the last commit are the group's.
    await broker.cluster.produce(input, 1, [...Array.from({ length: 10 }, (_, i) => at(i, 0)), ...Array.from({ length: 10 }, (_, i) => at(i, 1))])
    const first = new KafkaRuntime(countsAboveOne(input, output), { ...config, logger: silentLogger })
    broker.track(first)
    await first.start()
    await until('the first instance counted the keys', () => first.metrics().processedRecords >= 20, 120_000)
    await first.stop()
    // What a crash during a commit's flush leaves: changelog records of a commit whose offsets never
    // reached the group (numbered just past the group's last commit, as the next commit would be).
    // Restored, these tombstones would reset key-0 and key-5 to nothing.
    const next = await nextCommitNumber(broker.cluster, `${config.applicationId}`, input)
    const cut = { [COMMIT_HEADER]: commitHeaderValue(next) }
    await broker.cluster.produce(changelogTopic(config.applicationId, 'counts'), 1, [
      { key: 'key-0', value: null, timestamp: 1, headers: cut },
      { key: 'key-5', value: null, timestamp: 1, headers: cut },
    ])

    const restores: Array<{ records: number; skipped: number }> = []
    const second = new KafkaRuntime(countsAboveOne(input, output), { ...config, logger: restoreLogger((_t, records, _ms, _local, skipped) => restores.push({ records, skipped })) })
    broker.track(second)
    await second.start()
    await until('the second instance restored the task', () => restores.length === 1, 120_000)
    assert.equal(restores[0]?.skipped, 2, 'the two records of the incomplete commit are left out')
    await broker.cluster.produce(input, 1, [at(0, 2), at(1, 2), at(2, 2)])
    await until('the second instance counted them', () => second.metrics().processedRecords >= 3, 120_000)
    await second.stop()
    const out = (await broker.cluster.readAll(output, 1)).flat().map((r) => `${r.key}=${r.value}`)
    assert.deepEqual(out.slice(-3).sort(), ['key-0=3', 'key-1=3', 'key-2=3'], 'every count went on from the last complete commit')

    // The second instance's commits are numbered past the cut one and keep its number void: a later
    // restore still leaves its records out, so key-5, which the second instance did not count again,
    // keeps its count.
    const third = new KafkaRuntime(countsAboveOne(input, output), { ...config, logger: restoreLogger((_t, records, _ms, _local, skipped) => restores.push({ records, skipped })) })
    broker.track(third)
    await third.start()
    await until('the third instance restored the task', () => restores.length === 2, 120_000)
    assert.equal(restores[1]?.skipped, 2, 'the cut commit stays left out')
    await broker.cluster.produce(input, 1, [at(5, 3)])
    await until('the third instance counted it', () => third.metrics().processedRecords >= 1, 120_000)
    await third.stop()
    const last = (await broker.cluster.readAll(output, 1)).flat().map((r) => `${r.key}=${r.value}`)
    assert.equal(last.at(-1), 'key-5=3')
  })
})
