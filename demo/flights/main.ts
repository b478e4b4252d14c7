/**
 * `npm start`: the flights demo on the embedded runtime (no broker, no setup), durable in a state
 * directory: stop it (Ctrl-C, or kill it) and run it again, and it resumes where it stopped.
 * Options: see USAGE below (`npm start -- --help`).
 */
import { rmSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { createConsoleLogger, EmbeddedRuntime, Serdes } from '../../src/index.js'
import type { Windowed } from '../../src/index.js'
import { FLIGHT_ROWS, loadFlightsOffThread } from './data.js'
import type { Flights } from './data.js'
import { DAY, DELAYED_MIN, flightsTopology, HOURLY_GRACE } from './topology.js'
import type { AirportAlert, DailyReport, FlightValue } from './topology.js'

const USAGE = `usage: npm start -- [--limit N] [--partitions N] [--state-dir DIR] [--fresh] [--ui [--port N]] [--rate N]
  --limit N         replay only the first N flights (default: all ${FLIGHT_ROWS.toLocaleString('en-US')})
  --partitions N    input partitions, one task each (default 4)
  --state-dir DIR   where state lives between runs (default .punctual/flights-demo)
  --fresh           delete the state directory first and start over
  --ui              serve the live page (and Prometheus metrics at /metrics); feed at --rate, and keep
                    the page up after the last flight until Ctrl-C
  --port N          the live page's port (default 9464; 0 takes a free one)
  --rate N          flights fed per second (default: as fast as they are processed; 20000 with --ui)`

interface Options {
  limit: number
  partitions: number
  stateDir: string
  fresh: boolean
  ui: boolean
  port: number
  rate: number
}

function parseArguments(): Options {
  let values
  try {
    values = parseArgs({
      options: {
        limit: { type: 'string' },
        partitions: { type: 'string', default: '4' },
        'state-dir': { type: 'string', default: '.punctual/flights-demo' },
        fresh: { type: 'boolean', default: false },
        ui: { type: 'boolean', default: false },
        port: { type: 'string', default: '9464' },
        rate: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }).values
  } catch (err) {
    console.error(`${(err as Error).message}\n${USAGE}`)
    process.exit(2)
  }
  if (values.help) {
    console.log(USAGE)
    process.exit(0)
  }
  const limit = values.limit === undefined ? Infinity : Number(values.limit)
  const partitions = Number(values.partitions)
  const port = Number(values.port)
  const rate = values.rate === undefined ? (values.ui ? 20_000 : Infinity) : Number(values.rate)
  const valid =
    limit > 0 && (limit === Infinity || Number.isInteger(limit)) && Number.isInteger(partitions) && partitions >= 1 && Number.isInteger(port) && port >= 0 && port <= 65_535 && rate > 0
  if (!valid) {
    console.error(USAGE)
    process.exit(2)
  }
  return { limit, partitions, stateDir: values['state-dir'], fresh: values.fresh, ui: values.ui, port, rate }
}

const { limit, partitions, stateDir, fresh, ui, port, rate } = parseArguments()
if (fresh) rmSync(stateDir, { recursive: true, force: true })
const total = Math.min(FLIGHT_ROWS, limit)

const fmt = (n: number): string => n.toLocaleString('en-US')
const date = (t: number): string => new Date(t).toISOString().slice(0, 10)
const minute = (t: number): string => new Date(t).toISOString().slice(0, 16).replace('T', ' ')

console.log('punctual demo: US domestic flights of 2001 (vega-datasets), keyed by origin airport')
const startedAt = Date.now()
const runtime = new EmbeddedRuntime(flightsTopology({ progressStartMs: startedAt - (startedAt % 1000) }), {
  applicationId: 'flights-demo',
  stateDir,
  // The demo prints its own story; the runtime only speaks up about problems.
  logger: createConsoleLogger({ level: 'warn' }),
  topics: { flights: { partitions }, 'daily-reports': { partitions: 1 }, progress: { partitions: 1 }, 'hourly-delays': { partitions: 1 } },
  ...(ui ? { metrics: { port } } : {}),
})
/** Records a previous run committed (filled in once started): counted in the summary, not printed again. */
const before = new Map<string, number[]>()
const isOld = (topic: string, partition: number, offset: number): boolean => offset < (before.get(topic)?.[partition] ?? 0)

// Each task reports each day; print a day once every task has reported it.
const partialDays = new Map<number, DailyReport[]>()
let daysPrinted = 0
function printDay(parts: DailyReport[], complete: boolean): void {
  const day = parts[0]!.day
  const byOrigin: Record<string, number> = {}
  let flightsOfDay = 0
  let delayed = 0
  let late = 0
  for (const p of parts) {
    flightsOfDay += p.flights
    delayed += p.delayed
    late += p.lateForReportedDays
    for (const [o, n] of Object.entries(p.byOrigin)) byOrigin[o] = (byOrigin[o] ?? 0) + n
  }
  const busiest = Object.entries(byOrigin)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([o, n]) => `${o} ${fmt(n)}`)
    .join(', ')
  const lateNote = late > 0 ? ` · ${fmt(late)} late for earlier days` : ''
  console.log(`day ${date(day)}  ${fmt(flightsOfDay).padStart(6)} flights · ${fmt(delayed).padStart(5)} delayed >15 min · busiest ${busiest}${lateNote}${complete ? '' : ' (partial)'}`)
  daysPrinted++
}
runtime.subscribe<string, DailyReport>(
  'daily-reports',
  (r, p, offset) => {
    if (isOld('daily-reports', p, offset)) return
    const report = r.value!
    const parts = partialDays.get(report.day) ?? []
    parts.push(report)
    partialDays.set(report.day, parts)
    if (parts.length === partitions) {
      partialDays.delete(report.day)
      printDay(parts, true)
    }
  },
  { valueSerde: Serdes.JSON<DailyReport>() },
)

// A progress line every second, from the runtime's metrics (what the live page and Prometheus show too).
/** No progress lines while the flights file loads (the runtime idles meanwhile). */
let loading = false
let lastProcessed = 0
/** Wall-clock punctuation lateness so far, summed over tasks: cumulative bucket counts, then the total. */
let lastLateness: number[] = []
function progressLine(): void {
  const m = runtime.metrics()
  const processed = m.processedRecords
  const perSecond = processed - lastProcessed
  lastProcessed = processed
  const lateness = m.tasks.reduce((sum, t) => {
    const h = t.punctuationLateness
    return [...h.buckets.map((b) => b.count), h.count].map((n, i) => n + (sum[i] ?? 0))
  }, [] as number[])
  const lateBy = latestInBuckets(lastLateness, lateness, m.tasks[0]?.punctuationLateness.buckets.map((b) => b.le) ?? [])
  lastLateness = lateness
  // Idle (all fed, or waiting with --ui): the last line still holds.
  if (loading || m.tasks.length === 0 || perSecond === 0) return
  const streamTimes = m.tasks.map((t) => t.streamTime).filter((t): t is number => t !== undefined)
  const st = streamTimes.length > 0 ? minute(Math.min(...streamTimes)) : 'unknown'
  const inTasks = m.tasks.reduce((n, t) => n + t.processedRecords, 0)
  const behind = inTasks === 0 ? 0 : m.tasks.reduce((n, t) => n + t.recordLateness.avgMs * t.processedRecords, 0) / inTasks
  const elapsed = Math.max(0, Math.round((Date.now() - startedAt) / 1000))
  const punctuations = lateBy === undefined ? '' : ` · wall-clock punctuations ≤ ${lateBy} ms late`
  console.log(`  [${elapsed} s] ${fmt(processed)} flights (${fmt(perSecond)}/s) · slowest stream time ${st} · records ${(behind / 60_000).toFixed(1)} min behind it on average${punctuations}`)
}
/**
 * How late the latest of the punctuations since the last line came, at most: the smallest bucket bound
 * holding every one of them (cumulative counts, the total last). Undefined when none ran.
 */
function latestInBuckets(before: number[], now: number[], bounds: number[]): number | undefined {
  const total = (now[bounds.length] ?? 0) - (before[bounds.length] ?? 0)
  if (total === 0) return undefined
  const i = bounds.findIndex((_, k) => (now[k] ?? 0) - (before[k] ?? 0) === total)
  return i < 0 ? Infinity : bounds[i]
}

// Airport alerts: count the quiet ones, print each expiry (an airport without a flight for a day).
const quietByAirport = new Map<string, number>()
let quietAlerts = 0
let expiries = 0
runtime.subscribe<string, AirportAlert>(
  'airport-alerts',
  (r, p, offset) => {
    const a = r.value!
    if (a.kind === 'quiet') {
      quietAlerts++
      quietByAirport.set(a.airport, (quietByAirport.get(a.airport) ?? 0) + 1)
      return
    }
    expiries++
    if (isOld('airport-alerts', p, offset)) return
    if (expiries <= 8) console.log(`  airport ${a.airport}: no departure for a day since ${minute(a.lastDeparture)}; its state expired at ${minute(a.at)} (event-time TTL)`)
    else if (expiries === 9) console.log('  (further expiries are counted, not printed)')
  },
  { valueSerde: Serdes.JSON<AirportAlert>() },
)

// Hourly delayed-flight counts, final results only: each (airport, hour) must arrive exactly once.
const hourly = new Map<string, number>()
let duplicateFinals = 0
runtime.subscribe<Windowed<string>, number>(
  'hourly-delays',
  (r) => {
    const id = `${r.key!.key} ${r.key!.window.start}`
    if (hourly.has(id)) duplicateFinals++
    hourly.set(id, r.value!)
  },
  { keySerde: Serdes.JSON<Windowed<string>>(), valueSerde: Serdes.Long() },
)

await runtime.start()
const progress = setInterval(progressLine, 1000)
if (ui) {
  const address = await runtime.metricsAddress()
  if (address !== undefined) console.log(`live page: ${address.pageUrl}  (Prometheus metrics: ${address.url})`)
}
for (const topic of ['daily-reports', 'airport-alerts']) before.set(topic, runtime.committedEndOffsets(topic))
// The flights topic is durable: what it holds was fed by an earlier run and is processed first; feed the rest.
const fed = runtime.committedEndOffsets('flights').reduce((a, b) => a + b, 0)
if (!runtime.resumed) console.log(`state directory ${stateDir}: starting fresh (stop any time; running again resumes)`)
else if (fed >= total) console.log(`state directory ${stateDir}: an earlier run fed all ${fmt(total)} flights; finishing what it left and showing the results (--fresh starts over)`)
else console.log(`state directory ${stateDir}: an earlier run fed ${fmt(fed)} flights; processing what it left, then feeding the other ${fmt(total - fed)} (--fresh starts over)`)
let flights: Flights | undefined
let loadSeconds = 0
if (fed < total) {
  const loadStart = Date.now()
  loading = true
  // On a worker thread: meanwhile the runtime fires its wall-clock punctuations on time and the live page answers.
  flights = await loadFlightsOffThread(limit)
  loading = false
  loadSeconds = (Date.now() - loadStart) / 1000
  console.log(
    `loaded ${fmt(flights.count)} flights in ${loadSeconds.toFixed(1)} s; replaying them in order of actual departure ` +
      `over ${partitions} partitions. Record timestamps are scheduled departures, so the stream is out of order.`,
  )
}
console.log('')
let stopping = false
const interrupted = (): void => {
  stopping = true
  console.log('\nstopping: committing what was processed; run it again to resume')
}
process.once('SIGINT', interrupted)
const producer = runtime.producer<string, FlightValue>('flights', { valueSerde: Serdes.JSON<FlightValue>() })
// Flights go in batches; with a rate, a tenth of a second's worth at a time, each when its time comes.
const BATCH = rate === Infinity ? 20_000 : Math.max(1, Math.round(rate / 10))
const feedStart = Date.now()
for (let start = fed; flights !== undefined && start < flights.count && !stopping; start += BATCH) {
  const order = flights.replayOrder
  const end = Math.min(flights.count, start + BATCH)
  for (let j = start; j < end; j++) {
    const i = order[j]!
    producer.send(flights.origin[i]!, { delay: flights.delay[i]!, distance: flights.distance[i]!, destination: flights.destination[i]! }, flights.scheduled[i]!)
  }
  // Back-pressure: let the runtime catch up before producing more, as a real feed would.
  while (runtime.metrics().processedRecords < end - fed - BATCH) await new Promise((r) => setImmediate(r))
  const due = feedStart + ((end - fed) / rate) * 1000
  if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()))
}
let finishedAt: number | undefined
if (ui && !stopping) {
  await runtime.idle()
  finishedAt = Date.now()
  process.off('SIGINT', interrupted)
  console.log(`\nevery flight is processed; the live page stays up (wall-clock punctuations go on): Ctrl-C for the results`)
  await new Promise((resolve) => process.once('SIGINT', resolve))
}
clearInterval(progress)
await runtime.stop({ drain: !stopping })
if (stopping) process.exit(130)
for (const parts of [...partialDays.values()].sort((a, b) => a[0]!.day - b[0]!.day)) printDay(parts, false)

