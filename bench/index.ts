/**
 * `npm run bench`: benchmarks (not tests). Prints a table and writes bench/results.json.
 * Options: --only NAME[,NAME] (timer-memory, lateness-idle, lateness-load, pass-through, timers,
 * windowed-final, inactivity, spill, buffer-memory, restore, restore-changelog, lateness-commits, count-keys, side-by-side,
 * stream-join, table-join, and
 * kafka, kafka-restart and failover, which run only when named: they need a broker, kafka and failover
 * also Java; kafka takes about 10 minutes, kafka-restart about 2, failover about 10),
 * --seconds N (lateness run length). Run with --expose-gc (npm run bench does) for memory figures.
 * A run of one benchmark updates its entries in bench/results.json and keeps the others.
 * Each benchmark runs in a process of its own, so that none measures the heap another one left (the
 * timer figures were a quarter lower after the 10 M-timer memory benchmark than on their own).
 */
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { punctuationLateness } from './punctuation-lateness.js'
import { passThrough } from './pass-through.js'
import { timerMemory, timerStreaming, timerThroughput } from './timers.js'
import { bytesPerBufferedEntry, spillThroughput, windowedFinal } from './windowed.js'
import { inactivityAlerts, QUIET_MS } from './inactivity.js'
import { changelogRestoreTime, countKeys, latenessDuringCommits, restoreTime } from './durable.js'
import { sideBySide } from './side-by-side.js'
import { streamStreamJoin, streamTableJoin } from './joins.js'
import { kafkaBench } from './kafka.js'
import { kafkaRestartBench } from './kafka-restart.js'
import { kafkaFailoverBench } from './kafka-failover.js'
import type { KafkaRun } from './kafka.js'
import { median } from './stats.js'

const ALL = ['timer-memory', 'lateness-idle', 'lateness-load', 'pass-through', 'timers', 'windowed-final', 'inactivity', 'spill', 'buffer-memory', 'restore', 'restore-changelog', 'lateness-commits', 'count-keys', 'side-by-side', 'stream-join', 'table-join']
/** Benchmarks that run only when named. */
const ON_REQUEST = ['kafka', 'kafka-restart', 'failover']
/** `--child`: run what `--only` names and print the rows and results as one JSON line (for the parent). */
const { values } = parseArgs({ options: { only: { type: 'string' }, seconds: { type: 'string', default: '10' }, child: { type: 'boolean', default: false } } })
const only = values.only?.split(',')
const unknown = only?.filter((n) => !ALL.includes(n) && !ON_REQUEST.includes(n)) ?? []
if (unknown.length > 0) {
  console.error(`unknown benchmark(s): ${unknown.join(', ')}; known: ${[...ALL, ...ON_REQUEST].join(', ')}`)
  process.exit(2)
}
const want = (name: string): boolean => only === undefined || only.includes(name)
const durationMs = Number(values.seconds) * 1000

/** What every results.json starts with. */
const environment = (): Record<string, unknown> => ({ node: process.version, cpu: cpus()[0]?.model, cores: cpus().length, date: new Date().toISOString() })

function printTable(table: readonly string[][]): void {
  const header = ['benchmark', 'result', 'detail', 'target']
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((r) => r[i]!.length)))
  const line = (cells: readonly string[]): string => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ')
  console.log(line(header))
  console.log(widths.map((w) => '-'.repeat(w)).join('  '))
  for (const r of table) console.log(line(r))
}

const selected = only ?? ALL
if (!values.child && selected.length > 1) {
  const table: string[][] = []
  const merged = environment()
  let failed = false
  for (const name of selected) {
    const r = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), '--only', name, '--seconds', values.seconds, '--child'], {
      stdio: ['ignore', 'pipe', 'inherit'],
      encoding: 'utf8',
      maxBuffer: 64 * 2 ** 20,
    })
    // The result is the last JSON line: a Maven build of the Kafka Streams harness may print after it.
    const last = r.stdout.trim().split('\n').findLast((l) => l.startsWith('{')) ?? ''
    if (r.status !== 0 || !last.startsWith('{')) {
      console.error(`benchmark ${name} failed (exit ${r.status})`)
      failed = true
      continue
    }
    const part = JSON.parse(last) as { rows: string[][]; results: Record<string, unknown> }
    table.push(...part.rows)
    for (const [k, v] of Object.entries(part.results)) if (!(k in merged)) merged[k] = v
  }
  printTable(table)
  writeResults(merged, only !== undefined)
  process.exit(failed ? 1 : 0)
}

