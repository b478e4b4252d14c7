import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { KafkaRuntime } from '../../src/kafka/kafka-runtime.js'
import { restartBroker, startBroker, stopBroker } from '../../scripts/kafka-broker.mjs'
import { TestCluster } from './cluster.js'
import { keptLog } from './kept-log.js'
import { transactionsReport } from './transactions.js'
import { embedded, lines, PARTITIONS, records, until, windowedFinal } from './workload.js'

// A broker of its own, which it stops and starts again mid-run (the other tests share theirs).
// The runtime's log is printed when a test fails (PUNCTUAL_KAFKA_TEST_DEBUG=1: at debug level, as it comes).
const { logger, printingOnFailure: printingLogOnFailure } = keptLog()
describe('KafkaRuntime across a broker restart', () => {
  let broker: { bootstrap: string; dir: string }
  let cluster: TestCluster

  before(async () => {
    broker = await startBroker()
    cluster = await TestCluster.connect(broker.bootstrap)
  })

  after(async () => {
    await cluster?.close()
    if (broker !== undefined) await stopBroker(broker.dir)
  })

  for (const guarantee of ['exactly_once_v2', 'at_least_once'] as const) {
    const exactlyOnce = guarantee === 'exactly_once_v2'
    it(`${guarantee}: the broker stops for 12 s mid-run and starts again; ${exactlyOnce ? 'the committed output equals a single embedded run' : 'no final window of a single embedded run is missing'}`, () =>
      printingLogOnFailure(async () => {
        const name = `br-${guarantee}`
        await cluster.createTopic(`${name}-in`, PARTITIONS)
        await cluster.createTopic(`${name}-out`, PARTITIONS)
        const first = records(4000)
        const second = records(4000, 4000)
        const expected = await embedded([...first, ...second])
        const errors: Error[] = []
        const rt = new KafkaRuntime(windowedFinal(`${name}-in`, `${name}-out`), { applicationId: `${name}-app`, bootstrapServers: broker.bootstrap, groupProtocol: 'consumer', processingGuarantee: guarantee, commitIntervalMs: 100, logger })
        rt.on('error', (e) => {
          logger.error({ err: e }, 'the runtime failed')
          errors.push(e)
        })
        await cluster.produce(`${name}-in`, PARTITIONS, first)
        await rt.start()
        try {
          await until('the first half is processed', () => rt.metrics().processedRecords >= first.length)
          // Longer than the transaction timeout (10 s): under exactly-once, records of the open
          // transaction time out, and the runtime aborts it and puts its tasks back to their last commit.
          // The test's own admin client leaves meanwhile (it would log every failed reconnection).
          await cluster.close()
          await stopBroker(broker.dir, { keep: true })
          await sleep(12_000)
          await restartBroker(broker.dir)
          cluster = await TestCluster.connect(broker.bootstrap)
          await cluster.produce(`${name}-in`, PARTITIONS, second)
          // Records processed again after a lost assignment count twice: wait for the output instead.
          const window = (line: string): string => line.slice(0, line.indexOf('='))
          let missing = expected.length
          await until(
            'the output holds every final window',
            async () => {
              const seen = new Set(lines(await cluster.readAll(`${name}-out`, PARTITIONS)).map(window))
              missing = expected.filter((l) => !seen.has(window(l))).length
              return errors.length > 0 || missing === 0
            },
            // The runtime may wait up to its task timeout (300 s) for the group to answer after the restart.
            330_000,
            () => `${missing} of ${expected.length} windows missing`,
          )
        } finally {
          await rt.stop().catch((e: unknown) => errors.push(e as Error))
        }
        const out = lines(await cluster.readAll(`${name}-out`, PARTITIONS))
        // A transaction the broker leaves pending (its markers never written, or a hanging transaction)
        // keeps the group's offsets from ever being stable; the runtime then stops after its task timeout
        // rather than guess, as Kafka Streams does. What it committed must still be right: no window
        // twice, none with another count.
        // The coordinator's own answer says so (UNSTABLE_OFFSET_COMMIT), and the broker's tools show the transaction.
        if (exactlyOnce && errors.length > 0 && errors.every((e) => /were not answered in \d+ s \(last: .*UNSTABLE_OFFSET_COMMIT.*\): a transaction holding offsets of the group is still pending/.test(e.message))) {
          console.log(`the broker left a transaction pending after its restart: the runtime stopped after its task timeout (${errors[0]!.message.slice(0, 80)}...); ${out.length} of ${expected.length} final windows were committed; ${transactionsReport(broker.bootstrap)}`)
          assert.equal(new Set(out).size, out.length, 'no final window committed twice')
          assert.deepEqual(out.filter((l) => !expected.includes(l)), [], 'every committed window is one of a single embedded run')
          return
        }
        assert.deepEqual(errors, [])
        if (exactlyOnce) assert.deepEqual(out, expected)
        else assert.deepEqual([...new Set(out)].sort(), expected, 'every final window, some possibly twice')
      }),
    )
  }
})
