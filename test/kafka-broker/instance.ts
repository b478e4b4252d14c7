// One instance of the tests' application in a process of its own, so a test can kill it with SIGKILL:
//   node --import tsx test/kafka-broker/instance.ts APP INPUT OUTPUT GUARANTEE NAME [WORKLOAD]
// WORKLOAD is `windowed` (windowedFinal from INPUT to OUTPUT, the default) or `flights` (the flights demo
// on topics named INPUT + its topic names; OUTPUT unused).
// It prints a JSON line every 200 ms ({ processed, tasks, restoring }) and stops cleanly on SIGTERM.
import { createConsoleLogger, silentLogger } from '../../src/index.js'
import type { ProcessingGuarantee } from '../../src/kafka/config.js'
import { KafkaRuntime } from '../../src/kafka/kafka-runtime.js'
import { bootstrapServers } from './cluster.js'
import { windowedFinal } from './workload.js'
import { flightsTopology } from '../../demo/flights/topology.js'

const [app, input, output, guarantee, name = '', workload = 'windowed'] = process.argv.slice(2) as [string, string, string, ProcessingGuarantee, string?, string?]
// PUNCTUAL_KAFKA_TEST_DEBUG=1: the runtime's debug log on stderr, each line marked with the instance.
const logger = process.env.PUNCTUAL_KAFKA_TEST_DEBUG === '1' ? createConsoleLogger({ level: 'debug', write: (line) => process.stderr.write(`[${name}] ${line}\n`) }) : silentLogger
// PUNCTUAL_KAFKA_TEST_RDKAFKA_DEBUG=cgrp,fetch: librdkafka's own debug contexts for the consumer, in the same log.
const rdkafkaDebug = process.env.PUNCTUAL_KAFKA_TEST_RDKAFKA_DEBUG
const topology = workload === 'flights' ? flightsTopology({ progressStartMs: 0, topicPrefix: input }) : windowedFinal(input, output)
const rt = new KafkaRuntime(topology, { applicationId: app, bootstrapServers: bootstrapServers(), processingGuarantee: guarantee, commitIntervalMs: 100, logger, ...(rdkafkaDebug === undefined ? {} : { consumer: { debug: rdkafkaDebug } }) })
rt.on('error', (err) => {
  process.stderr.write(`instance failed: ${err.stack ?? err.message}\n`)
  process.exit(1)
})
// Installed before the start, so that a SIGTERM while the instance joins its group stops it cleanly too.
const reporting: { timer?: NodeJS.Timeout } = {}
process.once('SIGTERM', () => {
  clearInterval(reporting.timer)
  rt.stop().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`stop failed: ${String(err)}\n`)
      process.exit(1)
    },
  )
})
await rt.start()
const report = (): void => void process.stdout.write(`${JSON.stringify({ processed: rt.metrics().processedRecords, tasks: rt.taskIds(), restoring: rt.restoreProgress().map((r) => `${r.taskId}:${r.restored}/${r.remaining ?? '?'}`) })}\n`)
reporting.timer = setInterval(report, 200)