const results = environment()
const rows: string[][] = []

/** Runs `run` once to warm up (discarded), then `n` times. */
function warmedRuns<T>(n: number, run: () => T): T[] {
  run() // called bare: a benchmark's optional parameters must keep their defaults
  return Array.from({ length: n }, () => run())
}

/** The run whose `value` is the median. */
const f = (n: number, d = 2): string => n.toFixed(d)

// Memory is measured on a fresh heap: with several benchmarks asked for, each runs in its own process.
if (want('timer-memory')) {
  for (const n of [1_000_000, 10_000_000]) {
    const r = await timerMemory(n)
    results[`timer-memory-${n}`] = r
    rows.push([`memory per pending timer, ${(n / 1e6).toFixed(0)} M timers`, `${r.bytesPerTimer.toFixed(1)} bytes`, `${(r.keys / 1e3).toFixed(0)} k keys, (heap + array buffers) / count`, '<= 100 bytes'])
  }
}

if (want('lateness-idle')) {
  const r = await punctuationLateness('idle', durationMs)
  results['lateness-idle'] = r
  rows.push(['wall-clock punctuation lateness, idle (10 ms schedule)', `p50 ${f(r.p50Ms)} ms, p99 ${f(r.p99Ms)} ms, max ${f(r.maxMs)} ms`, `${r.fires}/${r.expectedFires} calls`, 'p99 <= 5 ms'])
}
if (want('lateness-load')) {
  const r = await punctuationLateness('load', durationMs)
  results['lateness-load'] = r
  rows.push([
    'wall-clock punctuation lateness, under load',
    `p50 ${f(r.p50Ms)} ms, p99 ${f(r.p99Ms)} ms, max ${f(r.maxMs)} ms`,
    `${r.fires}/${r.expectedFires} calls, ${(r.recordsProcessed / 1e6).toFixed(1)} M records`,
    'p99 <= 20 ms',
  ])
}
if (want('pass-through')) {
  for (const partitions of [1, 4]) {
    const r = await passThrough(2_000_000, partitions)
    results[`pass-through-${partitions}p`] = r
    rows.push([`pass-through, embedded runtime, ${partitions} partition(s)`, `${Math.round(r.recordsPerSecond).toLocaleString('en-US')} records/s`, `${r.records.toLocaleString('en-US')} records in ${f(r.seconds)} s`, '>= 1,000,000/s'])
  }
}