const worst = [...hourly].sort((a, b) => b[1] - a[1]).slice(0, 10)
console.log(`\nhourly flights delayed > ${DELAYED_MIN} min per airport, final results only (1 h windows, ${HOURLY_GRACE / 60_000} min grace, untilWindowCloses):`)
console.log(`  ${fmt(hourly.size)} final (airport, hour) results, ${duplicateFinals} emitted twice; ${fmt(runtime.metrics().droppedRecords.late)} late flights dropped${runtime.resumed ? ' in this run' : ''}`)
console.log('  worst airport-hours:')
console.log('    airport  hour (UTC)          delayed')
for (const [id, n] of worst) {
  const [airport, start] = id.split(' ') as [string, string]
  console.log(`    ${airport.padEnd(7)}  ${minute(Number(start))}  ${fmt(n).padStart(7)}`)
}

const topQuiet = [...quietByAirport].sort((a, b) => b[1] - a[1]).slice(0, 5).map(([a, n]) => `${a} ${fmt(n)}`).join(', ')
console.log(`\nquiet-airport alerts (no departure for 3 h, event-time timers): ${fmt(quietAlerts)} at ${quietByAirport.size} airports; most: ${topQuiet}`)
console.log(`airport state expired after a day without departures (event-time TTL): ${fmt(expiries)}`)

// Processing time: the run less the time the flights file took to load.
const seconds = ((finishedAt ?? Date.now()) - startedAt) / 1000 - loadSeconds
const m = runtime.metrics()
const dropped = Object.values(m.droppedRecords).reduce((a, b) => a + b, 0)
console.log(
  `\ndone: ${fmt(m.processedRecords)} flights${runtime.resumed ? ' in this run' : ''} in ${seconds.toFixed(1)} s (${fmt(Math.round(m.processedRecords / seconds))}/s) · ` +
    `${fmt(daysPrinted)} daily reports${flights === undefined ? '' : ` (${Math.round((flights.scheduled[flights.count - 1]! - flights.scheduled[0]!) / DAY)} days of data)`} · ` +
    `${fmt(m.punctuations)} punctuations · ${fmt(dropped)} records dropped`,
)
