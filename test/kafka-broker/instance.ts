// One instance of the tests' application in a process of its own, so a test can kill it with SIGKILL,
// pause it with SIGSTOP or interrupt it with SIGINT (processes.ts starts and watches it):
//   node --import tsx test/kafka-broker/instance.ts APP INPUT OUTPUT GUARANTEE NAME [WORKLOAD [COMMIT_INTERVAL_MS]]
// WORKLOAD is `windowed` (windowedFinal from INPUT to OUTPUT, the default), `counts` (counts per key from
// INPUT to OUTPUT, in the store "counts"), `padded` (values joined per key, workload.ts) or `flights` (the flights demo on topics named INPUT + its
// topic names; OUTPUT unused). COMMIT_INTERVAL_MS is 100 by default.
// It prints a JSON line every 200 ms ({ processed, tasks, restoring, standbys, state, positions: each task's next
// offset of each input partition, with `counts` the store's entries, up to 10,000, once none of its tasks restores, and the heap used in bytes }), and stops cleanly (rt.stop()) on SIGTERM or SIGINT. Its log
// goes to stderr: the runtime's info log, or its debug log with PUNCTUAL_KAFKA_TEST_DEBUG=1.
import { createConsoleLogger, QueryableStoreTypes } from '../../src/index.js'
import type { ProcessingGuarantee } from '../../src/kafka/config.js'
import { KafkaRuntime } from '../../src/kafka/kafka-runtime.js'
import { confluentClientSupplier, withClientSupplier } from '../../src/kafka/client-supplier.js'
import type { ClientError, KafkaClientSupplier } from '../../src/kafka/client-supplier.js'
import { bootstrapServers } from './cluster.js'
import { counts, padded, PARTITIONS, windowedFinal } from './workload.js'
import { flightsTopology } from '../../demo/flights/topology.js'

const [app, input, output, guarantee, name = '', workload = 'windowed', commitInterval = '100'] = process.argv.slice(2) as [string, string, string, ProcessingGuarantee, string?, string?, string?]
const debug = process.env.PUNCTUAL_KAFKA_TEST_DEBUG === '1'
const logger = createConsoleLogger({ level: debug ? 'debug' : 'info', write: (line) => process.stderr.write(`[${name}] ${line}\n`) })
// PUNCTUAL_KAFKA_TEST_RDKAFKA_DEBUG=cgrp,fetch: librdkafka's own debug contexts for the consumer, in the same log.
const rdkafkaDebug = process.env.PUNCTUAL_KAFKA_TEST_RDKAFKA_DEBUG
// PUNCTUAL_KAFKA_TEST_STATE_DIR: the runtime's state directory (processes.ts sets it from `stateDir`).
const stateDir = process.env.PUNCTUAL_KAFKA_TEST_STATE_DIR
// PUNCTUAL_KAFKA_TEST_KILL_AFTER_COMMIT=N: the process kills itself (SIGKILL) once the Nth commit after
// it runs every task of the workload (PARTITIONS of them: it is the only instance) is complete on Kafka (the transaction committed, or at least once the group
// took the offsets), before the runtime hears of it: before the commit's local half (processes.ts sets
// it from `killAfterCommit`).
const killAfterCommit = Number(process.env.PUNCTUAL_KAFKA_TEST_KILL_AFTER_COMMIT ?? 0)
// PUNCTUAL_KAFKA_TEST_BUFFERED: the runtime's bufferedRecordsPerPartition (processes.ts sets it).
const buffered = process.env.PUNCTUAL_KAFKA_TEST_BUFFERED
// PUNCTUAL_KAFKA_TEST_COMMIT_MAX_RECORDS: the runtime's commitMaxRecords (processes.ts sets it).
const commitMaxRecords = process.env.PUNCTUAL_KAFKA_TEST_COMMIT_MAX_RECORDS
const topology = workload === 'flights' ? flightsTopology({ progressStartMs: 0, topicPrefix: input }) : workload === 'counts' ? counts(input, output) : workload === 'padded' ? padded(input, output) : windowedFinal(input, output)
const config = {
  applicationId: app,
  bootstrapServers: bootstrapServers(),
  processingGuarantee: guarantee,
  commitIntervalMs: Number(commitInterval),
  logger,
  ...(rdkafkaDebug === undefined ? {} : { consumer: { debug: rdkafkaDebug } }),
  ...(stateDir === undefined ? {} : { stateDir }),
  ...(buffered === undefined ? {} : { bufferedRecordsPerPartition: Number(buffered) }),
  ...(commitMaxRecords === undefined ? {} : { commitMaxRecords: Number(commitMaxRecords) }),
  // PUNCTUAL_KAFKA_TEST_DIRECT_FETCH=0: librdkafka fetches the input (as without @platformatic/kafka).
  ...(process.env.PUNCTUAL_KAFKA_TEST_DIRECT_FETCH === '0' ? { directFetch: false } : {}),
  // PUNCTUAL_KAFKA_TEST_GROUP_PROTOCOL=streams: the instances share the tasks through a streams group (KIP-1071); a consumer group otherwise.
  groupProtocol: process.env.PUNCTUAL_KAFKA_TEST_GROUP_PROTOCOL === 'streams' ? ('streams' as const) : ('consumer' as const),
}
const rt = new KafkaRuntime(topology, killAfterCommit > 0 ? withClientSupplier(config, killingAfterCommit(await confluentClientSupplier(), killAfterCommit)) : config)
rt.on('error', (err) => {
  process.stderr.write(`[${name}] instance failed: ${err.stack ?? err.message}\n`)
  process.exit(1)
})

