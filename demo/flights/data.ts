import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { Worker } from 'node:worker_threads'
import { parquetRead } from 'hyparquet'
import { compressors } from 'hyparquet-compressors'

/** The US domestic flights of 2001 from vega-datasets, column by column. */
export interface Flights {
  readonly count: number
  /** Scheduled departure, epoch ms (the record timestamp). */
  readonly scheduled: Float64Array
  /** Departure delay in minutes (negative: early). */
  readonly delay: Int32Array
  readonly distance: Int32Array
  readonly origin: string[]
  readonly destination: string[]
  /** Row indexes in order of actual departure (scheduled + delay): the replay order. */
  readonly replayOrder: Uint32Array
}

const MINUTE = 60_000
/** Rows in vega-datasets' flights-3m.parquet. */
export const FLIGHT_ROWS = 3_000_000

/** The parquet file inside the vega-datasets package (its exports map does not list data files). */
export function flightsFile(): string {
  const entry = createRequire(import.meta.url).resolve('vega-datasets') // <root>/build/index.js
  return join(dirname(dirname(entry)), 'data', 'flights-3m.parquet')
}

/** Reads the first `limit` flights (all 3,000,000 by default) and computes the replay order. */
export async function loadFlights(limit = Infinity): Promise<Flights> {
  const buf = readFileSync(flightsFile())
  const file = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength) as ArrayBuffer
  const count = Math.min(FLIGHT_ROWS, limit)
  const scheduled = new Float64Array(count)
  const delay = new Int32Array(count)
  const distance = new Int32Array(count)
  const origin = new Array<string>(count)
  const destination = new Array<string>(count)
  await parquetRead({
    file,
    compressors,
    rowEnd: count,
    columns: ['date', 'delay', 'distance', 'origin', 'destination'],
    onChunk({ columnName, columnData, rowStart }) {
      const n = Math.min(columnData.length, count - rowStart)
      for (let i = 0; i < n; i++) {
        const r = rowStart + i
        const v = columnData[i] as unknown
        if (columnName === 'date') scheduled[r] = v instanceof Date ? v.getTime() : Number(v)
        else if (columnName === 'delay') delay[r] = Number(v)
        else if (columnName === 'distance') distance[r] = Number(v)
        else if (columnName === 'origin') origin[r] = v as string
        else destination[r] = v as string
      }
    },
  })
  const actual = new Float64Array(count)
  for (let i = 0; i < count; i++) actual[i] = (scheduled[i] as number) + (delay[i] as number) * MINUTE
  const replayOrder = new Uint32Array(count)
  for (let i = 0; i < count; i++) replayOrder[i] = i
  replayOrder.sort((a, b) => (actual[a] as number) - (actual[b] as number) || a - b)
  return { count, scheduled, delay, distance, origin, destination, replayOrder }
}

/** The flights as the loading worker hands them over: airports as indexes into `airports`. */
export interface FlightColumns extends Omit<Flights, 'origin' | 'destination'> {
  readonly origin: Uint16Array
  readonly destination: Uint16Array
  readonly airports: string[]
}

/** Airport codes turned back into strings between two turns of the event loop. */
const NAMES_PER_TURN = 50_000

/**
 * `loadFlights` on a worker thread: the event loop stays free while the file is decoded and the replay
 * order sorted (seconds for all 3,000,000 flights), so a runtime started before goes on firing its
 * wall-clock punctuations on time and its live page answers.
 */
export async function loadFlightsOffThread(limit = Infinity): Promise<Flights> {
  // The worker is TypeScript like the demo: it registers tsx first (Node 20 gives a worker no loader of its own).
  const start = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((tsx) => { tsx.register(); return import(${JSON.stringify(new URL('./load-worker.ts', import.meta.url).href)}) })`
  const worker = new Worker(start, { eval: true, workerData: { limit } })
  // Once it has posted the columns the worker ends by itself (terminating it would hold this thread while
  // its heap is torn down); an exit before that is a failure.
  const columns = await new Promise<FlightColumns>((resolve, reject) => {
    worker.once('message', resolve)
    worker.once('error', reject)
    worker.once('exit', (code) => reject(new Error(`the flights loader exited with code ${code} before it had loaded them`)))
  })
  // Grown by push: an array made at its full length (`new Array(3_000_000)`) starts as a dictionary,
  // whose conversion to a plain array holds the thread for a long while.
  const origin: string[] = []
  const destination: string[] = []
  for (let start = 0; start < columns.count; start += NAMES_PER_TURN) {
    const end = Math.min(columns.count, start + NAMES_PER_TURN)
    for (let i = start; i < end; i++) {
      origin.push(columns.airports[columns.origin[i]!]!)
      destination.push(columns.airports[columns.destination[i]!]!)
    }
    await new Promise((resolve) => setImmediate(resolve))
  }
  return { count: columns.count, scheduled: columns.scheduled, delay: columns.delay, distance: columns.distance, origin, destination, replayOrder: columns.replayOrder }
}

/** An airport of vega-datasets' airports.csv. */
export interface Airport {
  readonly iata: string
  readonly name: string
  readonly city: string
  readonly state: string
}

/** vega-datasets' airports.csv (3,376 US airports): code, name, city, state. */
export function loadAirports(): Airport[] {
  const text = readFileSync(join(dirname(flightsFile()), 'airports.csv'), 'utf8')
  const airports: Airport[] = []
  for (const line of text.split('\n').slice(1)) {
    if (line.trim() === '') continue
    const fields = csvFields(line)
    airports.push({ iata: fields[0] as string, name: fields[1] as string, city: fields[2] as string, state: fields[3] as string })
  }
  return airports
}

/** One CSV line's fields: commas inside double quotes are part of the field (the file has a few such names). */
function csvFields(line: string): string[] {
  const fields: string[] = []
  let field = ''
  let quoted = false
  for (const c of line) {
    if (c === '"') quoted = !quoted
    else if (c === ',' && !quoted) {
      fields.push(field)
      field = ''
    } else field += c
  }
  fields.push(field)
  return fields
}
