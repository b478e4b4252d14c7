import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { connectionSecurity, securityName, wireSecurity } from '../../src/kafka/wire-security.js'
import type { WireSecurityResult } from '../../src/kafka/wire-security.js'

/** Files as `wireSecurity` reads them: their content is their name, and a name starting with `missing` cannot be read. */
function readFile(path: string): Buffer {
  if (path.includes('missing')) throw new Error('ENOENT: no such file')
  if (path.endsWith('/')) throw Object.assign(new Error('EISDIR: illegal operation on a directory, read'), { code: 'EISDIR' })
  return Buffer.from(`<${path}>`)
}

const read = (settings: Record<string, string | number | boolean>): WireSecurityResult => wireSecurity(settings, readFile)

describe("the security of punctual's own connections, from librdkafka's settings", () => {
  it('is plaintext without a security.protocol, and with plaintext', () => {
    assert.deepEqual(read({}), { security: {} })
    assert.deepEqual(read({ 'security.protocol': 'PLAINTEXT', 'ssl.ca.location': 'missing.pem', 'sasl.mechanisms': 'GSSAPI' }), { security: {} })
  })

  it('takes TLS files and PEM strings, a key password, a PKCS#12 keystore, and the verification switches', () => {
    assert.deepEqual(read({ 'security.protocol': 'ssl', 'ssl.ca.location': '/ca.pem', 'ssl.certificate.location': '/cert.pem', 'ssl.key.location': '/key.pem', 'ssl.key.password': 'kp' }), {
      security: { tls: { ca: Buffer.from('</ca.pem>'), cert: Buffer.from('</cert.pem>'), key: Buffer.from('</key.pem>'), passphrase: 'kp' } },
    })
    assert.deepEqual(read({ 'security.protocol': 'SSL', 'ssl.ca.pem': 'CA', 'ssl.certificate.pem': 'CERT', 'ssl.key.pem': 'KEY', 'ssl.ca.location': 'missing.pem' }), { security: { tls: { ca: 'CA', cert: 'CERT', key: 'KEY' } } })
    assert.deepEqual(read({ 'security.protocol': 'SSL', 'ssl.keystore.location': '/client.p12', 'ssl.keystore.password': 'sp', 'ssl.cipher.suites': 'ECDHE-RSA-AES128-GCM-SHA256' }), {
      security: { tls: { pfx: Buffer.from('</client.p12>'), passphrase: 'sp', ciphers: 'ECDHE-RSA-AES128-GCM-SHA256' } },
    })
    // 'probe' is librdkafka's search for the system's CAs: Node's own public roots stand for it.
    assert.deepEqual(read({ 'security.protocol': 'SSL', 'ssl.ca.location': 'probe' }), { security: { tls: {} } })
    for (const off of [false, 'false', 'F', 0, '0']) assert.deepEqual(read({ 'security.protocol': 'SSL', 'enable.ssl.certificate.verification': off }), { security: { tls: { rejectUnauthorized: false } } }, String(off))
    assert.deepEqual(read({ 'security.protocol': 'SSL', 'enable.ssl.certificate.verification': 'true' }), { security: { tls: {} } })
    const none = read({ 'security.protocol': 'SSL', 'ssl.endpoint.identification.algorithm': 'none' })
    assert.ok('security' in none && typeof none.security.tls?.checkServerIdentity === 'function')
    assert.equal(none.security.tls.checkServerIdentity('other.host', {} as never), undefined)
    assert.deepEqual(read({ 'security.protocol': 'SSL', 'ssl.endpoint.identification.algorithm': 'https' }), { security: { tls: {} } })
  })

  it('takes SASL PLAIN and SCRAM, with or without TLS, and the setting sasl.mechanism as librdkafka does', () => {
    assert.deepEqual(read({ 'security.protocol': 'SASL_PLAINTEXT', 'sasl.mechanisms': 'PLAIN', 'sasl.username': 'u', 'sasl.password': 'p' }), { security: { sasl: { mechanism: 'PLAIN', username: 'u', password: 'p' } } })
    // As librdkafka: the one of the two names given last counts, and mechanism names are compared as written.
    assert.deepEqual(read({ 'security.protocol': 'SASL_PLAINTEXT', 'sasl.mechanisms': 'GSSAPI', 'sasl.mechanism': 'SCRAM-SHA-512', 'sasl.username': 'u', 'sasl.password': 'p' }), { security: { sasl: { mechanism: 'SCRAM-SHA-512', username: 'u', password: 'p' } } })
    assert.deepEqual(read({ 'security.protocol': 'SASL_PLAINTEXT', 'sasl.mechanism': 'plain', 'sasl.username': 'u', 'sasl.password': 'p' }), { unsupported: '"sasl.mechanism" is plain: punctual\'s own connections speak PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512' })
    assert.deepEqual(read({ 'security.protocol': 'sasl_ssl', 'sasl.mechanism': 'SCRAM-SHA-256', 'sasl.username': 'u', 'sasl.password': 'p' }), { security: { tls: {}, sasl: { mechanism: 'SCRAM-SHA-256', username: 'u', password: 'p' } } })
  })

  it('names what it cannot honour: Kerberos (librdkafka’s default mechanism), OAUTHBEARER, missing credentials, settings it does not read, unknown values', () => {
    assert.deepEqual(read({ 'security.protocol': 'SASL_SSL' }), { unsupported: '"sasl.mechanisms" is GSSAPI: punctual\'s own connections speak PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512' })
    assert.match((read({ 'security.protocol': 'SASL_SSL', 'sasl.mechanisms': 'OAUTHBEARER' }) as { unsupported: string }).unsupported, /"sasl.mechanisms" is OAUTHBEARER/)
    assert.deepEqual(read({ 'security.protocol': 'SASL_SSL', 'sasl.mechanisms': 'PLAIN', 'sasl.username': 'u' }), { unsupported: 'SASL/PLAIN without "sasl.username" and "sasl.password"' })
    assert.deepEqual(read({ 'security.protocol': 'SSL', 'ssl.crl.location': '/crl.pem' }), { unsupported: '"ssl.crl.location" is not a setting punctual\'s own connections read' })
    // Settings of a protocol not in use are not read, as by librdkafka.
    assert.deepEqual(read({ 'ssl.crl.location': '/crl.pem', 'sasl.kerberos.service.name': 'kafka' }), { security: {} })
    assert.deepEqual(read({ 'security.protocol': 'SSL', 'ssl.ca.location': '/etc/ssl/certs/' }), { unsupported: '"ssl.ca.location" names a directory (/etc/ssl/certs/)' })
    assert.deepEqual(read({ 'security.protocol': 'tls' }), { unsupported: '"security.protocol" is "tls"' })
    assert.deepEqual(read({ 'security.protocol': 'SSL', 'ssl.endpoint.identification.algorithm': 'x509' }), { unsupported: '"ssl.endpoint.identification.algorithm" is "x509"' })
    assert.deepEqual(read({ 'security.protocol': 'SSL', 'ssl.ca.location': '/a.pem,/b.pem' }), { unsupported: '"ssl.ca.location" names several files' })
  })

  it('says which file cannot be read', () => {
    assert.deepEqual(read({ 'security.protocol': 'SSL', 'ssl.key.location': '/missing/key.pem' }), { invalid: '"ssl.key.location": cannot read /missing/key.pem (ENOENT: no such file)' })
  })

  it('names the broker by SNI, as librdkafka does, unless the broker is an IP address', () => {
    const tls = { ca: 'CA' }
    assert.deepEqual(connectionSecurity({ tls }, 'b-1.kafka.example.com'), { tls, tlsServerName: 'b-1.kafka.example.com' })
    assert.deepEqual(connectionSecurity({ tls }, '127.0.0.1'), { tls })
    assert.deepEqual(connectionSecurity({ sasl: { mechanism: 'PLAIN', username: 'u', password: 'p' } }, 'h'), { sasl: { mechanism: 'PLAIN', username: 'u', password: 'p' } })
    assert.deepEqual(connectionSecurity(undefined, 'h'), {})
  })

  it('names the security in the start log', () => {
    assert.equal(securityName(undefined), 'plaintext')
    assert.equal(securityName({}), 'plaintext')
    assert.equal(securityName({ tls: {} }), 'TLS')
    assert.equal(securityName({ sasl: { mechanism: 'PLAIN', username: 'u', password: 'p' } }), 'SASL/PLAIN')
    assert.equal(securityName({ tls: {}, sasl: { mechanism: 'SCRAM-SHA-512', username: 'u', password: 'p' } }), 'SASL/SCRAM-SHA-512 over TLS')
  })
})
