// Whether the Kafka client (@confluentinc/kafka-javascript, an optional dependency) is installed here, and
// which tsconfig type-checks the project: tsconfig.json with the client's own types, or, without the client,
// tsconfig.no-kafka-client.json (src/kafka/client-absent.d.ts stands in for its types, all `any`).
import { existsSync } from 'node:fs'
import { fileURLToPath, URL } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))

export const KAFKA_CLIENT = '@confluentinc/kafka-javascript'

export function kafkaClientInstalled() {
  return existsSync(`${root}node_modules/${KAFKA_CLIENT}/index.d.ts`)
}

export function typecheckConfig() {
  return kafkaClientInstalled() ? 'tsconfig.json' : 'tsconfig.no-kafka-client.json'
}

/** How to install the client here, where its prebuilt binary cannot be downloaded (Debian's Node.js headers in /usr). */
export const KAFKA_CLIENT_HOWTO = `the Kafka client ${KAFKA_CLIENT} is not installed (it is an optional dependency, and its install fails where its prebuilt binary cannot be downloaded and its native build cannot run). Install it with: CKJS_LINKING=dynamic npm_config_nodedir=/usr npm install --no-save ${KAFKA_CLIENT}  (a C++ toolchain, OpenSSL and zlib headers; npm_config_nodedir names where the Node.js headers are: /usr for Debian's nodejs package, else leave it out)`
