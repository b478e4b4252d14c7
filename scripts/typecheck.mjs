#!/usr/bin/env node
// `npm run typecheck`: tsc over the whole project. Without the Kafka client installed, its types are stand-ins
// (scripts/kafka-client.mjs), and this says so.
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { kafkaClientInstalled, typecheckConfig } from './kafka-client.mjs'

if (!kafkaClientInstalled()) console.log('typecheck: the Kafka client is not installed; its types are stand-ins (tsconfig.no-kafka-client.json)')
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
const r = spawnSync(process.execPath, [tsc, '--noEmit', '-p', typecheckConfig()], { stdio: 'inherit' })
process.exit(r.status ?? 1)
