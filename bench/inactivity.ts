import { EmbeddedRuntime, Serdes, silentLogger, StateDescriptors, Topology } from '../src/index.js'
import type { KeyedProcessor, KeyedProcessorContext, StreamRecord, Timer, ValueState } from '../src/index.js'
import { loadFlights } from '../demo/flights/data.js'
import type { Flights } from '../demo/flights/data.js'
import { TimerQueue } from '../src/keyed/timer-queue.js'
import { feedFlights } from './flights-feed.js'
import { median } from './stats.js'

/** An origin airport with no departure for this long, in event time, raises an alert. */
export const QUIET_MS = 60 * 60_000
/** Measured punctual/hand-written pairs. */
const PAIRS = 5
/**
 * Unmeasured runs of punctual first: after one, the first measured pair was still the slowest in each of
 * 5 runs of this benchmark (2.4x to 3.5x the loop, the others 2.0x to 3.0x).
 */
const WARM_UPS = 3

/** "origin last-departure" per alert, in the order raised. */
export type Alerts = string[]

export interface InactivityResult {
  readonly records: number
  readonly alerts: number
  readonly punctualRecordsPerSecond: number
  readonly handWrittenRecordsPerSecond: number
  /** punctual time / hand-written time: the median of the measured pairs. */
  readonly ratio: number
  readonly ratios: readonly number[]
  readonly identicalOutput: boolean
  /**
   * Where punctual's time goes, each part timed against the loop in rounds of its own, after the pairs
   * above: the input path alone (the same feed into a topology of just the source) and the timer work
   * alone (`queueLoop`). Medians of the ratios to the loop of each round.
   */
  readonly parts: { readonly inputOnlyRatio: number; readonly queueLoopRatio: number }
}

/**
 * Per origin, one event-time timer at its latest departure + QUIET_MS, moved (deleted and registered
 * again) by each later departure: the timer-heavy shape of an inactivity alert or a session gap.
 */
class QuietAirports implements KeyedProcessor<string, number> {
  private ctx!: KeyedProcessorContext<string>
  private last!: ValueState<number>

  constructor(private readonly alerts: Alerts) {}

  init(ctx: KeyedProcessorContext<string>): void {
    this.ctx = ctx
    this.last = ctx.getState(StateDescriptors.value<number>('last-departure'))
  }

  process(record: StreamRecord<string, number>): void {
    const previous = this.last.value()
    if (previous !== undefined && record.timestamp <= previous) return
    if (previous !== undefined) this.ctx.timers.deleteEventTimeTimer(previous + QUIET_MS)
    this.last.update(record.timestamp)
    this.ctx.timers.registerEventTimeTimer(record.timestamp + QUIET_MS)
  }

  onTimer(timer: Timer<string>): void {
    this.alerts.push(`${timer.key} ${timer.timestamp - QUIET_MS}`)
    this.last.clear()
  }
}

export async function punctual(f: Flights): Promise<Alerts> {
  const alerts: Alerts = []
  const topology = new Topology()
    .addSource<string, number>('departures', 'flights', { valueSerde: Serdes.Double() })
    .addKeyedProcessor<string, number>('quiet-airports', () => new QuietAirports(alerts), 'departures')
  const rt = new EmbeddedRuntime(topology, { applicationId: 'bench-inactivity', logger: silentLogger })
  await rt.start()
  await feedFlights(rt, f)
  await rt.stop()
  return alerts
}

/** The input path alone: the same feed into a topology that only reads it (no processor). */
export async function inputOnly(f: Flights): Promise<void> {
  const topology = new Topology().addSource<string, number>('departures', 'flights', { valueSerde: Serdes.Double() })
  const rt = new EmbeddedRuntime(topology, { applicationId: 'bench-inactivity-input', logger: silentLogger })
  await rt.start()
  await feedFlights(rt, f)
  await rt.stop()
}

/**
 * The timer work alone: the hand-written loop with punctual's timer queue in place of its heap (a timer
 * deleted and registered again per departure, as the processor does), and a Map for the last departures.
 */
export function queueLoop(f: Flights): Alerts {
  const alerts: Alerts = []
  const queue = new TimerQueue()
  const last = new Map<string, number>()
  let seq = 0
  let streamTime = -Infinity
  for (let j = 0; j < f.count; j++) {
    const i = f.replayOrder[j] as number
    const ts = f.scheduled[i] as number
    const origin = f.origin[i] as string
    if (ts > streamTime) streamTime = ts
    const previous = last.get(origin)
    if (previous === undefined || ts > previous) {
      if (previous !== undefined) queue.remove(0, origin, previous + QUIET_MS)
      last.set(origin, ts)
      queue.add(0, origin, ts + QUIET_MS, seq++)
    }
    for (let t = queue.pollDue(streamTime); t !== undefined; t = queue.pollDue(streamTime)) {
      alerts.push(`${t.key} ${t.timestamp - QUIET_MS}`)
      last.delete(t.key as string)
    }
  }
  return alerts
}

