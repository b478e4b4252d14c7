import { TestCluster } from '../test/kafka-broker/cluster.js'
import { startBroker, stopBroker } from '../scripts/kafka-broker.mjs'

/** The broker a Kafka benchmark runs on, and its admin and test client. */
export interface BenchBroker {
  readonly bootstrap: string
  readonly cluster: TestCluster
  /** Closes the client, and stops the broker if it was started here. */
  close(): Promise<void>
}

/** PUNCTUAL_KAFKA_BOOTSTRAP's broker, or one started here (stopped by `close`). */
export async function benchBroker(): Promise<BenchBroker> {
  let started: { bootstrap: string; dir: string } | undefined
  let bootstrap = process.env.PUNCTUAL_KAFKA_BOOTSTRAP ?? ''
  if (bootstrap === '') {
    started = await startBroker()
    bootstrap = started.bootstrap
  }
  const cluster = await TestCluster.connect(bootstrap)
  return {
    bootstrap,
    cluster,
    async close() {
      await cluster.close()
      if (started !== undefined) await stopBroker(started.dir)
    },
  }
}

/** Waits (polling every 50 ms: a benchmark's driver, not the runtime) until `condition`; fails after `timeoutMs`. */
export async function waitFor(what: string, condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`benchmark: timed out waiting until ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}