if (want('timers')) {
  // One warm-up run (the JIT compiles the queue during it), then the median of three measured runs.
  const runs = warmedRuns(3, timerThroughput)
  const r = median(runs, (x) => x.registerAndFirePerSecond)
  results.timers = { median: r, runs }
  const k = (n: number): string => `${(n / 1e6).toFixed(2)} M/s`
  const range = <T>(xs: readonly T[], value: (x: T) => number): string => `${k(Math.min(...xs.map(value)))} to ${k(Math.max(...xs.map(value)))}`
  rows.push(['event-time timers: register + fire (1 M timers, 100 k keys)', k(r.registerAndFirePerSecond), `median of 3 (${range(runs, (x) => x.registerAndFirePerSecond)}); register ${k(r.registerPerSecond)}, fire ${k(r.firePerSecond)}`, '>= 2 M/s'])
  rows.push(['event-time timers: delete', k(median(runs, (x) => x.deletePerSecond).deletePerSecond), `${(r.timers / 1e6).toFixed(0)} M timers, median of 3`, ''])
  const streams = warmedRuns(3, timerStreaming)
  const st = median(streams, (x) => x.perSecond)
  results['timers-streaming'] = { median: st, runs: streams }
  rows.push(['event-time timers: register + fire as stream time advances', k(st.perSecond), `median of 3 (${range(streams, (x) => x.perSecond)}); 1 M timers, 100 k keys, up to ${(st.maxPending / 1e3).toFixed(0)} k pending`, '>= 2 M/s'])
}
if (want('inactivity')) {
  const r = await inactivityAlerts()
  results.inactivity = r
  const k = (n: number): string => `${(n / 1e6).toFixed(2)} M records/s`
  rows.push([
    `flights inactivity alerts (3 M, an event-time timer per origin moved by each departure, alert after ${QUIET_MS / 60_000} min), embedded runtime`,
    k(r.punctualRecordsPerSecond),
    `hand-written loop ${k(r.handWrittenRecordsPerSecond)}; punctual takes ${r.ratio.toFixed(2)}x (median of ${r.ratios.length} pairs: ${r.ratios.map((x) => x.toFixed(2)).join(', ')}); parts, against the loop: the input path alone ${r.parts.inputOnlyRatio.toFixed(2)}x, the timer queue in a loop of its own ${r.parts.queueLoopRatio.toFixed(2)}x; ${r.alerts} alerts; same output: ${r.identicalOutput}`,
    'within 1.3x',
  ])
}
if (want('windowed-final')) {
  const r = await windowedFinal()
  results['windowed-final'] = r
  const k = (n: number): string => `${(n / 1e6).toFixed(2)} M records/s`
  rows.push([
    'flights windowed final (3 M, 1 h windows, 30 min grace), embedded runtime',
    k(r.punctualRecordsPerSecond),
    `hand-written loop ${k(r.handWrittenRecordsPerSecond)}; punctual takes ${r.ratio.toFixed(2)}x (median of ${r.ratios.length} pairs: ${r.ratios.map((x) => x.toFixed(2)).join(', ')}); same output: ${r.identicalOutput}`,
    'within 1.5x',
  ])
  rows.push(['  peak heap used', `${r.punctualPeakHeapMb.toFixed(0)} MB`, `hand-written ${r.handWrittenPeakHeapMb.toFixed(0)} MB (flights data included in both)`, ''])
  rows.push([
    '  the same with durable state (stateDir: windows, buffer, stream time, input positions and topics committed)',
    k(r.durableRecordsPerSecond),
    `${(100 * r.durableShare).toFixed(0)}% of in-memory (median of ${r.durableShares.length} pairs, each with an in-memory run: ${r.durableShares.map((x) => `${(100 * x).toFixed(0)}%`).join(', ')}); same output: ${r.durableIdenticalOutput}`,
    '>= 80% of in-memory',
  ])
  const pct = (x: number): string => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)}%`
  rows.push([
    '  the same with metrics on (the Prometheus endpoint scraped every second, the live page open)',
    `${pct(r.metricsCost)} time`,
    `median of ${r.metricsCosts.length} pairs, half with metrics first (mean ${pct(r.metricsCostMean)}, from ${pct(Math.min(...r.metricsCosts))} to ${pct(Math.max(...r.metricsCosts))}); ${r.metricsScrapes} scrapes answered in all; same output: ${r.metricsIdenticalOutput}`,
    'within 5%',
  ])
  rows.push([
    '  serving them, on the event loop',
    `scrape ${r.metricsScrapeMs.toFixed(2)} ms`,
    `a live-page event ${r.metricsEventMs.toFixed(3)} ms; at one scrape and one event a second, ${pct((r.metricsScrapeMs + r.metricsEventMs) / 1000)} of the time (mean of 200 each, after 500 k records)`,
    '',
  ])
}
if (want('spill')) {
  // Each run is an in-memory/spilling pair back to back; the median pair is reported.
  const runs = warmedRuns(3, spillThroughput)
  const r = median(runs, (x) => x.ratio)
  results.spill = { median: r, runs }
  rows.push([
    'suppression with 90% of entries spilled to disk',
    `${(r.spillPerSecond / 1e3).toFixed(0)} k records/s`,
    `in memory ${(r.inMemoryPerSecond / 1e3).toFixed(0)} k records/s: ${(r.ratio * 100).toFixed(0)}% (median of 3 pairs: ${runs.map((x) => `${(x.ratio * 100).toFixed(0)}%`).join(', ')})`,
    '>= 25% of in-memory',
  ])
}
if (want('buffer-memory')) {
  const bytes = bytesPerBufferedEntry()
  results['buffer-memory'] = { bytesPerEntry: bytes }
  rows.push(['memory per buffered suppression entry (windowed key, number)', `${bytes.toFixed(0)} bytes`, '500 k entries, heap used / count', ''])
}

if (want('restore')) {
  const r = await restoreTime()
  results.restore = r
  rows.push(['durable state: restore 1 M keys (value state) + 1 M timers, one task', `${r.restoreSeconds.toFixed(1)} s`, `written in ${r.firstRunSeconds.toFixed(1)} s by ${r.commits} incremental commits`, ''])
  rows.push([
    'durable state: commit latency during that run',
    `mean ${r.commitMeanMs.toFixed(1)} ms, max ${r.commitMaxMs.toFixed(0)} ms`,
    `until durable; on the event loop ${r.commitBlockingMeanMs.toFixed(1)} ms per commit in all, at most ${r.commitBlockingMaxMs.toFixed(0)} ms at once`,
    '',
  ])
}
if (want('restore-changelog')) {
  const r = await changelogRestoreTime()
  results['restore-changelog'] = r
  rows.push([
    'the same task rebuilt from its changelog records (as when it moves)',
    `${r.restoreSeconds.toFixed(1)} s`,
    `${(r.records / 1e6).toFixed(1)} M records; revoking it (commit, then its checkpoint as records) ${r.revokeSeconds.toFixed(1)} s`,
    '',
  ])
}
if (want('lateness-commits')) {
  const r = await latenessDuringCommits()
  results['lateness-commits'] = r
  rows.push([
    'wall-clock punctuation lateness while durable commits write 1 M keys + 1 M timers (100 ms schedule)',
    `p50 ${f(r.p50Ms)} ms, p99 ${f(r.p99Ms)} ms, max ${f(r.maxMs)} ms`,
    `${r.fires} calls; ${r.commits} commits, mean ${r.commitMeanMs.toFixed(1)} ms, max ${r.commitMaxMs.toFixed(0)} ms (on the event loop ${r.commitBlockingMeanMs.toFixed(1)} ms per commit in all, at most ${r.commitBlockingMaxMs.toFixed(0)} ms at once)`,
    '',
  ])
}
if (want('count-keys')) {
  // The same count with its store on disk, then in memory (each in the heap this process left it).
  const keys = 10_000_000
  const disk = await countKeys(keys, 'persistent')
  const memory = await countKeys(keys, 'inMemory')
  results['count-keys'] = { disk, memory, diskToMemory: disk.recordsPerSecond / memory.recordsPerSecond }
  for (const [what, r] of [['persistent store, on disk', disk], ['in-memory store', memory]] as const) {
    rows.push([
      `durable count per key (DSL count, ${what}), 10 M distinct keys`,
      `${(r.recordsPerSecond / 1e3).toFixed(0)} k records/s`,
      `${r.commits} commits, mean ${r.commitMeanMs.toFixed(1)} ms (on the event loop ${r.commitBlockingMeanMs.toFixed(1)} ms per commit in all, at most ${r.commitBlockingMaxMs.toFixed(0)} ms at once)${r === disk ? `; ${((100 * disk.recordsPerSecond) / memory.recordsPerSecond).toFixed(0)}% of in-memory` : ''}`,
      '',
    ])
  }
}

if (want('side-by-side')) {
  const r = await sideBySide()
  results['side-by-side'] = r
  const base = r.kafkaStreamsTestDriver
  const same = (e: { finalResults: number; hash: number }): string => (e.finalResults === base.finalResults && e.hash === base.hash ? 'same output' : 'OUTPUT DIFFERS')
  const row = (name: string, e: typeof base): string[] => [
    `  ${name}`,
    `${(e.recordsPerSecond / 1e6).toFixed(2)} M records/s`,
    `${(e.recordsPerSecond / base.recordsPerSecond).toFixed(2)}x Kafka Streams; peak heap ${e.peakHeapMb.toFixed(0)} MB; ${same(e)}`,
    '',
  ]
  rows.push([`side by side: flights windowed final (${(r.records / 1e6).toFixed(0)} M records, 1 h windows, 30 min grace, final results)`, '', `${base.finalResults.toLocaleString('en-US')} final results`, ''])
  rows.push(row('Kafka Streams 4.4 TopologyTestDriver (JVM)', base))
  rows.push(row('punctual TopologyTestDriver', r.punctualTestDriver))
  rows.push(row('punctual embedded runtime', r.punctualEmbedded))
  rows.push(row('hand-written TypeScript loop', r.handWritten))
}

if (want('stream-join')) {
  const r = await streamStreamJoin()
  results['stream-join'] = r
  const k = (n: number): string => `${(n / 1e6).toFixed(2)} M records/s`
  rows.push([
    `stream-stream join: flights as airport events (${(r.records / 1e6).toFixed(0)} M records, within 1 min)`,
    k(r.punctualRecordsPerSecond),
    `hand-written loop ${k(r.handWrittenRecordsPerSecond)}; ${r.ratio.toFixed(2)}x its time (median of ${r.ratios.length}: ${r.ratios.map((x) => x.toFixed(2)).join(', ')}); ${r.results.toLocaleString('en-US')} results, ${r.identicalOutput ? 'same output' : 'OUTPUT DIFFERS'}`,
    '<= 1.5x',
  ])
}

if (want('table-join')) {
  const r = await streamTableJoin()
  results['table-join'] = r
  const k = (n: number): string => `${(n / 1e6).toFixed(2)} M records/s`
  rows.push([
    `stream-table join: ${(r.records / 1e6).toFixed(0)} M flights enriched with ${r.airports.toLocaleString('en-US')} airports (left join)`,
    k(r.punctualRecordsPerSecond),
    `hand-written Map lookup ${k(r.handWrittenRecordsPerSecond)}; ${r.ratio.toFixed(2)}x its time (median of ${r.ratios.length}: ${r.ratios.map((x) => x.toFixed(2)).join(', ')}); ${r.identicalOutput ? 'same output' : 'OUTPUT DIFFERS'}`,
    '<= 1.5x',
  ])
}

if (want('kafka') && only !== undefined) {
  const r = await kafkaBench()
  const runsOf = (engine: string, instances: number, guarantee: string) => r.runs.filter((x) => x.engine === engine && x.instances === instances && x.guarantee === guarantee)
  const rate = (x: { recordsPerSecond: number }): number => x.recordsPerSecond
  /** Each round's ratio to Kafka Streams' run of the same round, and their median. */
  const ratios = (engine: string, instances: number, guarantee: string): { each: number[]; median: number } => {
    const each = runsOf(engine, instances, guarantee).map((x) => x.recordsPerSecond / (runsOf('kafka-streams', 1, guarantee).find((k) => k.round === x.round) as KafkaRun).recordsPerSecond)
    return { each, median: median(each, (v) => v) }
  }
  const rateOf = (engine: string, instances: number, guarantee: string): number | undefined => median(runsOf(engine, instances, guarantee), rate)?.recordsPerSecond
  results.kafka = {
    ...environment(),
    ...r,
    // Exactly-once, one instance (one stream thread) each.
    punctualRecordsPerSec: rateOf('punctual', 1, 'exactly_once_v2'),
    kafkaStreamsRecordsPerSec: rateOf('kafka-streams', 1, 'exactly_once_v2'),
    punctualToKafkaStreams: ratios('punctual', 1, 'exactly_once_v2').median,
    punctualAtLeastOnceRecordsPerSec: rateOf('punctual', 1, 'at_least_once'),
    kafkaStreamsAtLeastOnceRecordsPerSec: rateOf('kafka-streams', 1, 'at_least_once'),
    punctualAtLeastOnceToKafkaStreams: ratios('punctual', 1, 'at_least_once').median,
    punctualTwoInstancesRecordsPerSec: rateOf('punctual', 2, 'exactly_once_v2'),
    punctualTwoInstancesToKafkaStreams: ratios('punctual', 2, 'exactly_once_v2').median,
    punctualTwoInstancesAtLeastOnceRecordsPerSec: rateOf('punctual', 2, 'at_least_once'),
    punctualTwoInstancesAtLeastOnceToKafkaStreams: ratios('punctual', 2, 'at_least_once').median,
  }
  const rounds = Math.max(...r.runs.map((x) => x.round))
  rows.push([`on a Kafka broker: flights windowed final (${(r.records / 1e6).toFixed(1)} M records, ${r.partitions} partitions), end to end, median of ${rounds} rounds`, '', 'each engine from its start until every record is processed', 'punctual, 1 instance >= 1.2x Kafka Streams'])
  for (const guarantee of ['exactly_once_v2', 'at_least_once'] as const) {
    const reference = runsOf('kafka-streams', 1, guarantee)[0]
    for (const [engine, instances] of [['kafka-streams', 1], ['punctual', 1], ['punctual', 2]] as const) {
      const all = runsOf(engine, instances, guarantee)
      if (all.length === 0) continue
      const m = median(all, rate)
      const same = all.every((x) => reference === undefined || (x.finalResults === reference.finalResults && x.hash === reference.hash)) ? 'same output' : 'OUTPUT DIFFERS'
      const who = engine === 'punctual' ? `punctual, ${instances} instance${instances > 1 ? 's' : ''}` : 'Kafka Streams 4.4, 1 stream thread'
      const k = (n: number): string => Math.round(n).toLocaleString('en-US')
      let ratio = ''
      if (engine === 'punctual') {
        const q = ratios(engine, instances, guarantee)
        ratio = `; ${q.median.toFixed(2)}x Kafka Streams (rounds: ${q.each.map((x) => `${x.toFixed(2)}x`).join(', ')})`
      }
      rows.push([`  ${who}, ${guarantee}`, `${k(m.recordsPerSecond)} records/s`, `rounds: ${all.map((x) => k(x.recordsPerSecond)).join(', ')}; ${m.finalResults.toLocaleString('en-US')} final results, ${same}${ratio}`, ''])
    }
  }
  for (const [who, l] of [['Kafka Streams', r.lateness.kafkaStreams], ['punctual', r.lateness.punctual]] as const) {
    rows.push([`  wall-clock punctuation lateness on the broker, idle input (1 s schedule): ${who}`, `p50 ${f(l.p50Ms)} ms, p99 ${f(l.p99Ms)} ms, max ${f(l.maxMs)} ms`, `${l.calls} calls`, ''])
  }
}

if (want('kafka-restart') && only !== undefined) {
  const r = await kafkaRestartBench()
  results['kafka-restart'] = { ...environment(), ...r, ownToEmpty: r.ownDirectory.ms / r.emptyDirectory.ms }
  rows.push([
    `on a Kafka broker: restart after SIGKILL of a task holding ${(r.keys / 1e6).toFixed(0)} M keys (count, persistent store, exactly-once), on its own state directory`,
    `${(r.ownDirectory.ms / 1000).toFixed(2)} s`,
    `${r.ownDirectory.local} records from local state, ${r.ownDirectory.records - r.ownDirectory.local} from the changelog; ${((100 * r.ownDirectory.ms) / r.emptyDirectory.ms).toFixed(1)}% of an empty directory's`,
    '<= 20% of an empty directory',
  ])
  rows.push([`  the same task started on an empty state directory`, `${(r.emptyDirectory.ms / 1000).toFixed(2)} s`, `${r.emptyDirectory.records} changelog records`, ''])
}

