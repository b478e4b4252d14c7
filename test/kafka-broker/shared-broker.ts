import { after, afterEach, before } from 'node:test'
import type { KafkaRuntime } from '../../src/kafka/kafka-runtime.js'
import { TestCluster } from './cluster.js'
import type { Instance } from './processes.js'

/** What a test file on the shared broker works with. */
export interface SharedBroker {
  /** Unique to this run of the file: its topics' names start with it, and are deleted at the end. */
  readonly run: string
  readonly cluster: TestCluster
  /** Keeps a runtime the test starts, to stop it after the test should the test fail with it running. */
  track(rt: KafkaRuntime): KafkaRuntime
  /** Keeps an instance the test starts in a process of its own, killed (SIGKILL) after the test. */
  spawned(instance: Instance): Instance
}

/**
 * Registers, in the calling `describe`, the hooks of a test file on the shared broker of `npm run
 * test:kafka`: a `TestCluster` before its tests; after each test, stops the runtimes it left running (a
 * failed test does, and the process could not end) and kills the instances' processes it left; after
 * all, deletes the topics of the run.
 */
export function onSharedBroker(prefix: string): SharedBroker {
  let cluster: TestCluster | undefined
  const started: KafkaRuntime[] = []
  const processes: Instance[] = []
  const run = `${prefix}${process.pid}x${Date.now()}`
  before(async () => {
    cluster = await TestCluster.connect()
  })
  afterEach(async () => {
    for (const rt of started.splice(0)) if (rt.state === 'RUNNING') await rt.stop().catch(() => {})
    for (const i of processes.splice(0)) i.kill('SIGKILL')
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
    spawned(instance) {
      processes.push(instance)
      return instance
    },
  }
}
