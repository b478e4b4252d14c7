import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { validateKafkaRuntimeConfig } from '../../src/kafka/config.js'
import { PunctualError } from '../../src/errors.js'
import { silentLogger } from '../../src/index.js'
import type { HostInfo } from '../../src/index.js'
import { clientIdWithServer, serverOfClientId } from '../../src/kafka/instance-metadata.js'

const base = { applicationId: 'app', bootstrapServers: 'localhost:9092', logger: silentLogger }

describe('KafkaRuntime config', () => {
  it("defaults as Kafka Streams: at_least_once with a 30 s commit interval, exactly_once_v2 with 100 ms", () => {
    const alos = validateKafkaRuntimeConfig(base)
    assert.equal(alos.processingGuarantee, 'at_least_once')
    assert.equal(alos.commitIntervalMs, 30_000)
    const eos = validateKafkaRuntimeConfig({ ...base, processingGuarantee: 'exactly_once_v2' })
    assert.equal(eos.commitIntervalMs, 100)
    assert.equal(eos.commitMaxRecords, 50_000)
    assert.equal(eos.repartitionPurgeIntervalMs, 30_000)
  })

  const refused: Array<[string, Record<string, unknown>, string]> = [
    ['a bad guarantee', { processingGuarantee: 'exactly_once' }, "processingGuarantee must be 'at_least_once' or 'exactly_once_v2', got \"exactly_once\""],
    ['bootstrap servers without a port', { bootstrapServers: 'localhost' }, 'bootstrapServers must be host:port'],
    ['an application id with a space', { applicationId: 'my app' }, 'applicationId must be'],
    ['a setting punctual owns', { consumer: { 'isolation.level': 'read_uncommitted' } }, 'consumer["isolation.level"]: punctual sets this itself'],
    ['the partition-EOF events the KIP-695 wait relies on', { consumer: { 'enable.partition.eof': false } }, 'consumer["enable.partition.eof"]: punctual sets this itself'],
    ['a setting that is not a scalar', { producer: { 'linger.ms': [5] } }, 'producer["linger.ms"] must be a string, number or boolean'],
    ['a commit interval of 0', { commitIntervalMs: 0 }, 'commitIntervalMs must be an integer >= 1, got 0'],
    ['a negative purge interval', { repartitionPurgeIntervalMs: -1 }, 'repartitionPurgeIntervalMs must be an integer >= 0, got -1'],
    ['an application server without a port', { applicationServer: 'localhost' }, 'applicationServer must be host:port, got "localhost"'],
    ['direct fetch with Kerberos', { directFetch: true, client: { 'security.protocol': 'SASL_SSL', 'sasl.mechanisms': 'GSSAPI' } }, 'directFetch: true, but "sasl.mechanisms" is GSSAPI'],
    ['a CA file that cannot be read', { client: { 'security.protocol': 'SSL', 'ssl.ca.location': '/nonexistent/ca.pem' } }, '"ssl.ca.location": cannot read /nonexistent/ca.pem'],
    ['direct fetch that is not a boolean', { directFetch: 'yes' }, 'directFetch must be a boolean, got "yes"'],
    ['an unknown group protocol', { groupProtocol: 'classic' }, `groupProtocol must be 'consumer' or 'streams', got "classic"`],
    ['a streams group without the direct fetch', { groupProtocol: 'streams', directFetch: false }, "groupProtocol 'streams' speaks to the group coordinator over the direct fetch's connections, but directFetch is false"],
    ['a streams group over OAUTHBEARER', { groupProtocol: 'streams', consumer: { 'security.protocol': 'SASL_SSL', 'sasl.mechanisms': 'OAUTHBEARER' } }, "groupProtocol 'streams' speaks to the group coordinator over the direct fetch's connections, but \"sasl.mechanisms\" is OAUTHBEARER"],
    ['an application server with a port out of range', { applicationServer: 'localhost:70000' }, 'applicationServer must be host:port, got "localhost:70000"'],
  ]
  it('takes the application server as host:port, and the group consumer carries it in its client id', () => {
    const server = validateKafkaRuntimeConfig({ ...base, applicationServer: 'app-1.internal:7070' }).applicationServer
    assert.deepEqual(server, { host: 'app-1.internal', port: 7070 })
    assert.deepEqual(serverOfClientId(clientIdWithServer('my-client', server as HostInfo)), server)
    assert.equal(serverOfClientId('my-client'), undefined)
    assert.equal(validateKafkaRuntimeConfig(base).applicationServer, undefined)
  })

  it('fetches directly, secured as the settings say, unless its connections cannot honour them (librdkafka then fetches)', () => {
    assert.equal(validateKafkaRuntimeConfig(base).directFetch, undefined)
    assert.equal(validateKafkaRuntimeConfig(base).wireSecurity?.tls, undefined)
    assert.equal(validateKafkaRuntimeConfig({ ...base, directFetch: false }).directFetch, false)
    assert.equal(validateKafkaRuntimeConfig({ ...base, client: { 'security.protocol': 'plaintext' } }).directFetch, undefined)
    // ssl.* settings without TLS in security.protocol are not used (as librdkafka): no file is read.
    assert.equal(validateKafkaRuntimeConfig({ ...base, consumer: { 'ssl.ca.location': '/nonexistent/ca.pem' } }).directFetch, undefined)
    const sasl = validateKafkaRuntimeConfig({ ...base, client: { 'security.protocol': 'SASL_SSL', 'sasl.mechanisms': 'SCRAM-SHA-512', 'sasl.username': 'u', 'sasl.password': 'p' }, consumer: { 'sasl.username': 'c' } })
    assert.equal(sasl.directFetch, undefined)
    assert.deepEqual(sasl.wireSecurity, { tls: {}, sasl: { mechanism: 'SCRAM-SHA-512', username: 'c', password: 'p' } })
    const kerberos = validateKafkaRuntimeConfig({ ...base, client: { 'security.protocol': 'SASL_PLAINTEXT', 'sasl.kerberos.service.name': 'kafka' } })
    assert.equal(kerberos.directFetch, false)
    assert.equal(kerberos.wireSecurity, undefined)
  })

  for (const [what, change, message] of refused) {
    it(`refuses ${what}, naming the setting and the value`, () => {
      assert.throws(
        () => validateKafkaRuntimeConfig({ ...base, ...change } as never),
        (err: unknown) => err instanceof PunctualError && err.code === 'INVALID_CONFIG' && err.message.includes(message),
      )
    })
  }
})
