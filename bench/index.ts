/**
 * `npm run bench`: benchmarks (not tests). Prints a table and writes bench/results.json.
 * Options: --only NAME[,NAME] (lateness-idle, lateness-load, pass-through), --seconds N (lateness run length).
 */
import { writeFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { parseArgs } from 'node:util'
import { punctuationLateness } from './punctuation-lateness.js'
import { passThrough } from './pass-through.js'

const { values } = parseArgs({ options: { only: { type: 'string' }, seconds: { type: 'string', default: '10' } } })
const only = values.only?.split(',')
const want = (name: string): boolean => only === undefined || only.includes(name)
const durationMs = Number(values.seconds) * 1000

const results: Record<string, unknown> = {
  node: process.version,
  cpu: cpus()[0]?.model,
  cores: cpus().length,
  date: new Date().toISOString(),
}
const rows: string[][] = []
const f = (n: number, d = 2): string => n.toFixed(d)

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

const header = ['benchmark', 'result', 'detail', 'target']
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ')
console.log(line(header))
console.log(widths.map((w) => '-'.repeat(w)).join('  '))
for (const r of rows) console.log(line(r))
writeFileSync(new URL('./results.json', import.meta.url), JSON.stringify(results, null, 2) + '\n')
