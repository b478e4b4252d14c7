import { BufferConfig, Serdes, StreamsBuilder, Suppressed, TimeWindows } from '../../src/index.js'
import type { Topology, Windowed } from '../../src/index.js'
import { DAY, DELAYED_MIN, HOUR } from './topology.js'
import type { FlightValue } from './topology.js'

/** Weekly windows (aligned to the epoch, as every time window is: they start on Thursdays). */
export const WEEK = 7 * DAY
/** A week's results wait this long for late flights (the data is out of order by its delays). */
export const WEEKLY_GRACE = 12 * HOUR

/** A state's departures of one week. */
export interface StateDelays {
  readonly flights: number
  /** Departures more than 15 minutes late. */
  readonly delayed: number
  /** Sum of the departure delays in minutes (early departures count negative). */
  readonly totalDelayMin: number
}

/** A flight with its origin airport's state (the stream-table join's result). */
interface StateFlight {
  readonly state: string
  readonly delay: number
}

/**
 * Delays by state: flights (keyed by origin airport) join the table of airports (code -> state, from
 * vega-datasets' airports.csv) as they arrive; the joined flights, re-keyed by state, are counted in
 * weekly windows, final results only, to topic `weekly-state-delays`. The airports table's store
 * (`airport-states`) and the weekly aggregate's (`state-delays`) answer interactive queries.
 */
export function statesTopology(): Topology {
  const b = new StreamsBuilder()
  const airports = b.table<string, string>('airports', { keySerde: Serdes.String(), valueSerde: Serdes.String() }, { name: 'airport-states' })
  b.stream<string, FlightValue>('flights', { keySerde: Serdes.String(), valueSerde: Serdes.JSON<FlightValue>() })
    .join(airports, (flight, state): StateFlight => ({ state, delay: flight.delay }), { name: 'origin-state' })
    .groupBy((_origin, flight) => flight.state, { name: 'by-state', keySerde: Serdes.String(), valueSerde: Serdes.JSON<StateFlight>() })
    .windowedBy(TimeWindows.ofSizeAndGrace(WEEK, WEEKLY_GRACE))
    .aggregate(
      (): StateDelays => ({ flights: 0, delayed: 0, totalDelayMin: 0 }),
      (_state, flight, week) => ({ flights: week.flights + 1, delayed: week.delayed + (flight.delay > DELAYED_MIN ? 1 : 0), totalDelayMin: week.totalDelayMin + flight.delay }),
      { name: 'state-delays', valueSerde: Serdes.JSON<StateDelays>() },
    )
    .suppress(Suppressed.untilWindowCloses<Windowed<string>, StateDelays>(BufferConfig.unbounded()))
    .toStream()
    .to('weekly-state-delays', { keySerde: Serdes.JSON<Windowed<string>>(), valueSerde: Serdes.JSON<StateDelays>() })
  return b.build()
}