/** Up to this many entries, the reports carry the store's entries: more would cost each report its size. */
const REPORTED_ENTRIES = 10_000

/** The store's entries while every task of this instance runs (undefined while one restores, when not running, or past REPORTED_ENTRIES). */
function store(): Record<string, number> | undefined {
  if (workload !== 'counts' || rt.state !== 'RUNNING' || rt.restoreProgress().length > 0) return undefined
  try {
    const counts = rt.store('counts', QueryableStoreTypes.keyValueStore<string, number>())
    return counts.approximateNumEntries() > REPORTED_ENTRIES ? undefined : Object.fromEntries(counts.all())
  } catch {
    return undefined
  }
}

const report = (): void => {
  const metrics = rt.metrics()
  const positions = Object.fromEntries(metrics.tasks.flatMap((t) => t.inputs.map((i) => [`${i.topic}-${i.partition}`, i.position])))
  const restoring = rt.restoreProgress().map((r) => `${r.taskId}:${r.restored}/${r.remaining ?? '?'}`)
  process.stdout.write(`${JSON.stringify({ processed: metrics.processedRecords, tasks: rt.taskIds(), restoring, standbys: rt.standbyProgress(), state: rt.state, positions, store: store(), heapUsed: process.memoryUsage().heapUsed })}\n`)
}
// Installed before the start, so that a signal while the instance joins its group stops it cleanly too.
// The reports go on while it stops: a stop that hangs shows as PENDING_SHUTDOWN.
let stopping = false
const stop = (signal: NodeJS.Signals): void => {
  if (stopping) return
  stopping = true
  process.stderr.write(`[${name}] ${signal}: stopping (state ${rt.state})\n`)
  rt.stop().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`[${name}] stop failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
      process.exit(1)
    },
  )
}
process.once('SIGTERM', () => stop('SIGTERM'))
process.once('SIGINT', () => stop('SIGINT'))
await rt.start()
setInterval(report, 200)

/**
 * Confluent's clients, with the process killed (SIGKILL) once the `n`th commit is complete on Kafka: in
 * the callback of the producer's `commitTransaction` (exactly-once) or in the consumer's report of an
 * offset commit the group took (at least once; the claim of a task counts too), before the runtime's
 * own code runs.
 */
function killingAfterCommit(base: KafkaClientSupplier, n: number): KafkaClientSupplier {
  // Every task of the workload (the group may assign an instance's partitions in more than one step).
  const restored = (): boolean => rt.state === 'RUNNING' && rt.taskIds().length >= PARTITIONS && rt.restoreProgress().length === 0
  let commits = 0
  const committed = (err: ClientError | null | undefined): void => {
    // Counted once every task runs: not the claims and commits while tasks restore.
    if (err || !restored()) return
    if (++commits < n) return
    process.stderr.write(`[${name}] killed after commit ${commits}, before its local half\n`)
    process.kill(process.pid, 'SIGKILL')
  }
  return {
    ...base,
    getProducer: (settings) => {
      const producer = base.getProducer(settings)
      const commit = producer.commitTransaction.bind(producer)
      producer.commitTransaction = (timeoutMs, callback) =>
        commit(timeoutMs, (err) => {
          committed(err)
          callback(err)
        })
      return producer
    },
    getConsumer: (settings) => {
      const consumer = base.getConsumer(settings)
      const on = consumer.on.bind(consumer) as (event: string, listener: (...args: unknown[]) => void) => unknown
      ;(consumer as { on: unknown }).on = (event: string, listener: (...args: unknown[]) => void) =>
        on(event, event !== 'offset.commit' ? listener : (...args: unknown[]) => {
          committed(args[0] as ClientError | null | undefined)
          listener(...args)
        })
      return consumer
    },
  }
}
