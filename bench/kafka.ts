import { spawn } from 'node:child_process'
import type { ChildProcessByStdio } from 'node:child_process'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import type { Readable, Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { loadFlights } from '../demo/flights/data.js'
import { buildHarness } from '../conformance/kafka-streams/harness.js'
import { benchBroker, waitFor } from './broker.js'
import { javaHash, percentiles } from './stats.js'

// `npm run bench -- --only kafka`: the flights windowed-final workload on a real broker, punctual (one and
// two instances, each a process) against Kafka Streams 4.4 (one stream thread, its own JVM), same
// topology, input topic, guarantee and broker; then the lateness of a 1 s wall-clock punctuation with
// idle input in each. The broker is PUNCTUAL_KAFKA_BOOTSTRAP's, or one this starts and stops.

export interface KafkaRun {
  /** Rounds run every setup once, one after the other, so that each engine meets the machine's drift. */
  readonly round: number
  readonly engine: 'punctual' | 'kafka-streams'
  readonly instances: number
  readonly guarantee: 'exactly_once_v2' | 'at_least_once'
  /** From the first instance's start until every input record is processed. */
  readonly seconds: number
  readonly recordsPerSecond: number
  readonly finalResults: number
  /** Order-independent hash of the output lines: equal outputs, equal hashes. */
  readonly hash: number
}

export interface KafkaLateness {
  readonly p50Ms: number
  readonly p99Ms: number
  readonly maxMs: number
  readonly calls: number
}

export interface KafkaBenchResult {
  readonly records: number
  readonly partitions: number
  readonly runs: readonly KafkaRun[]
  readonly lateness: { readonly punctual: KafkaLateness; readonly kafkaStreams: KafkaLateness }
}

const PARTITIONS = 4
/**
 * Rounds of every setup (PUNCTUAL_KAFKA_BENCH_ROUNDS): the machine's speed drifts between minutes by more
 * than the engines differ, so the figures are the medians over rounds.
 */
const ROUNDS = Number(process.env.PUNCTUAL_KAFKA_BENCH_ROUNDS ?? 3)
const LATENESS_SECONDS = 20
/** Calls dropped from each lateness sample: the first ones fall while the instance joins its group. */
const WARM_UP_CALLS = 3
const HERE = fileURLToPath(new URL('.', import.meta.url))
const HARNESS = join(HERE, '..', 'conformance', 'kafka-streams')

type Engine = ChildProcessByStdio<Writable, Readable, null>

/** An engine's process speaking the bench protocol (KafkaBench.java, bench/kafka-instance.ts). */
class EngineProcess {
  started = Infinity
  processed = 0
  /** When `processed` was last reported. */
  at = 0
  lateness: number[] | undefined
  readonly exited: Promise<number | null>

  constructor(private readonly child: Engine) {
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (!line.startsWith('{')) return
      const m = JSON.parse(line) as { started?: number; t?: number; processed?: number; lateness?: number[] }
      if (m.started !== undefined) this.started = m.started
      if (m.t !== undefined && m.processed !== undefined) {
        this.processed = m.processed
        this.at = m.t
      }
      if (m.lateness !== undefined) this.lateness = m.lateness
    })
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)))
  }

  static punctual(args: readonly string[]): EngineProcess {
    return new EngineProcess(spawn(process.execPath, ['--import', 'tsx', join(HERE, 'kafka-instance.ts'), ...args], { stdio: ['pipe', 'pipe', 'inherit'] }))
  }

  static kafkaStreams(args: readonly string[]): EngineProcess {
    const cp = `${join(HARNESS, 'target', 'classes')}:${join(HARNESS, 'target', 'lib', '*')}`
    return new EngineProcess(spawn('java', ['-Xmx2g', '-cp', cp, 'punctual.reference.KafkaBench', ...args], { stdio: ['pipe', 'pipe', 'inherit'] }))
  }

  /** Closes stdin: the engine stops, committing, and exits. */
  async stop(): Promise<void> {
    this.child.stdin.end()
    const code = await this.exited
    if (code !== 0) throw new Error(`an engine exited with code ${code}`)
  }
}

export async function kafkaBench(): Promise<KafkaBenchResult> {
  buildHarness()
  const broker = await benchBroker()
  const { bootstrap, cluster } = broker
  const name = `bench${Date.now()}`
  try {
    // PUNCTUAL_KAFKA_BENCH_RECORDS: fewer flights, to try the benchmark quickly.
    const f = await loadFlights(Number(process.env.PUNCTUAL_KAFKA_BENCH_RECORDS ?? Infinity))
    const records = Array.from({ length: f.count }, (_, j) => {
      const i = f.replayOrder[j] as number
      return { key: f.origin[i] as string, value: String(f.delay[i]), timestamp: f.scheduled[i] as number }
    })
    await cluster.createTopic(`${name}-flights`, PARTITIONS)
    await cluster.produce(`${name}-flights`, PARTITIONS, records)

    const runs: KafkaRun[] = []
    for (let round = 1; round <= ROUNDS; round++) {
      for (const guarantee of ['exactly_once_v2', 'at_least_once'] as const) {
        const setups: Array<[KafkaRun['engine'], number]> = [['kafka-streams', 1], ['punctual', 1], ['punctual', 2]]
        for (const [engine, instances] of setups) {
          const app = `${name}-${engine}-${instances}-${guarantee}-${round}`
          const output = `${app}-out`
          await cluster.createTopic(output, PARTITIONS)
          const args = [bootstrap, app, `${name}-flights`, output, guarantee]
          const engines = Array.from({ length: instances }, () => (engine === 'punctual' ? EngineProcess.punctual(['windowed', ...args]) : EngineProcess.kafkaStreams(['windowed', ...args])))
          const total = (): number => engines.reduce((n, e) => n + e.processed, 0)
          await waitFor(`${app} processed ${records.length} records`, () => total() >= records.length, 20 * 60_000)
          const seconds = (Math.max(...engines.map((e) => e.at)) - Math.min(...engines.map((e) => e.started))) / 1000
          for (const e of engines) await e.stop()
          const lines = (await cluster.readAll(output, PARTITIONS)).flat().map((r) => `${r.key} ${r.value}`)
          runs.push({ round, engine, instances, guarantee, seconds, recordsPerSecond: records.length / seconds, finalResults: lines.length, hash: javaHash(lines) })
        }
      }
    }

    const idle = `${name}-idle`
    await cluster.createTopic(idle, 1)
    const lateness = async (engine: EngineProcess): Promise<KafkaLateness> => {
      if ((await engine.exited) !== 0) throw new Error('a lateness run failed')
      const p = percentiles((engine.lateness ?? []).slice(WARM_UP_CALLS))
      return { p50Ms: p.p50, p99Ms: p.p99, maxMs: p.max, calls: p.count }
    }
    const kafkaStreams = await lateness(EngineProcess.kafkaStreams(['lateness', bootstrap, `${name}-late-ks`, idle, String(LATENESS_SECONDS)]))
    const punctual = await lateness(EngineProcess.punctual(['lateness', bootstrap, `${name}-late-p`, idle, String(LATENESS_SECONDS)]))
    return { records: records.length, partitions: PARTITIONS, runs, lateness: { punctual, kafkaStreams } }
  } finally {
    await cluster.deleteTopics(name).catch(() => {})
    await broker.close()
  }
}
