import { BufferConfig, Named, PunctuationType, Serdes, StateDescriptors, Stores, StreamsBuilder, Suppressed, TimeWindows } from '../../src/index.js'
import type { ExpiredEntry, KeyedProcessor, KeyedProcessorContext, KeyValueStore, ProcessorContext, StreamRecord, Timer, Topology, ValueState, Windowed } from '../../src/index.js'

export const DAY = 86_400_000
export const HOUR = 3_600_000
/** An airport with no departure for this long (in event time) raises an alert. */
export const QUIET_AFTER = 3 * HOUR
/** Midnight UTC, 1 January 2001: the anchor of the daily report. */
export const FIRST_MIDNIGHT = Date.UTC(2001, 0, 1)
export const DELAYED_MIN = 15
/** Hourly windows accept flights up to 30 minutes after the hour closes (the data is out of order). */
export const HOURLY_GRACE = 30 * 60_000

export interface FlightValue {
  readonly delay: number
  readonly distance: number
  readonly destination: string
}

interface DayStats {
  flights: number
  delayed: number
  byOrigin: Record<string, number>
}

/** One task's summary of one day, sent when its stream time passes the following midnight. */
export interface DailyReport {
  readonly task: string
  readonly day: number
  readonly flights: number
  readonly delayed: number
  readonly byOrigin: Record<string, number>
  /** Records that arrived after their day had been reported (counted, not added). */
  readonly lateForReportedDays: number
}

/** One task's progress, sent by a wall-clock punctuation every second (aligned to whole seconds). */
export interface Progress {
  readonly task: string
  readonly tick: number
  readonly processed: number
  readonly behindStreamTime: number
  readonly streamTime: number | null
}

/** An airport alert: quiet for three hours (event-time timer), or its state expired after a day (TTL). */
export interface AirportAlert {
  readonly kind: 'quiet' | 'expired'
  readonly airport: string
  /** The last scheduled departure seen from the airport. */
  readonly lastDeparture: number
  /** When the alert was raised (the timer's time, or the expiry). */
  readonly at: number
}

/**
 * The demo application: flights keyed by origin airport.
 * - DSL: hourly counts of flights delayed more than 15 minutes per airport, final results only
 *   (`untilWindowCloses`), to topic `hourly-delays`.
 * - A stream-time punctuation anchored at midnight UTC reports each day once stream time has passed it;
 *   a wall-clock punctuation reports progress every second, whether or not records arrive.
 * - A keyed processor raises "no departure for 3 hours" alerts with event-time timers and reports
 *   airport state expiring after a day (event-time TTL).
 */
export function flightsTopology(options: { progressStartMs: number; /** Prepended to every topic name. @default '' */ topicPrefix?: string }): Topology {
  const t = (name: string): string => `${options.topicPrefix ?? ''}${name}`
  const builder = new StreamsBuilder()
  builder
    .stream<string, FlightValue>(t('flights'), { valueSerde: Serdes.JSON<FlightValue>(), name: 'flights' })
    .filter((_airport, flight) => flight.delay > DELAYED_MIN, Named.as('delayed-flights'))
    .groupByKey()
    .windowedBy(TimeWindows.ofSizeAndGrace(HOUR, HOURLY_GRACE))
    .count({ name: 'hourly-delayed-counts' })
    .suppress(Suppressed.untilWindowCloses<Windowed<string>, number>(BufferConfig.unbounded()).withName('hourly-final'))
    .toStream()
    .to(t('hourly-delays'), { keySerde: Serdes.JSON<Windowed<string>>(), valueSerde: Serdes.Long() })
  return builder
    .build()
    .addProcessor('daily', () => new DailyReporter(options.progressStartMs), 'flights')
    .addStateStore(Stores.inMemoryKeyValueStore<number, DayStats>('daily-stats'), 'daily')
    .addStateStore(Stores.inMemoryKeyValueStore<string, number>('daily-progress'), 'daily')
    .addSink('daily-reports', t('daily-reports'), { valueSerde: Serdes.JSON<DailyReport>() }, 'daily')
    .addSink('progress', t('progress'), { valueSerde: Serdes.JSON<Progress>() }, 'daily')
    .addKeyedProcessor('quiet-airports', () => new QuietAirports(), 'flights')
    .addSink('airport-alerts', t('airport-alerts'), { valueSerde: Serdes.JSON<AirportAlert>() }, 'quiet-airports')
}

/**
 * Per airport: an event-time timer three hours after its latest departure (moved on every newer
 * departure), and the latest departure in state with an event-time TTL of one day, whose expiry is
 * reported.
 */
class QuietAirports implements KeyedProcessor<string, FlightValue, string, AirportAlert> {
  private ctx!: KeyedProcessorContext<string, string, AirportAlert>
  private last!: ValueState<number>

