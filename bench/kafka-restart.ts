import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { benchBroker, waitFor } from './broker.js'

// `npm run bench -- --only kafka-restart`: a task holding KEYS keys (a count per key in a persistent
// store, exactly-once, one input partition) on a real broker; its instance is killed with SIGKILL and
// restarted on its own state directory, then killed again and started on an empty one. Each restore is
// timed by the runtime (from the task's assignment until it runs). The broker is
// PUNCTUAL_KAFKA_BOOTSTRAP's, or one this starts and stops.

export interface KafkaRestore {
  /** Records the restore read: from the local state, and in all (local state and the changelog). */
  readonly local: number
  readonly records: number
  readonly ms: number
}

export interface KafkaRestartResult {
  readonly keys: number
  readonly ownDirectory: KafkaRestore
  readonly emptyDirectory: KafkaRestore
}

/** Keys of the task (PUNCTUAL_KAFKA_RESTART_KEYS to change). */
const KEYS = Number(process.env.PUNCTUAL_KAFKA_RESTART_KEYS ?? 1_000_000)
const INSTANCE = fileURLToPath(new URL('./kafka-instance.ts', import.meta.url))

/** An instance of the counts mode (bench/kafka-instance.ts) in a process of its own. */
class CountsInstance {
  processed = 0
  restored: KafkaRestore | undefined
  private readonly child

  constructor(bootstrap: string, app: string, input: string, stateDir: string) {
    this.child = spawn(process.execPath, ['--import', 'tsx', INSTANCE, 'counts', bootstrap, app, input, stateDir], { stdio: ['ignore', 'pipe', 'inherit'] })
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      if (!line.startsWith('{')) return
      const m = JSON.parse(line) as { processed?: number; restored?: KafkaRestore }
      if (m.processed !== undefined) this.processed = m.processed
      if (m.restored !== undefined) this.restored = m.restored
    })
  }

  async kill(): Promise<void> {
    const exited = new Promise((resolve) => this.child.once('exit', resolve))
    this.child.kill('SIGKILL')
    await exited
  }
}

export async function kafkaRestartBench(): Promise<KafkaRestartResult> {
  const broker = await benchBroker()
  const { bootstrap, cluster } = broker
  const name = `restart${Date.now()}`
  const dir = mkdtempSync(join(tmpdir(), 'punctual-restart-bench-'))
  try {
    const input = `${name}-in`
    await cluster.createTopic(input, 1)
    await cluster.produce(input, 1, Array.from({ length: KEYS }, (_, i) => ({ key: `key-${i}`, value: 'v', timestamp: 1_700_000_000_000 + i })))
    const own = join(dir, 'own')
    const run = (stateDir: string): CountsInstance => new CountsInstance(bootstrap, `${name}-app`, input, stateDir)

    const first = run(own)
    await waitFor(`every key counted`, () => first.processed >= KEYS, 20 * 60_000)
    // Past a commit of them (exactly-once commits every 100 ms), then killed.
    await new Promise((r) => setTimeout(r, 2_000))
    await first.kill()

    const again = run(own)
    await waitFor('the restart on its own state directory restored the task', () => again.restored !== undefined, 10 * 60_000)
    await again.kill()

    const fresh = run(join(dir, 'empty'))
    await waitFor('the start on an empty state directory restored the task', () => fresh.restored !== undefined, 10 * 60_000)
    await fresh.kill()
    return { keys: KEYS, ownDirectory: again.restored as KafkaRestore, emptyDirectory: fresh.restored as KafkaRestore }
  } finally {
    await cluster.deleteTopics(name).catch(() => {})
    rmSync(dir, { recursive: true, force: true })
    await broker.close()
  }
}
