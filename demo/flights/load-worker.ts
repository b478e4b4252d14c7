/**
 * Loads the flights on a worker thread (`loadFlightsOffThread`): decoding the parquet file and sorting
 * the replay order take seconds of CPU, which on the main thread would hold up the runtime and the live
 * page. Airport codes travel as indexes into a table of the codes, so that every column is a typed
 * array, handed over without a copy.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { loadFlights } from './data.js'
import type { FlightColumns } from './data.js'

const flights = await loadFlights((workerData as { limit: number }).limit)
const airports: string[] = []
const index = new Map<string, number>()
const code = (airport: string): number => {
  let i = index.get(airport)
  if (i === undefined) index.set(airport, (i = airports.push(airport) - 1))
  return i
}
const origin = new Uint16Array(flights.count)
const destination = new Uint16Array(flights.count)
for (let i = 0; i < flights.count; i++) {
  origin[i] = code(flights.origin[i]!)
  destination[i] = code(flights.destination[i]!)
}
const columns: FlightColumns = { count: flights.count, scheduled: flights.scheduled, delay: flights.delay, distance: flights.distance, origin, destination, airports, replayOrder: flights.replayOrder }
parentPort!.postMessage(columns, [flights.scheduled.buffer, flights.delay.buffer, flights.distance.buffer, origin.buffer, destination.buffer, flights.replayOrder.buffer] as ArrayBuffer[])
