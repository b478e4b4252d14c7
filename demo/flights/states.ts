/**
 * `npm run demo:states`: delays by state. The flights of 2001 join the table of US airports (code,
 * city, state; vega-datasets' airports.csv) as they arrive, a stream-table join, and each state's
 * departures are counted in weekly windows, final results only. At the end, interactive queries read
 * the airports table and the week still open. Runs in memory (no state directory).
 * Options: see USAGE below (`npm run demo:states -- --help`).
 */
import { parseArgs } from 'node:util'
import { createConsoleLogger, EmbeddedRuntime, QueryableStoreTypes, Serdes } from '../../src/index.js'
import type { Windowed } from '../../src/index.js'
import { FLIGHT_ROWS, loadAirports, loadFlights } from './data.js'
import { DELAYED_MIN } from './topology.js'
import type { FlightValue } from './topology.js'
import { statesTopology, WEEK, WEEKLY_GRACE } from './states-topology.js'
import type { StateDelays } from './states-topology.js'

const USAGE = `usage: npm run demo:states -- [--limit N] [--partitions N]
  --limit N         replay only the first N flights (default: all ${FLIGHT_ROWS.toLocaleString('en-US')})
  --partitions N    partitions of the flights and airports topics, one task each (default 4)`

function parseArguments(): { limit: number; partitions: number } {
  let values
  try {
    values = parseArgs({ options: { limit: { type: 'string' }, partitions: { type: 'string', default: '4' }, help: { type: 'boolean', short: 'h', default: false } } }).values
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
  if (!(limit > 0 && (limit === Infinity || Number.isInteger(limit)) && Number.isInteger(partitions) && partitions >= 1)) {
    console.error(USAGE)
    process.exit(2)
  }
  return { limit, partitions }
}

const { limit, partitions } = parseArguments()
const fmt = (n: number): string => n.toLocaleString('en-US')
const date = (t: number): string => new Date(t).toISOString().slice(0, 10)
const average = (d: StateDelays): string => (d.totalDelayMin / d.flights).toFixed(1).padStart(5)
const share = (d: StateDelays): string => `${((100 * d.delayed) / d.flights).toFixed(0).padStart(3)}%`

console.log('punctual demo: delays by state, US domestic flights of 2001 joined with the airports they leave from')
const runtime = new EmbeddedRuntime(statesTopology(), {
  applicationId: 'flights-by-state',
  logger: createConsoleLogger({ level: 'warn' }),
  // The airports table and the flights are co-partitioned: both keyed by airport code.
  topics: { flights: { partitions }, airports: { partitions }, 'weekly-state-delays': { partitions: 1 } },
})

// Final results only: each (state, week) arrives once, when the week and its grace have passed.
const weeks = new Map<number, Map<string, StateDelays>>()
let duplicates = 0
runtime.subscribe<Windowed<string>, StateDelays>(
  'weekly-state-delays',
  (r) => {
    const start = r.key!.window.start
    let week = weeks.get(start)
    if (week === undefined) weeks.set(start, (week = new Map()))
    if (week.has(r.key!.key)) duplicates++
    week.set(r.key!.key, r.value!)
  },
  { keySerde: Serdes.JSON<Windowed<string>>(), valueSerde: Serdes.JSON<StateDelays>() },
)
await runtime.start()

// The table first: every airport at timestamp 0, so each task reads them before any flight.
const airports = loadAirports()
const airportProducer = runtime.producer<string, string>('airports')
for (const a of airports) airportProducer.send(a.iata, a.state, 0)
const flights = await loadFlights(limit)
console.log(`${fmt(airports.length)} airports in the table; replaying ${fmt(flights.count)} flights in order of actual departure over ${partitions} partitions`)

const startedAt = Date.now()
const producer = runtime.producer<string, FlightValue>('flights', { valueSerde: Serdes.JSON<FlightValue>() })
// About 8 hours of flights at a time, each batch processed before the next (as a live feed would come).
// The tasks take turns by record count, so a partition of busy airports lags one of quiet airports in
// event time by up to a batch; the repartitioned weekly counts see that as disorder, which the weeks'
// 12 h grace absorbs. Feeding days at once would make records late there, and they would be dropped.
const BATCH = 5_000
for (let start = 0; start < flights.count; start += BATCH) {
  const end = Math.min(flights.count, start + BATCH)
  for (let j = start; j < end; j++) {
    const i = flights.replayOrder[j]!
    producer.send(flights.origin[i]!, { delay: flights.delay[i]!, distance: flights.distance[i]!, destination: flights.destination[i]! }, flights.scheduled[i]!)
  }
  await runtime.idle()
}
const seconds = (Date.now() - startedAt) / 1000

// Interactive queries while it runs: the table's store, and the weeks not closed yet.
const table = runtime.store('airport-states', QueryableStoreTypes.keyValueStore<string, string>())
const open = [...runtime.store('state-delays', QueryableStoreTypes.windowStore<string, StateDelays>()).all()]
const openFlights = open.reduce((n, [, d]) => n + d.flights, 0)
console.log(`\ninteractive queries: airport-states holds ${fmt(table.approximateNumEntries())} airports (ORD is in ${table.get('ORD') ?? '?'}); state-delays holds ${fmt(open.length)} open (state, week) windows, ${fmt(openFlights)} flights`)
const lastOpen = open.reduce((latest, [w]) => Math.max(latest, w.window.start), -Infinity)
const busiestOpen = open.filter(([w]) => w.window.start === lastOpen).sort((a, b) => b[1].flights - a[1].flights).slice(0, 3)
if (busiestOpen.length > 0) console.log(`  the week of ${date(lastOpen)} so far: ${busiestOpen.map(([w, d]) => `${w.key} ${fmt(d.flights)} flights, ${average(d).trim()} min average`).join(' · ')}`)
await runtime.stop()

const closedFlights = [...weeks.values()].reduce((n, w) => [...w.values()].reduce((m, d) => m + d.flights, n), 0)
console.log(`\nweekly delays by state (1-week windows from Thursday, ${WEEKLY_GRACE / 3_600_000} h grace, final results only); the state with the longest average departure delay each week:`)
console.log('  week of      state  flights  avg delay  delayed >15 min')
const MIN_FLIGHTS = 200
for (const [start, week] of [...weeks].sort((a, b) => a[0] - b[0])) {
  const ranked = [...week].filter(([, d]) => d.flights >= MIN_FLIGHTS).sort((a, b) => b[1].totalDelayMin / b[1].flights - a[1].totalDelayMin / a[1].flights)
  const [state, d] = ranked[0] ?? []
  if (state === undefined || d === undefined) continue
  console.log(`  ${date(start)}  ${state.padEnd(5)}  ${fmt(d.flights).padStart(7)}  ${average(d)} min  ${share(d)}`)
}

const byState = new Map<string, { flights: number; delayed: number; totalDelayMin: number }>()
for (const week of weeks.values()) {
  for (const [state, d] of week) {
    const t = byState.get(state) ?? { flights: 0, delayed: 0, totalDelayMin: 0 }
    byState.set(state, { flights: t.flights + d.flights, delayed: t.delayed + d.delayed, totalDelayMin: t.totalDelayMin + d.totalDelayMin })
  }
}
console.log(`\nstates by average departure delay over the closed weeks (at least ${fmt(MIN_FLIGHTS * 10)} flights):`)
console.log('  state  flights  avg delay  delayed >15 min')
for (const [state, d] of [...byState].filter(([, t]) => t.flights >= MIN_FLIGHTS * 10).sort((a, b) => b[1].totalDelayMin / b[1].flights - a[1].totalDelayMin / a[1].flights).slice(0, 10)) {
  console.log(`  ${state.padEnd(5)}  ${fmt(d.flights).padStart(7)}  ${average(d)} min  ${share(d)}`)
}

const m = runtime.metrics()
const unmatched = flights.count - closedFlights - openFlights - m.droppedRecords.late
console.log(
  `\ndone: ${fmt(flights.count)} flights in ${seconds.toFixed(1)} s · ${fmt(closedFlights)} in ${fmt(weeks.size)} closed weeks, ${fmt(openFlights)} in weeks still open, ` +
    `${fmt(unmatched)} from airports not in the table · ${fmt(m.droppedRecords.late)} late flights dropped · ${duplicates} results emitted twice · delayed means more than ${DELAYED_MIN} min; weeks are ${WEEK / 86_400_000} days`,
)
