import type * as ConfluentKafka from '@confluentinc/kafka-javascript'
import { PunctualError } from '../errors.js'

/** The Kafka client punctual runs on: Confluent's, on librdkafka (an optional peer dependency). */
export type KafkaClient = typeof ConfluentKafka

export const KAFKA_CLIENT = '@confluentinc/kafka-javascript'

/**
 * How to install the client. Where its install cannot download the prebuilt binary (from GitHub),
 * `CKJS_LINKING=dynamic` builds the bundled librdkafka against the system's OpenSSL and zlib instead (a
 * C++ toolchain is needed; a few minutes).
 */
export const KAFKA_CLIENT_INSTALL = `npm install ${KAFKA_CLIENT} (where its prebuilt binary cannot be downloaded: CKJS_LINKING=dynamic npm install ${KAFKA_CLIENT})`

let loaded: Promise<KafkaClient> | undefined

/**
 * Loads the Kafka client on first use, so that the core installs and runs without it; fails with the
 * command that installs it when it is missing.
 */
export function loadKafkaClient(): Promise<KafkaClient> {
  loaded ??= loadOptional<KafkaClient>(KAFKA_CLIENT, 'the Kafka runtime', KAFKA_CLIENT_INSTALL)
  return loaded
}

/** Imports an optional dependency `name` that `feature` needs; a missing one is a DEPENDENCY_MISSING error naming `install`. */
export async function loadOptional<T>(name: string, feature: string, install: string): Promise<T> {
  try {
    return (await import(name)) as T
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    // Only the package itself missing; one of its own dependencies missing is another problem.
    if ((code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') || !(err as Error).message.includes(`'${name}'`)) throw err
    throw new PunctualError('DEPENDENCY_MISSING', `${feature} needs ${name}, which is not installed: ${install}`, { cause: err })
  }
}
