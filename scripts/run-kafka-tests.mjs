#!/usr/bin/env node
// `npm run test:kafka`: the tests under test/kafka-broker against a real Kafka broker. With PUNCTUAL_KAFKA_BOOTSTRAP
// set they use that broker; otherwise this starts one (scripts/kafka-broker.mjs: Kafka from Maven Central,
// jars cached outside the clone), runs the tests, and stops it. Extra arguments narrow the files. A test that never
// settles fails after 15 minutes, and a file whose tests are done exits even if a failed test left a client open.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startBroker, stopBroker } from './kafka-broker.mjs'
import { KAFKA_CLIENT_HOWTO, kafkaClientInstalled } from './kafka-client.mjs'

if (!kafkaClientInstalled()) {
  console.error(`test:kafka: ${KAFKA_CLIENT_HOWTO}`)
  process.exit(1)
}

const filters = process.argv.slice(2)
const files = readdirSync(join('test', 'kafka-broker'))
  .filter((f) => f.endsWith('.test.ts'))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .map((f) => join('test', 'kafka-broker', f))
  .sort()
if (files.length === 0) {
  console.error('no Kafka test files matched')
  process.exit(1)
}

let broker
let bootstrap = process.env.PUNCTUAL_KAFKA_BOOTSTRAP
if (bootstrap === undefined || bootstrap === '') {
  const t0 = Date.now()
  broker = await startBroker()
  bootstrap = broker.bootstrap
  console.log(`Kafka broker at ${bootstrap} (started in ${((Date.now() - t0) / 1000).toFixed(1)} s, pid ${broker.pid})`)
}
// The tests' temporary directories go under one folder of this run, removed at the end.
const scratch = mkdtempSync(join(tmpdir(), 'punctual-kafka-tests-'))
const r = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-concurrency=1', '--test-timeout=900000', '--test-force-exit', ...files], {
  stdio: 'inherit',
  env: { ...process.env, PUNCTUAL_KAFKA_BOOTSTRAP: bootstrap, TMPDIR: scratch },
})
rmSync(scratch, { recursive: true, force: true })
if (broker !== undefined) await stopBroker(broker.dir)
process.exit(r.status ?? 1)
