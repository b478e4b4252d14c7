import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { checkClientFeatures } from '../../src/kafka/client-features.js'
import type { ClientBuild } from '../../src/kafka/client-features.js'
import { loadKafkaClient } from '../../src/kafka/client.js'
import { KafkaRuntime, silentLogger, Topology } from '../../src/index.js'

/** librdkafka's features on a build without Cyrus SASL (as Debian's toolchain builds it with no libsasl2). */
const noKerberos: ClientBuild = { librdkafkaVersion: '2.15.1', features: ['gzip', 'snappy', 'ssl', 'sasl', 'regex', 'lz4', 'sasl_plain', 'sasl_scram', 'plugins', 'sasl_oauthbearer'] }
const bare: ClientBuild = { librdkafkaVersion: '2.15.1', features: ['gzip', 'regex'] }

const refusal = (pattern: RegExp) => (err: unknown): boolean => {
  assert.equal((err as { code?: string }).code, 'INVALID_CONFIG')
  assert.match((err as Error).message, pattern)
  return true
}

describe('the client build checked against the security settings', () => {
  it('GSSAPI on a build without it is refused, naming the setting, the missing feature and what Kerberos needs', () => {
    assert.throws(
      () => checkClientFeatures({ 'security.protocol': 'SASL_PLAINTEXT', 'sasl.mechanisms': 'GSSAPI' }, noKerberos),
      refusal(/"sasl\.mechanisms" is GSSAPI, but the librdkafka 2\.15\.1 of @confluentinc\/kafka-javascript installed here was built without "sasl_gssapi" \(its builtin\.features: gzip, snappy, ssl, .*sasl_oauthbearer\); Kerberos needs a librdkafka built with Cyrus SASL \(libsasl2\)/),
    )
  })

  it('SASL with no mechanism is librdkafka\'s GSSAPI, and is refused saying so', () => {
    assert.throws(() => checkClientFeatures({ 'security.protocol': 'sasl_ssl' }, noKerberos), refusal(/"sasl\.mechanisms" is not set, so librdkafka would use GSSAPI/))
  })

  it('the mechanisms and TLS a build has pass, the protocol in any case; plaintext needs nothing', () => {
    for (const mechanism of ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', 'OAUTHBEARER']) {
      checkClientFeatures({ 'security.protocol': 'sasl_ssl', 'sasl.mechanisms': mechanism }, noKerberos)
      checkClientFeatures({ 'security.protocol': 'sasl_plaintext', 'sasl.mechanism': mechanism }, noKerberos)
    }
    checkClientFeatures({ 'security.protocol': 'SSL' }, noKerberos)
    checkClientFeatures({ 'security.protocol': 'sasl_plaintext', 'sasl.mechanisms': 'AWS_MSK_IAM' }, bare)
    checkClientFeatures({}, bare)
    checkClientFeatures({ 'security.protocol': 'plaintext', 'sasl.mechanisms': 'GSSAPI' }, bare)
  })

  it('of "sasl.mechanisms" and "sasl.mechanism" the one given last counts, as librdkafka applies them in order, and the message names it', () => {
    checkClientFeatures({ 'security.protocol': 'sasl_plaintext', 'sasl.mechanisms': 'GSSAPI', 'sasl.mechanism': 'PLAIN' }, noKerberos)
    assert.throws(
      () => checkClientFeatures({ 'security.protocol': 'sasl_plaintext', 'sasl.mechanisms': 'PLAIN', 'sasl.mechanism': 'GSSAPI' }, noKerberos),
      refusal(/^KafkaRuntime: "sasl\.mechanism" is GSSAPI, but/),
    )
  })

  it('a mechanism in small letters is refused: librdkafka compares the names as written', () => {
    assert.throws(
      () => checkClientFeatures({ 'security.protocol': 'sasl_ssl', 'sasl.mechanisms': 'scram-sha-256' }, noKerberos),
      refusal(/"sasl\.mechanisms" is "scram-sha-256": librdkafka knows the mechanism as SCRAM-SHA-256, in capitals/),
    )
  })

  it('TLS, SCRAM and OAUTHBEARER on a build without them are refused, each by its feature', () => {
    assert.throws(() => checkClientFeatures({ 'security.protocol': 'ssl' }, bare), refusal(/"security\.protocol" is ssl, .* without "ssl" .*; TLS needs a librdkafka built with OpenSSL/))
    assert.throws(() => checkClientFeatures({ 'security.protocol': 'sasl_plaintext', 'sasl.mechanisms': 'SCRAM-SHA-256' }, bare), refusal(/"sasl\.mechanisms" is SCRAM-SHA-256, .* without "sasl_scram"/))
    assert.throws(() => checkClientFeatures({ 'security.protocol': 'sasl_plaintext', 'sasl.mechanisms': 'OAUTHBEARER' }, bare), refusal(/without "sasl_oauthbearer"/))
  })

  it('a KafkaRuntime asked for a mechanism the installed client lacks fails its start with that refusal, before connecting', async (t) => {
    let client: { default: ClientBuild }
    try {
      client = (await loadKafkaClient()) as unknown as { default: ClientBuild }
    } catch (err) {
      // Not installed, or built for another Node.js (the CI's second Node runs the first one's build).
      return t.skip(`@confluentinc/kafka-javascript cannot be loaded here: ${(err as Error).message.split('\n')[0]}`)
    }
    const feature: Record<string, string> = { GSSAPI: 'sasl_gssapi', PLAIN: 'sasl_plain', 'SCRAM-SHA-256': 'sasl_scram', OAUTHBEARER: 'sasl_oauthbearer' }
    const lacking = Object.keys(feature).find((m) => !client.default.features.includes(feature[m]!))
    if (lacking === undefined) return t.skip('this build has every SASL mechanism')
    const topology = new Topology().addSource('in', 'in').addSink('out', 'out', {}, 'in')
    // Nothing listens on port 1: a start that tried to connect would fail on that instead.
    const rt = new KafkaRuntime(topology, { applicationId: 'features', bootstrapServers: 'localhost:1', client: { 'security.protocol': 'sasl_plaintext', 'sasl.mechanisms': lacking }, logger: silentLogger })
    await assert.rejects(rt.start(), refusal(new RegExp(`"sasl\\.mechanisms" is ${lacking}, but the librdkafka`)))
  })
})
