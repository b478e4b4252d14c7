import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { Instance } from './processes.js'
import { onSharedBroker } from './shared-broker.js'
import { PADDED_VALUE_CHARS, paddedRound, PARTITIONS, until } from './workload.js'

/** Keys of the application (PUNCTUAL_KAFKA_DISK_KEYS to change). */
const KEYS = Number(process.env.PUNCTUAL_KAFKA_DISK_KEYS ?? 600_000)
/**
 * The heap the instance is given, in MB (`--max-old-space-size`); 8 MB of it hold the code of the
 * direct fetch's wire library (@platformatic/kafka).
 */
const HEAP_MB = Number(process.env.PUNCTUAL_KAFKA_DISK_HEAP_MB ?? 70)

describe('KafkaRuntime: state larger than the heap', () => {
  const broker = onSharedBroker('sd')
  const { run } = broker
  const dir = mkdtempSync(join(tmpdir(), 'punctual-state-on-disk-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  it(`an instance given a ${HEAP_MB} MB heap keeps ${KEYS.toLocaleString('en')} keys of ${PADDED_VALUE_CHARS * 2} characters (over 4x its heap) in a persistent store on disk, is killed with SIGKILL, restarts on its state directory, and every result is right`, async () => {
    const stateBytes = KEYS * PADDED_VALUE_CHARS * 2
    assert.ok(stateBytes >= 4 * HEAP_MB * 1024 * 1024, `the state (${stateBytes} bytes of values) is at least 4x the heap`)
    const input = `${run}-in`
    const output = `${run}-out`
    await broker.cluster.createTopic(input, PARTITIONS)
    await broker.cluster.createTopic(output, PARTITIONS)
    const stateDir = join(dir, 'instance')
    // Sized for the small heap, as the docs advise: few input records held ahead, and commits of at most
    // 10,000 records (each change waits in memory for its commit; here every record changes another key).
    const start = (name: string): Instance =>
      broker.spawned(new Instance(name, [`${run}-app`, input, output, 'exactly_once_v2'], 'padded', { stateDir, heapMb: HEAP_MB, bufferedRecordsPerPartition: 1000, commitMaxRecords: 10_000 }))
    const processedAll = (instance: Instance, offsets: number): boolean => {
      if (instance.exit !== undefined) throw new Error(`instance ${instance.name} ended (${instance.exit}):\n${instance.log()}`)
      return Object.values(instance.positions).reduce((n, p) => n + p, 0) >= offsets && instance.tasks.length === PARTITIONS
    }

    // Round 0: every key's first value, then a SIGKILL.
    const first = start('first')
    await broker.cluster.produce(input, PARTITIONS, paddedRound(0, KEYS))
    await until('the first round is processed', () => processedAll(first, KEYS), 300_000, () => first.log())
    // Past a commit of everything: the positions reported are those processed, a commit follows within its interval.
    await new Promise((resolve) => setTimeout(resolve, 3_000))
    first.kill('SIGKILL')
    await first.exited

    // Round 1, to an instance restarted on the same state directory (same heap): each key's second value.
    const second = start('second')
    await broker.cluster.produce(input, PARTITIONS, paddedRound(1, KEYS))
    await until('the second round is processed', () => processedAll(second, 2 * KEYS), 300_000, () => second.log())
    second.kill('SIGTERM')
    assert.equal(await second.exited, 0, second.log())

    const results = (await broker.cluster.readAll(output, PARTITIONS)).flat()
    const wrong = results.filter((r) => r.value !== `01${String.fromCharCode(97 + (Number(r.key.slice(1)) % 26))}${PADDED_VALUE_CHARS * 2}`)
    assert.deepEqual(wrong.slice(0, 5), [], `${wrong.length} results are wrong`)
    assert.equal(new Set(results.map((r) => r.key)).size, KEYS, 'a result for every key')
    assert.equal(results.length, KEYS, 'exactly one per key')
    const peak = Math.max(first.peakHeapUsed, second.peakHeapUsed)
    process.stderr.write(`state on disk: ${KEYS} keys, ${stateBytes} bytes of values, heap limit ${HEAP_MB} MB, most heap used ${(peak / 1048576).toFixed(1)} MB\n`)
    assert.ok(peak <= HEAP_MB * 1048576)
  })
})