if (want('failover') && only !== undefined) {
  const r = await kafkaFailoverBench()
  results.failover = { ...environment(), ...r }
  const b = r.broker
  rows.push([
    `on a Kafka broker: failover of a task holding ${(r.keys / 1e6).toFixed(r.keys < 1e6 ? 2 : 0)} M keys (count, persistent store, at least once, commits every 1 s, streams group, 3 instances), its owner killed (SIGKILL)`,
    '',
    `from the kill until the count of a record written then is in the output; broker group.streams.session.timeout.ms ${b['group.streams.session.timeout.ms'] ?? '?'}, heartbeat ${b['group.streams.heartbeat.interval.ms'] ?? '?'} ms, assignment interval ${b['group.streams.assignment.interval.ms'] ?? '?'} ms`,
    '',
  ])
  for (const x of r.runs) {
    const who = `${x.engine === 'punctual' ? 'punctual' : 'Kafka Streams 4.4'}, ${x.standbyReplicas === 1 ? 'one standby replica' : 'no standby'}${r.runs.some((y) => y.round > 1) ? `, round ${x.round}` : ''}`
    const restore = x.restore === undefined ? 'no restore reported' : `restore: ${x.restore.tail.toLocaleString('en-US')} records from the changelog, ${x.restore.local === undefined ? '?' : x.restore.local.toLocaleString('en-US')} from local state, ${x.restore.ms} ms`
    rows.push([
      `  ${who}`,
      `${(x.killToOutputMs / 1000).toFixed(2)} s`,
      `assigned after ${x.killToAssignedMs === undefined ? '?' : `${(x.killToAssignedMs / 1000).toFixed(2)} s`}; new owner ${x.newOwnerWasStandby ? 'the standby' : 'not the standby'}; ${restore}; probe count ${x.probeCount}; load ${x.loadAverage.toFixed(2)}`,
      '',
    ])
  }
}

if (values.child) {
  console.log(JSON.stringify({ rows, results }))
} else {
  printTable(rows)
  writeResults(results, only !== undefined)
}

/** Writes bench/results.json; a run of some benchmarks only replaces their entries in the existing file. */
function writeResults(fresh: Record<string, unknown>, partial: boolean): void {
  const file = new URL('./results.json', import.meta.url)
  let merged = fresh
  if (partial && existsSync(file)) {
    const old = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>
    merged = { ...old }
    for (const [k, v] of Object.entries(fresh)) if (!(k in environment())) merged[k] = v
  }
  writeFileSync(file, JSON.stringify(merged, null, 2) + '\n')
}
