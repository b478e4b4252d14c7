import { after, afterEach, before } from 'node:test'
import type { KafkaRuntime } from '../../src/kafka/kafka-runtime.js'
import { TestCluster } from './cluster.js'

/** What a test file on the shared broker works with. */
export interface SharedBroker {
  /** Unique to this run of the file: its topics' names start with it, and are deleted at the end. */
  readonly run: string
  readonly cluster: TestCluster
  /** Keeps a runtime the test starts, to stop it after the test should the test fail with it running. */
  track(rt: KafkaRuntime): KafkaRuntime
}

/**
 * Registers, in the calling `describe`, the hooks of a test file on the shared broker of `npm run
 * test:kafka`: a `TestCluster` before its tests; after each test, stops the runtimes it left running (a
 * failed test does, and the process could not end); after all, deletes the topics of the run.
 */
export function onSharedBroker(prefix: string): SharedBroker {
  let cluster: TestCluster | undefined
  const started: KafkaRuntime[] = []
  const run = `${prefix}${process.pid}x${Date.now()}`
  before(async () => {
    cluster = await TestCluster.connect()
  })
  afterEach(async () => {
    for (const rt of started.splice(0)) if (rt.state === 'RUNNING') await rt.stop().catch(() => {})
  })
  after(async () => {
    if (cluster === undefined) return
    await cluster.deleteTopics(run)
    await cluster.close()
  })
  return {
    run,
    get cluster(): TestCluster {
      if (cluster === undefined) throw new Error('the cluster connects before the tests run')
      return cluster
    },
    track(rt) {
      started.push(rt)
      return rt
    },
  }
}
