import { EmbeddedRuntime, JoinWindows, Named, Serdes, silentLogger, StreamsBuilder } from '../src/index.js'
import type { Topology } from '../src/index.js'
import { loadAirports, loadFlights } from '../demo/flights/data.js'
import type { Airport, Flights } from '../demo/flights/data.js'
import { median } from './stats.js'

/** Departures from an airport and flights heading to it are joined when within a minute of each other. */
const WITHIN_MS = 60_000
const MINUTE = 60_000
const PAIRS = 5

export interface StreamStreamJoinResult {
  /** Input records: two per flight (its departure at its origin, and at its destination as a flight heading there). */
  readonly records: number
  readonly results: number
  readonly punctualRecordsPerSecond: number
  readonly handWrittenRecordsPerSecond: number
  /** punctual time / hand-written time: the median of the measured pairs. */
  readonly ratio: number
  readonly ratios: readonly number[]
  readonly identicalOutput: boolean
}

type Output = string[]

interface Pair {
  readonly punctualMs: number
  readonly handMs: number
  readonly results: number
  readonly same: boolean
}

/**
 * One warm-up of each, then PAIRS pairs, each after a full collection. A pair's outputs are compared
 * and dropped before the next pair: outputs kept alive would make every later run's collections mark
 * them, slowing whichever run allocates more for reasons outside it.
 */
async function pairs(runPunctual: () => Promise<Output>, runHand: () => Output): Promise<Pair[]> {
  const gc = (globalThis as { gc?: () => void }).gc
  await runPunctual()
  runHand()
  const out: Pair[] = []
  for (let i = 0; i < PAIRS; i++) {
    gc?.()
    let t0 = performance.now()
    const p = await runPunctual()
    const punctualMs = performance.now() - t0
    gc?.()
    t0 = performance.now()
    const h = runHand()
    const handMs = performance.now() - t0
    const same = p.length === h.length && p.every((line, k) => line === h[k])
    out.push({ punctualMs, handMs, results: h.length, same })
  }
  return out
}

const ratio = (x: Pair): number => x.punctualMs / x.handMs

/**
 * The events, in actual-departure order: for each flight, at its actual departure time, one event at
 * its origin (a departure, side 0) and one at its destination (a flight heading there, side 1). The
 * side travels in the value's lowest bit (value = 2 * delay + side), so both sides come from one topic
 * and both engines see one order.
 */
function forEachEvent(f: Flights, each: (airport: string, value: number, ts: number) => void, from = 0, to = f.count): void {
  for (let j = from; j < to; j++) {
    const i = f.replayOrder[j] as number
    const delay = f.delay[i] as number
    const ts = (f.scheduled[i] as number) + delay * MINUTE
    each(f.origin[i] as string, 2 * delay, ts)
    each(f.destination[i] as string, 2 * delay + 1, ts)
  }
}

/** The DSL version: one topic split into its two sides, joined within a minute; each result into `out`. */
function topology(out: Output): Topology {
  const b = new StreamsBuilder()
  const sides = b
    .stream<string, number>('airport-events', { valueSerde: Serdes.Double() })
    .split()
    .branch((_k, v) => (v & 1) === 0, Named.as('departures'))
    .defaultBranch(Named.as('arriving'))
  // The side bit comes off in the joiner: (2d + 0) >> 1 = d, (2a + 1) >> 1 = a.
  const departures = sides.departures as NonNullable<typeof sides.departures>
  const arriving = sides.arriving as NonNullable<typeof sides.arriving>
  departures
    .join(arriving, (d, a) => (d >> 1) + (a >> 1), JoinWindows.ofTimeDifferenceWithNoGrace(WITHIN_MS))
    .process(() => ({ process: (r) => void out.push(`${r.key} ${r.timestamp} ${r.value}`) }))
  return b.build()
}

export async function punctual(f: Flights): Promise<Output> {
  const out: Output = []
  const rt = new EmbeddedRuntime(topology(out), { applicationId: 'bench-join', logger: silentLogger })
  await rt.start()
  const producer = rt.producer<string, number>('airport-events', { valueSerde: Serdes.Double() })
  const send = (airport: string, value: number, ts: number): void => {
    producer.send(airport, value, ts)
  }
  const BATCH = 50_000
  // A batch of flights at a time, keeping about one batch waiting, as a consumer's fetch would.
  for (let start = 0; start < f.count; start += BATCH) {
    const end = Math.min(f.count, start + BATCH)
    forEachEvent(f, send, start, end)
    while (rt.metrics().processedRecords < 2 * (end - BATCH)) await new Promise((r) => setImmediate(r))
  }
  await rt.stop()
  return out
}

/**
 * The same join by hand: per airport, each side's recent events in arrival order (timestamps do not
 * go back here); an event joins the other side's events within the minute, oldest first, and events
 * older than the retention (two minutes behind their side's latest) are dropped from the front.
 */
