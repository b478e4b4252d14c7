import { PunctualError } from '../errors.js'
import type { ClientSettings } from './client-supplier.js'
import { KAFKA_CLIENT } from './client.js'
import { saslMechanismSetting } from './wire-security.js'

/** The librdkafka feature (its `builtin.features`) each SASL mechanism needs. */
const MECHANISM_FEATURE: Readonly<Record<string, string>> = {
  GSSAPI: 'sasl_gssapi',
  PLAIN: 'sasl_plain',
  'SCRAM-SHA-256': 'sasl_scram',
  'SCRAM-SHA-512': 'sasl_scram',
  OAUTHBEARER: 'sasl_oauthbearer',
}

/** What a build needs for a feature it lacks. */
const REMEDY: Readonly<Record<string, string>> = {
  ssl: 'TLS needs a librdkafka built with OpenSSL',
  sasl_gssapi: 'Kerberos needs a librdkafka built with Cyrus SASL (libsasl2)',
}

/** The build of the client: its librdkafka version and `builtin.features`. */
export interface ClientBuild {
  readonly librdkafkaVersion: string
  readonly features: readonly string[]
}

/**
 * Refuses client settings that need what this librdkafka build was compiled without (TLS, a SASL
 * mechanism), naming the setting and the build's features. librdkafka says so only when a client
 * connects, and the admin client, the first to connect, reports it as "Local: Erroneous state".
 */
export function checkClientFeatures(settings: ClientSettings, build: ClientBuild): void {
  const text = (name: string): string | undefined => {
    const v = settings[name]
    return typeof v === 'string' ? v : undefined
  }
  const need = (feature: string, why: string): void => {
    if (build.features.includes(feature)) return
    const remedy = REMEDY[feature]
    throw new PunctualError(
      'INVALID_CONFIG',
      `KafkaRuntime: ${why}, but the librdkafka ${build.librdkafkaVersion} of ${KAFKA_CLIENT} installed here was built without "${feature}" (its builtin.features: ${build.features.join(', ')})${remedy === undefined ? '' : `; ${remedy}`}`,
    )
  }
  const protocol = (text('security.protocol') ?? 'plaintext').toLowerCase()
  if (protocol === 'ssl' || protocol === 'sasl_ssl') need('ssl', `"security.protocol" is ${protocol}`)
  if (protocol !== 'sasl_plaintext' && protocol !== 'sasl_ssl') return
  const given = saslMechanismSetting(settings)
  if (given === undefined) {
    need('sasl_gssapi', `"security.protocol" is ${protocol} and "sasl.mechanisms" is not set, so librdkafka would use GSSAPI (Kerberos)`)
    return
  }
  const { setting, mechanism } = given
  const known = Object.keys(MECHANISM_FEATURE).find((m) => m === mechanism.toUpperCase())
  if (known === undefined) return // one librdkafka may know and punctual does not: librdkafka judges it
  // librdkafka compares mechanism names as written: "plain" is no mechanism it has.
  if (known !== mechanism) throw new PunctualError('INVALID_CONFIG', `KafkaRuntime: "${setting}" is ${JSON.stringify(mechanism)}: librdkafka knows the mechanism as ${known}, in capitals`)
  need(MECHANISM_FEATURE[known] as string, `"${setting}" is ${known}`)
}
