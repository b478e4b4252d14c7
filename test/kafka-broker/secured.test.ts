import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { KafkaRuntime } from '../../src/kafka/kafka-runtime.js'
import type { KafkaRuntimeConfig } from '../../src/kafka/config.js'
import { startBroker, stopBroker } from '../../scripts/kafka-broker.mjs'
import type { SecuredListener } from '../../scripts/kafka-broker.mjs'
import { TestCluster } from './cluster.js'
import { keptLog } from './kept-log.js'
import { embedded, lines, PARTITIONS, records, until, windowedFinal } from './workload.js'

// A broker of its own that also listens with SASL_SSL (a self-signed certificate, SASL PLAIN and
// SCRAM-SHA-512): every connection of the runtime goes there, librdkafka's and punctual's own (the
// direct fetch, the streams group). The test's own clients use the broker's plaintext listener.
const log = keptLog()
const { logger, printingOnFailure: printingLogOnFailure } = log

describe('KafkaRuntime on a cluster with TLS and SASL', () => {
  let broker: { dir: string; bootstrap: string; secured: SecuredListener }
  let cluster: TestCluster

  before(async () => {
    broker = await startBroker({ secured: true })
    cluster = await TestCluster.connect(broker.bootstrap)
  })

  after(async () => {
    await cluster?.close()
    if (broker !== undefined) await stopBroker(broker.dir)
  })

  const secured = (mechanism: string, password = broker.secured.password): Pick<KafkaRuntimeConfig, 'bootstrapServers' | 'client'> => ({
    bootstrapServers: broker.secured.bootstrap,
    client: { 'security.protocol': 'SASL_SSL', 'ssl.ca.location': broker.secured.caLocation, 'sasl.mechanisms': mechanism, 'sasl.username': broker.secured.username, 'sasl.password': password },
  })

  // The first runs on the fresh cluster (no offsets topic yet) without groupProtocol: the start asks the
  // cluster, over the secured listener, and chooses a streams group.
  const cases = [
    { groupProtocol: undefined, chosen: 'streams', guarantee: 'exactly_once_v2', mechanism: 'PLAIN' },
    { groupProtocol: 'consumer', chosen: 'consumer', guarantee: 'exactly_once_v2', mechanism: 'SCRAM-SHA-512' },
  ] as const
  for (const { groupProtocol, chosen, guarantee, mechanism } of cases) {
    it(`a ${chosen} group${groupProtocol === undefined ? ' (the default on a fresh cluster)' : ''} under ${guarantee}, SASL/${mechanism} over TLS: the input is fetched by punctual's own requests over the secured listener, and the committed output equals a single embedded run`, () =>
      printingLogOnFailure(async () => {
        const name = `sec-${chosen}`
        await cluster.createTopic(`${name}-in`, PARTITIONS)
        await cluster.createTopic(`${name}-out`, PARTITIONS)
        const input = records(4000)
        await cluster.produce(`${name}-in`, PARTITIONS, input)
        const expected = await embedded(input)
        const rt = new KafkaRuntime(windowedFinal(`${name}-in`, `${name}-out`), { applicationId: `${name}-app`, ...secured(mechanism), processingGuarantee: guarantee, ...(groupProtocol === undefined ? {} : { groupProtocol }), commitIntervalMs: 100, logger })
        try {
          await rt.start()
          await until('every record is processed', () => rt.metrics().processedRecords >= input.length)
        } finally {
          await rt.stop()
        }
        assert.ok(log.lines.some((l) => l.includes(`started: joining a ${chosen} group`)), `a ${chosen} group`)
        assert.ok(log.lines.some((l) => l.includes(`input fetched with punctual's own Fetch requests (SASL/${mechanism} over TLS)`)), 'the direct fetch, secured')
        assert.deepEqual(lines(await cluster.readAll(`${name}-out`, PARTITIONS)), expected)
      }))
  }

  it('a wrong password: the start fails, saying the authentication failed', () =>
    printingLogOnFailure(async () => {
      await cluster.createTopic('sec-denied-in', PARTITIONS)
      await cluster.createTopic('sec-denied-out', PARTITIONS)
      const rt = new KafkaRuntime(windowedFinal('sec-denied-in', 'sec-denied-out'), { applicationId: 'sec-denied-app', ...secured('SCRAM-SHA-512', 'wrong'), logger })
      await assert.rejects(rt.start(), /[Aa]uthentication failed/)
      assert.equal(rt.state, 'ERROR')
    }))
})