/**
 * The same alerts written by hand: per origin its latest departure and the sequence of its pending
 * alert, and a binary min-heap of (due, sequence, origin) whose entries a later departure makes stale
 * (skipped when they reach the top). After each record, every alert due at stream time is raised, in
 * (due, sequence) order: the order a keyed processor's timers fire in.
 */
export function handWritten(f: Flights): Alerts {
  const alerts: Alerts = []
  const pending = new Map<string, { last: number; seq: number }>()
  const heap: Array<{ due: number; seq: number; origin: string }> = []
  const before = (a: { due: number; seq: number }, b: { due: number; seq: number }): boolean => a.due < b.due || (a.due === b.due && a.seq < b.seq)
  const push = (e: { due: number; seq: number; origin: string }): void => {
    let i = heap.length
    heap.push(e)
    while (i > 0 && before(e, heap[(i - 1) >> 1]!)) {
      heap[i] = heap[(i - 1) >> 1]!
      i = (i - 1) >> 1
    }
    heap[i] = e
  }
  const pop = (): void => {
    const last = heap.pop()!
    if (heap.length === 0) return
    let i = 0
    for (;;) {
      let c = 2 * i + 1
      if (c >= heap.length) break
      if (c + 1 < heap.length && before(heap[c + 1]!, heap[c]!)) c++
      if (!before(heap[c]!, last)) break
      heap[i] = heap[c]!
      i = c
    }
    heap[i] = last
  }
  let seq = 0
  let streamTime = -Infinity
  for (let j = 0; j < f.count; j++) {
    const i = f.replayOrder[j] as number
    const ts = f.scheduled[i] as number
    const origin = f.origin[i] as string
    if (ts > streamTime) streamTime = ts
    const p = pending.get(origin)
    if (p === undefined) {
      pending.set(origin, { last: ts, seq })
      push({ due: ts + QUIET_MS, seq: seq++, origin })
    } else if (ts > p.last) {
      p.last = ts
      p.seq = seq
      push({ due: ts + QUIET_MS, seq: seq++, origin })
    }
    while (heap.length > 0 && heap[0]!.due <= streamTime) {
      const top = heap[0]!
      pop()
      const current = pending.get(top.origin)
      if (current === undefined || current.seq !== top.seq) continue
      alerts.push(`${top.origin} ${current.last}`)
      pending.delete(top.origin)
    }
  }
  return alerts
}

/** The flights in departure order through both, in pairs after warm-up runs. */
export async function inactivityAlerts(): Promise<InactivityResult> {
  const flights = await loadFlights()
  const gc = (globalThis as { gc?: () => void }).gc
  for (let i = 0; i < WARM_UPS; i++) await punctual(flights)
  const reference = handWritten(flights)
  const same = (out: Alerts): boolean => out.length === reference.length && out.every((line, i) => line === reference[i])
  const pairs: Array<{ punctualMs: number; handMs: number; same: boolean }> = []
  for (let i = 0; i < PAIRS; i++) {
    gc?.()
    let t0 = performance.now()
    const p = await punctual(flights)
    const punctualMs = performance.now() - t0
    gc?.()
    t0 = performance.now()
    const h = handWritten(flights)
    const handMs = performance.now() - t0
    pairs.push({ punctualMs, handMs, same: same(p) && same(h) })
  }
  const ratio = (x: (typeof pairs)[number]): number => x.punctualMs / x.handMs
  const m = median(pairs, ratio)
  // The parts run after every punctual pair (a topology of another shape run before would change how
  // V8 compiles the runtime's code for the measured one), each once unmeasured first.
  await inputOnly(flights)
  queueLoop(flights)
  const partRatios = { input: [] as number[], queue: [] as number[] }
  let queueSame = true
  for (let i = 0; i < PAIRS; i++) {
    gc?.()
    let t0 = performance.now()
    await inputOnly(flights)
    const inputMs = performance.now() - t0
    gc?.()
    t0 = performance.now()
    const q = queueLoop(flights)
    const queueMs = performance.now() - t0
    queueSame &&= same(q)
    gc?.()
    t0 = performance.now()
    handWritten(flights)
    const handMs = performance.now() - t0
    partRatios.input.push(inputMs / handMs)
    partRatios.queue.push(queueMs / handMs)
  }
  const mid = (xs: number[]): number => median(xs, (x) => x)
  return {
    records: flights.count,
    alerts: reference.length,
    punctualRecordsPerSecond: (flights.count / m.punctualMs) * 1000,
    handWrittenRecordsPerSecond: (flights.count / m.handMs) * 1000,
    ratio: ratio(m),
    ratios: pairs.map(ratio),
    identicalOutput: pairs.every((x) => x.same) && queueSame,
    parts: { inputOnlyRatio: mid(partRatios.input), queueLoopRatio: mid(partRatios.queue) },
  }
}