export function handWritten(f: Flights): Output {
  const out: Output = []
  interface Side {
    ts: number[]
    value: number[]
    head: number
  }
  const byAirport = new Map<string, [Side, Side]>()
  const maxTs = [-1, -1]
  const retention = 2 * WITHIN_MS
  forEachEvent(f, (airport, raw, ts) => {
    const side = raw & 1
    const value = raw >> 1
    let sides = byAirport.get(airport)
    if (sides === undefined) byAirport.set(airport, (sides = [{ ts: [], value: [], head: 0 }, { ts: [], value: [], head: 0 }]))
    const other = sides[1 - side] as Side
    const visibleFrom = Math.max(ts - WITHIN_MS, (maxTs[1 - side] as number) - retention + 1)
    for (let k = other.head; k < other.ts.length; k++) {
      const t = other.ts[k] as number
      if (t < visibleFrom) continue
      if (t > ts + WITHIN_MS) break
      out.push(`${airport} ${Math.max(ts, t)} ${value + (other.value[k] as number)}`)
    }
    const own = sides[side] as Side
    if (ts > (maxTs[side] as number)) maxTs[side] = ts
    own.ts.push(ts)
    own.value.push(value)
    // Drop what no later event can see.
    const cutoff = (maxTs[side] as number) - retention
    while (own.head < own.ts.length && (own.ts[own.head] as number) <= cutoff) own.head++
    if (own.head > 1024 && own.head * 2 > own.ts.length) {
      own.ts = own.ts.slice(own.head)
      own.value = own.value.slice(own.head)
      own.head = 0
    }
  })
  return out
}

/** The flights as airport events joined stream-stream (6 M records), punctual against the hand-written loop, in pairs. */
export async function streamStreamJoin(limit = Infinity): Promise<StreamStreamJoinResult> {
  const f = await loadFlights(limit)
  const runs = await pairs(() => punctual(f), () => handWritten(f))
  const m = median(runs, ratio)
  return {
    records: 2 * f.count,
    results: m.results,
    punctualRecordsPerSecond: (2 * f.count) / (m.punctualMs / 1000),
    handWrittenRecordsPerSecond: (2 * f.count) / (m.handMs / 1000),
    ratio: ratio(m),
    ratios: runs.map(ratio),
    identicalOutput: runs.every((x) => x.same),
  }
}

export interface StreamTableJoinResult {
  readonly records: number
  readonly airports: number
  readonly punctualRecordsPerSecond: number
  readonly handWrittenRecordsPerSecond: number
  /** punctual time / hand-written time: the median of the measured pairs. */
  readonly ratio: number
  readonly ratios: readonly number[]
  readonly identicalOutput: boolean
}

/** Flights (key: origin) joined to the airports table (key: code): each flight's delay with its airport's state. */
function enrichTopology(out: Output): Topology {
  const b = new StreamsBuilder()
  const airports = b.table<string, Airport>('airports', { valueSerde: Serdes.JSON<Airport>() })
  b.stream<string, number>('flights', { valueSerde: Serdes.Double() })
    .leftJoin(airports, (delay, airport) => `${airport?.state ?? '??'} ${delay}`)
    .process(() => ({ process: (r) => void out.push(`${r.key} ${r.timestamp} ${r.value}`) }))
  return b.build()
}

/** The airports first (at time 0, so they are read before any flight), then the flights in replay order. */
export async function punctualEnrich(f: Flights, airports: readonly Airport[]): Promise<Output> {
  const out: Output = []
  const rt = new EmbeddedRuntime(enrichTopology(out), { applicationId: 'bench-enrich', logger: silentLogger })
  await rt.start()
  const table = rt.producer<string, Airport>('airports', { valueSerde: Serdes.JSON<Airport>() })
  for (const a of airports) table.send(a.iata, a, 0)
  await rt.idle()
  const producer = rt.producer<string, number>('flights', { valueSerde: Serdes.Double() })
  const BATCH = 50_000
  const base = airports.length
  for (let start = 0; start < f.count; start += BATCH) {
    const end = Math.min(f.count, start + BATCH)
    for (let j = start; j < end; j++) {
      const i = f.replayOrder[j] as number
      producer.send(f.origin[i] as string, f.delay[i] as number, f.scheduled[i] as number)
    }
    while (rt.metrics().processedRecords < base + end - BATCH) await new Promise((r) => setImmediate(r))
  }
  await rt.stop()
  return out
}

/** The same by hand: a Map from code to airport, one lookup per flight. */
export function handWrittenEnrich(f: Flights, airports: readonly Airport[]): Output {
  const byCode = new Map<string, Airport>()
  for (const a of airports) byCode.set(a.iata, a)
  const out: Output = []
  for (let j = 0; j < f.count; j++) {
    const i = f.replayOrder[j] as number
    const origin = f.origin[i] as string
    out.push(`${origin} ${f.scheduled[i] as number} ${byCode.get(origin)?.state ?? '??'} ${f.delay[i] as number}`)
  }
  return out
}

/** 3 M flights joined to the 3,376 airports (a stream-table left join), punctual against a Map lookup, in pairs. */
export async function streamTableJoin(limit = Infinity): Promise<StreamTableJoinResult> {
  const f = await loadFlights(limit)
  const airports = loadAirports()
  const runs = await pairs(() => punctualEnrich(f, airports), () => handWrittenEnrich(f, airports))
  const m = median(runs, ratio)
  return {
    records: f.count,
    airports: airports.length,
    punctualRecordsPerSecond: f.count / (m.punctualMs / 1000),
    handWrittenRecordsPerSecond: f.count / (m.handMs / 1000),
    ratio: ratio(m),
    ratios: runs.map(ratio),
    identicalOutput: runs.every((x) => x.same),
  }
}
