import type { Processor, ProcessorContext, StreamRecord } from '../processor/api.js'
import { TimeWindowStore } from './time-window-store.js'
import type { WindowCell } from './time-window-store.js'
import { alignDown } from './windows.js'
import type { TimeWindows, Windowed } from './windows.js'

export interface Aggregation<K, V, VA> {
  readonly initializer: () => VA
  readonly aggregator: (key: K, value: V, aggregate: VA) => VA
}

/**
 * Windowed aggregation over time windows (tumbling, hopping): for each window containing the record,
 * unless the window is closed (`end + grace <= observed stream time`: the record is late for it),
 * updates the aggregate and forwards it with the window's largest input timestamp. A record late for
 * every window is dropped and counted (`dropped-records`, reason `late`). Windows live in a
 * `TimeWindowStore` (a task store when `storeName` is given, so they are committed and restored) and
 * are dropped once they have closed.
 *
 * With `finalResultsOnly`, it forwards no updates: each window's final aggregate is forwarded when the
 * window closes, as `suppress(untilWindowCloses(unbounded()))` right after it would emit it (same
 * moment, order, timestamp and value; null aggregates are not forwarded; no headers). The DSL asks for
 * this when that suppression is the aggregation's only reader: the suppression's buffer would hold the
 * same windows as this store, and each update would cost a record and a buffer update for nothing.
 */
export class WindowAggregateProcessor<K, V, VA> implements Processor<K, V, Windowed<K>, VA> {
  private ctx!: ProcessorContext<Windowed<K>, VA>
  private store!: TimeWindowStore<K, VA>
  private readonly scratch: number[] = []
  /** The last committed run forwarded final results only and this one does not: see `init`. */
  private passOnOpenWindows = false
  /**
   * finalResultsOnly: the stream time a suppression right below would observe, the largest timestamp
   * forwarded so far (cell timestamps of successful updates). It is the stream time except after a
   * record whose aggregator threw (the record was skipped): such a record closes windows for later
   * records here, but a suppression never saw it.
   */
  private forwardedTime = -1

  constructor(
    private readonly spec: TimeWindows,
    private readonly aggregation: Aggregation<K, V, VA>,
    private readonly keyId: (key: K) => string,
    private readonly storeName?: string,
    private readonly finalResultsOnly = false,
    /**
     * This processor's input in a windowed cogroup (Kafka Streams' CogroupedStreamAggregateBuilder: a
     * KStreamWindowAggregate per input over one store). Each input then judges lateness by its own stream
     * time, and the shared windows leave the store by Kafka Streams' window store retention (size plus
     * grace behind the largest window start put), not when one input's stream time closes them.
     */
    private readonly cogroupInput?: number,
  ) {}

  init(ctx: ProcessorContext<Windowed<K>, VA>): void {
    this.ctx = ctx
    this.store = this.storeName === undefined ? new TimeWindowStore<K, VA>('windows', this.spec.sizeMs) : ctx.getStateStore<TimeWindowStore<K, VA>>(this.storeName)
    // A restart can change the choice (a bound, a wall-clock limit or another reader added). A run that
    // forwarded final results only sent nothing for the windows still open, so one that forwards updates
    // first sends each open window's current aggregate, once, for its readers to hold (before the first
    // record: a processor does not forward during init).
    this.passOnOpenWindows = this.store.finalResultsOnly && !this.finalResultsOnly
    this.store.finalResultsOnly = this.finalResultsOnly
    this.forwardedTime = this.store.streamTime
  }

  process(record: StreamRecord<K, V>): void {
    if (this.passOnOpenWindows) {
      this.passOnOpenWindows = false
      for (const cell of this.store.openCells()) this.forwardCell(cell)
    }
    const ts = record.timestamp
    const store = this.store
    if (ts > store.streamTime) store.streamTime = ts
    const input = this.cogroupInput
    if (input !== undefined && ts > store.inputTime(input)) store.setInputTime(input, ts)
    const closeTime = (input === undefined ? store.streamTime : store.inputTime(input)) - this.spec.graceMs
    const size = this.spec.sizeMs
    let accepted = false
    if (this.spec.advanceMs === size) {
      // Tumbling: exactly one window, no list.
      const start = alignDown(ts, size)
      if (start + size > closeTime) {
        this.update(record, start, this.keyId(record.key))
        accepted = true
      }
    } else {
      let id: string | undefined
      for (const start of this.spec.windowStartsFor(ts, this.scratch)) {
        if (start + size <= closeTime) continue
        this.update(record, start, (id ??= this.keyId(record.key)))
        accepted = true
      }
    }
    if (!accepted) this.ctx.droppedRecord('late')
    if (this.finalResultsOnly) store.expire(Math.min(closeTime, this.forwardedTime - this.spec.graceMs), this.emitFinal)
    else if (input !== undefined) store.expire(store.largestStart - this.spec.graceMs)
    else store.expire(closeTime)
  }

  /** Forwards a closing window's final aggregates (finalResultsOnly), in the order the store gives. */
  private readonly emitFinal = (cells: ReadonlyArray<WindowCell<K, VA>>): void => {
    for (const cell of cells) if (cell.agg !== null) this.forwardCell(cell)
  }

  /** A window's aggregate as a suppression would emit it: its largest input timestamp, no headers. */
  private forwardCell(cell: WindowCell<K, VA>): void {
    this.ctx.forward({ key: cell.key, value: cell.agg, timestamp: cell.ts, headers: [] })
  }

  /** Aggregates the record into a window; a window exists only once an aggregator call succeeded for it. */
  private update(record: StreamRecord<K, V>, start: number, id: string): void {
    const ts = record.timestamp
    const store = this.store
    if (this.cogroupInput !== undefined && start > store.largestStart) store.largestStart = start
    let cell = store.get(start, id)
    if (cell === undefined) {
      cell = store.create(start, id, record.key, this.aggregation.aggregator(record.key, record.value, this.aggregation.initializer()), ts)
    } else {
      const agg = this.aggregation.aggregator(record.key, record.value, cell.agg)
      store.touched(cell)
      cell.agg = agg
      if (ts > cell.ts) cell.ts = ts
    }
    if (this.finalResultsOnly) {
      if (cell.ts > this.forwardedTime) this.forwardedTime = cell.ts
    } else this.ctx.forward({ key: cell.key, value: cell.agg, timestamp: cell.ts, headers: record.headers })
  }
}
