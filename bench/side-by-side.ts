import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { loadFlights } from '../demo/flights/data.js'
import type { Flights } from '../demo/flights/data.js'
import { Serdes } from '../src/index.js'
import { TopologyTestDriver } from '../src/testing/index.js'
import { buildHarness } from '../conformance/kafka-streams/harness.js'
import { javaHash } from './stats.js'
import { handWritten, punctual, windowedFinalTopology } from './windowed.js'
import type { Output } from './windowed.js'

/** One engine's run of the flights windowed-final workload. */
export interface EngineRun {
  readonly recordsPerSecond: number
  readonly peakHeapMb: number
  readonly finalResults: number
  /** Java's String.hashCode of each "origin start count" line, summed: equal outputs, equal hashes. */
  readonly hash: number
}

export interface SideBySideResult {
  readonly records: number
  readonly handWritten: EngineRun
  readonly punctualEmbedded: EngineRun
  readonly punctualTestDriver: EngineRun
  readonly kafkaStreamsTestDriver: EngineRun
}

const gc = (): void => (globalThis as { gc?: () => void }).gc?.()

async function timed(f: Flights, run: () => Promise<{ out: Output; peakHeap: number }> | { out: Output; peakHeap: number }): Promise<EngineRun> {
  gc()
  const t0 = performance.now()
  const { out, peakHeap } = await run()
  const ms = performance.now() - t0
  return { recordsPerSecond: (f.count / ms) * 1000, peakHeapMb: peakHeap / 2 ** 20, finalResults: out.length, hash: javaHash(out) }
}

/** The same topology in punctual's test driver: every record piped synchronously, as in Kafka Streams'. */
function punctualDriver(f: Flights): { out: Output; peakHeap: number } {
  const out: Output = []
  const driver = new TopologyTestDriver(windowedFinalTopology(out))
  const input = driver.createInputTopic('flights', Serdes.String(), Serdes.Double())
  let peakHeap = 0
  for (let j = 0; j < f.count; j++) {
    const i = f.replayOrder[j] as number
    input.pipeInput(f.origin[i] as string, f.delay[i] as number, f.scheduled[i] as number)
    if ((j & 0xffff) === 0xffff) peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed)
  }
  driver.close()
  return { out, peakHeap }
}

/** Kafka Streams 4.4's TopologyTestDriver on the same records (conformance/kafka-streams Bench.java). */
function kafkaStreams(f: Flights): EngineRun {
  buildHarness()
  const dir = mkdtempSync(join(tmpdir(), 'punctual-side-by-side-'))
  try {
    const file = join(dir, 'flights.tsv')
    const lines: string[] = []
    for (let j = 0; j < f.count; j++) {
      const i = f.replayOrder[j] as number
      lines.push(`${f.origin[i]}\t${f.scheduled[i]}`)
    }
    writeFileSync(file, lines.join('\n') + '\n')
    const here = fileURLToPath(new URL('../conformance/kafka-streams/', import.meta.url))
    const cp = `${join(here, 'target', 'classes')}:${join(here, 'target', 'lib', '*')}`
    const r = spawnSync('java', ['-Xmx6g', '-cp', cp, 'punctual.reference.Bench', file], { encoding: 'utf8', maxBuffer: 1 << 20 })
    if (r.status !== 0) throw new Error(`Kafka Streams bench failed: ${r.stderr}`)
    const j = JSON.parse(r.stdout.trim().split('\n').pop() as string) as { records: number; seconds: number; finalResults: number; hash: number; peakHeapMb: number }
    return { recordsPerSecond: j.records / j.seconds, peakHeapMb: j.peakHeapMb, finalResults: j.finalResults, hash: j.hash }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The flights windowed-final workload, in one run: hand-written, punctual (runtime, test driver), Kafka Streams. */
export async function sideBySide(): Promise<SideBySideResult> {
  const f = await loadFlights()
  return {
    records: f.count,
    handWritten: await timed(f, () => handWritten(f)),
    punctualEmbedded: await timed(f, () => punctual(f)),
    punctualTestDriver: await timed(f, () => punctualDriver(f)),
    kafkaStreamsTestDriver: kafkaStreams(f),
  }
}