  init(ctx: KeyedProcessorContext<string, string, AirportAlert>): void {
    this.ctx = ctx
    this.last = ctx.getState(StateDescriptors.value<number>('last-departure', { ttl: { ttlMs: DAY, timeDomain: 'event' } }))
  }

  process(record: StreamRecord<string, FlightValue>): void {
    const previous = this.last.value()
    // Out-of-order data: only a newer departure moves the alert.
    if (previous !== undefined && record.timestamp <= previous) return
    if (previous !== undefined) this.ctx.timers.deleteEventTimeTimer(previous + QUIET_AFTER)
    this.last.update(record.timestamp)
    this.ctx.timers.registerEventTimeTimer(record.timestamp + QUIET_AFTER)
  }

  onTimer(timer: Timer<string>): void {
    const lastDeparture = this.last.value() ?? timer.timestamp - QUIET_AFTER
    this.emit({ kind: 'quiet', airport: timer.key, lastDeparture, at: timer.timestamp })
  }

  onExpire(entry: ExpiredEntry<string>): void {
    this.emit({ kind: 'expired', airport: entry.key, lastDeparture: entry.value as number, at: entry.expiredAt })
  }

  private emit(alert: AirportAlert): void {
    this.ctx.forward({ key: alert.airport, value: alert, timestamp: alert.at, headers: [] })
  }
}

type Counter = 'reportedUntil' | 'lateForReportedDays' | 'processed' | 'behindStreamTime'

/**
 * Per task: day statistics, reported once stream time passes the day's end. Everything it remembers is
 * in its stores (not in fields), so a durable run resumes it exactly after a crash.
 */
class DailyReporter {
  private ctx!: ProcessorContext<string, DailyReport | Progress>
  private days!: KeyValueStore<number, DayStats>
  /** reportedUntil: days before it have been reported; the rest are counts. */
  private counters!: KeyValueStore<Counter, number>

  constructor(private readonly progressStartMs: number) {}

  private get(name: Counter): number {
    return this.counters.get(name) ?? (name === 'reportedUntil' ? FIRST_MIDNIGHT : 0)
  }

  private add(name: Counter, n: number): void {
    this.counters.put(name, this.get(name) + n)
  }

  init(ctx: ProcessorContext<string, DailyReport | Progress>): void {
    this.ctx = ctx
    this.days = ctx.getStateStore('daily-stats')
    this.counters = ctx.getStateStore('daily-progress')
    ctx.schedule({ type: PunctuationType.STREAM_TIME, intervalMs: DAY, startTime: FIRST_MIDNIGHT, name: 'daily-report' }, (now) => this.report(now))
    ctx.schedule({ type: PunctuationType.WALL_CLOCK_TIME, intervalMs: 1000, startTime: this.progressStartMs, name: 'progress' }, (now) => this.progress(now))
  }

  process(record: StreamRecord<string, FlightValue>): void {
    this.add('processed', 1)
    const streamTime = this.ctx.currentStreamTimeMs() ?? 0
    // Stream time already includes this record; a record is out of order if it is older than that.
    if (record.timestamp < streamTime) this.add('behindStreamTime', 1)
    const day = record.timestamp - (record.timestamp % DAY)
    if (day < this.get('reportedUntil')) {
      this.add('lateForReportedDays', 1)
      return
    }
    const stats = this.days.get(day) ?? { flights: 0, delayed: 0, byOrigin: {} }
    stats.flights++
    if (record.value.delay > DELAYED_MIN) stats.delayed++
    stats.byOrigin[record.key] = (stats.byOrigin[record.key] ?? 0) + 1
    // Put it back even though it is the same object: a durable store saves what is put, not what changes.
    this.days.put(day, stats)
  }

  /** Reports every complete day before the midnight that stream time has passed. */
  private report(now: number): void {
    const midnight = now - (now % DAY)
    for (let day = this.get('reportedUntil'); day < midnight; day += DAY) {
      const stats = this.days.delete(day) ?? { flights: 0, delayed: 0, byOrigin: {} }
      const report: DailyReport = { task: this.ctx.taskId.toString(), day, ...stats, lateForReportedDays: this.get('lateForReportedDays') }
      this.counters.put('lateForReportedDays', 0)
      this.ctx.forward({ key: String(day), value: report, timestamp: day + DAY - 1, headers: [] }, 'daily-reports')
    }
    if (midnight > this.get('reportedUntil')) this.counters.put('reportedUntil', midnight)
  }

  private progress(now: number): void {
    const value: Progress = {
      task: this.ctx.taskId.toString(),
      tick: now - (now % 1000),
      processed: this.get('processed'),
      behindStreamTime: this.get('behindStreamTime'),
      streamTime: this.ctx.currentStreamTimeMs() ?? null,
    }
    this.ctx.forward({ key: value.task, value, timestamp: now, headers: [] }, 'progress')
  }
}
