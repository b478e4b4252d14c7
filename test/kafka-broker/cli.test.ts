import assert from 'node:assert/strict'
import { existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { main } from '../../src/cli/main.js'
import { bootstrapServers } from './cluster.js'
import { onSharedBroker } from './shared-broker.js'
import { until } from './workload.js'

const APP = fileURLToPath(new URL('./fixtures/kafka-hook-app.ts', import.meta.url))

describe('punctual run APP --kafka on a real broker', () => {
  const broker = onSharedBroker('cli')

  it('calls startOnKafka with the running instance, keeps local state in .punctual/<applicationId>, and stops on a signal', async () => {
    const topic = `${broker.run}-words`
    const app = `${broker.run}-app`
    await broker.cluster.createTopic(topic, 1)
    await broker.cluster.produce(topic, 1, [
      { key: 'a', value: 'x', timestamp: 1 },
      { key: 'a', value: 'x', timestamp: 2 },
    ])
    process.env.PUNCTUAL_TEST_TOPIC = topic
    process.env.PUNCTUAL_TEST_APP = app
    const { seen } = (await import('./fixtures/kafka-hook-app.js')) as { seen: { state?: string; count?: number; aborted?: boolean } }
    const cwd = process.cwd()
    const work = mkdtempSync(join(tmpdir(), 'punctual-cli-kafka-'))
    process.chdir(work)
    const err: string[] = []
    try {
      const run = main(['node', 'punctual', 'run', APP, '--kafka', bootstrapServers()], { out: () => {}, err: (l) => err.push(l) })
      await until('startOnKafka read the count', () => seen.count === 2, 60_000, () => err.join('\n'))
      assert.equal(seen.state, 'RUNNING')
      const stateDir = join(work, '.punctual', app)
      assert.ok(existsSync(stateDir), `${stateDir} holds the instance's local state`)
      process.emit('SIGINT', 'SIGINT')
      assert.equal(await run, 0, err.join('\n'))
      assert.equal(seen.aborted, true, 'the hook is told the run ended')
      assert.match(err.join('\n'), new RegExp(`joined its group on .*; local state in ${stateDir.replaceAll('/', '\\/')}`))
      assert.match(err.at(-1) ?? '', /stopped \(SIGINT\); its state is in its changelog topics, its local state in /)
    } finally {
      process.chdir(cwd)
      delete process.env.PUNCTUAL_TEST_TOPIC
      delete process.env.PUNCTUAL_TEST_APP
    }
  })
})
