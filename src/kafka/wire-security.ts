import { readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import type { ConnectionOptions as TlsOptions } from 'node:tls'
import type { KafkaClientSettings } from './config.js'

/**
 * The security of punctual's own connections (the direct fetch's, the streams group's), taken from the
 * librdkafka settings the rest of the runtime uses, so that one set of settings secures every
 * connection. `@platformatic/kafka`'s connections take Node's TLS options and SASL PLAIN or SCRAM.
 */
export interface WireSecurity {
  /** Node's TLS options; absent: plaintext. */
  readonly tls?: TlsOptions
  readonly sasl?: { readonly mechanism: 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512'; readonly username: string; readonly password: string }
}

/**
 * The security of the settings; or the first setting that punctual's connections cannot honour, with
 * why (librdkafka can); or a setting that is wrong for any client (a file that cannot be read).
 */
export type WireSecurityResult = { readonly security: WireSecurity } | { readonly unsupported: string } | { readonly invalid: string }

/** A setting wrong for any client, thrown from the reading of a file. */
class InvalidSetting extends Error {}
/** A setting librdkafka honours and punctual's connections do not (a CA directory), thrown from the reading of a file. */
class UnsupportedSetting extends Error {}

/** Settings read here; any other `ssl.*` or `sasl.*` setting is one punctual's connections would not honour. */
const READ = new Set([
  'security.protocol',
  'ssl.ca.location',
  'ssl.ca.pem',
  'ssl.certificate.location',
  'ssl.certificate.pem',
  'ssl.key.location',
  'ssl.key.pem',
  'ssl.key.password',
  'ssl.keystore.location',
  'ssl.keystore.password',
  'ssl.endpoint.identification.algorithm',
  'ssl.cipher.suites',
  'enable.ssl.certificate.verification',
  'sasl.mechanisms',
  'sasl.mechanism',
  'sasl.username',
  'sasl.password',
])

const MECHANISMS = new Set(['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'])

/**
 * Reads the librdkafka settings `settings` (`security.protocol`, `ssl.*`, `sasl.*`) as the security of a
 * `@platformatic/kafka` connection. Files named by `*.location` are read now, so a missing file is said
 * at the start. What cannot be honoured the same way (GSSAPI, OAUTHBEARER, a CA directory, a setting
 * not read here) is returned as `unsupported`, naming the setting.
 */
/**
 * The SASL mechanism librdkafka goes by, and the setting that gave it: "sasl.mechanism" is another name
 * of "sasl.mechanisms", and librdkafka applies settings in order, so the one given last wins. Undefined
 * when neither is set (librdkafka then uses GSSAPI).
 */
export function saslMechanismSetting(settings: Readonly<Record<string, unknown>>): { setting: string; mechanism: string } | undefined {
  let found: { setting: string; mechanism: string } | undefined
  for (const [setting, value] of Object.entries(settings)) {
    if ((setting === 'sasl.mechanisms' || setting === 'sasl.mechanism') && value !== undefined) found = { setting, mechanism: String(value) }
  }
  return found
}

export function wireSecurity(settings: KafkaClientSettings, readFile: (path: string) => Buffer = readFileSync): WireSecurityResult {
  try {
    return securityOf(settings, readFile)
  } catch (err) {
    if (err instanceof InvalidSetting) return { invalid: err.message }
    if (err instanceof UnsupportedSetting) return { unsupported: err.message }
    throw err
  }
}

function securityOf(settings: KafkaClientSettings, readFile: (path: string) => Buffer): WireSecurityResult {
  const text = (key: string): string | undefined => (settings[key] === undefined ? undefined : String(settings[key]))
  const protocol = (text('security.protocol') ?? 'plaintext').toLowerCase()
  if (!['plaintext', 'ssl', 'sasl_plaintext', 'sasl_ssl'].includes(protocol)) return { unsupported: `"security.protocol" is ${JSON.stringify(protocol)}` }
  // Only the settings of the protocol in use matter, as to librdkafka.
  const used = (k: string): boolean => (k.startsWith('ssl.') && protocol.endsWith('ssl')) || (k.startsWith('sasl.') && protocol.startsWith('sasl'))
  const unknown = Object.keys(settings).find((k) => used(k) && !READ.has(k))
  if (unknown !== undefined) return { unsupported: `"${unknown}" is not a setting punctual's own connections read` }
  let security: { tls?: TlsOptions; sasl?: WireSecurity['sasl'] } = {}
  if (protocol === 'ssl' || protocol === 'sasl_ssl') {
    const tls = tlsOptions(text, readFile)
    if (typeof tls === 'string') return { unsupported: tls }
    security = { tls }
  }
  if (protocol === 'sasl_plaintext' || protocol === 'sasl_ssl') {
    // librdkafka's default mechanism is GSSAPI; it compares mechanism names as written.
    const given = saslMechanismSetting(settings)
    const mechanism = given?.mechanism ?? 'GSSAPI'
    if (!MECHANISMS.has(mechanism)) return { unsupported: `"${given?.setting ?? 'sasl.mechanisms'}" is ${mechanism}: punctual's own connections speak PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512` }
    const username = text('sasl.username')
    const password = text('sasl.password')
    if (username === undefined || password === undefined) return { unsupported: `SASL/${mechanism} without "sasl.username" and "sasl.password"` }
    security = { ...security, sasl: { mechanism: mechanism as 'PLAIN', username, password } }
  }
  return { security }
}

/** Node's TLS options of the `ssl.*` settings, or why they cannot be. */
function tlsOptions(text: (key: string) => string | undefined, readFile: (path: string) => Buffer): TlsOptions | string {
  const file = (key: string): Buffer => {
    const path = text(key) as string
    try {
      return readFile(path)
    } catch (err) {
      if ((err as { code?: string }).code === 'EISDIR') throw new UnsupportedSetting(`"${key}" names a directory (${path})`)
      throw new InvalidSetting(`"${key}": cannot read ${path} (${(err as Error).message})`)
    }
  }
  const tls: { -readonly [K in keyof TlsOptions]: TlsOptions[K] } = {}
  const ca = text('ssl.ca.location')
  // librdkafka's 'probe' looks for the system's CA bundle; Node's default CAs are the same public roots.
  if (text('ssl.ca.pem') !== undefined) tls.ca = text('ssl.ca.pem')
  else if (ca !== undefined && ca !== 'probe') {
    if (ca.includes(',')) return `"ssl.ca.location" names several files`
    tls.ca = file('ssl.ca.location')
  }
  if (text('ssl.certificate.pem') !== undefined) tls.cert = text('ssl.certificate.pem')
  else if (text('ssl.certificate.location') !== undefined) tls.cert = file('ssl.certificate.location')
  if (text('ssl.key.pem') !== undefined) tls.key = text('ssl.key.pem')
  else if (text('ssl.key.location') !== undefined) tls.key = file('ssl.key.location')
  if (text('ssl.key.password') !== undefined) tls.passphrase = text('ssl.key.password')
  if (text('ssl.keystore.location') !== undefined) {
    tls.pfx = file('ssl.keystore.location')
    if (text('ssl.keystore.password') !== undefined) tls.passphrase = text('ssl.keystore.password')
  }
  if (text('ssl.cipher.suites') !== undefined) tls.ciphers = text('ssl.cipher.suites')
  const verify = text('enable.ssl.certificate.verification')
  // librdkafka's false: false, f, 0.
  if (verify !== undefined && ['false', 'f', '0'].includes(verify.toLowerCase())) tls.rejectUnauthorized = false
  const identification = (text('ssl.endpoint.identification.algorithm') ?? 'https').toLowerCase()
  if (identification === 'none') tls.checkServerIdentity = () => undefined
  else if (identification !== 'https') return `"ssl.endpoint.identification.algorithm" is ${JSON.stringify(identification)}`
  return tls
}

/** The connection options of `security` for broker `host`: SNI names the broker, as librdkafka does, unless it is an IP address. */
export function connectionSecurity(security: WireSecurity | undefined, host: string): object {
  if (security === undefined) return {}
  return {
    ...(security.tls === undefined ? {} : { tls: security.tls, ...(isIP(host) === 0 ? { tlsServerName: host } : {}) }),
    ...(security.sasl === undefined ? {} : { sasl: security.sasl }),
  }
}

/** The security as a log line says it: `plaintext`, `TLS`, `SASL/PLAIN`, `SASL/SCRAM-SHA-512 over TLS`. */
export function securityName(security: WireSecurity | undefined): string {
  if (security?.sasl !== undefined) return `SASL/${security.sasl.mechanism}${security.tls === undefined ? '' : ' over TLS'}`
  return security?.tls === undefined ? 'plaintext' : 'TLS'
}
