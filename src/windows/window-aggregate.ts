import type { Processor, ProcessorContext, StreamRecord } from '../processor/api.js'
import { WINDOWED_KEY_ID, windowedKeyId } from './key-id.js'
import type { WithKeyId } from './key-id.js'
import type { TimeWindows, Windowed } from './windows.js'

interface Cell<K, VA> {
  /** The windowed key, made once per window and key (keys are immutable, so it is reused). */
  readonly key: Windowed<K>
  agg: VA
  /** Largest input timestamp in the window: the output timestamp. */
  ts: number
}

export interface Aggregation<K, V, VA> {
  readonly initializer: () => VA
  readonly aggregator: (key: K, value: V, aggregate: VA) => VA
}

/**
 * Windowed aggregation over time windows (tumbling, hopping): for each window containing the record,
 * unless the window is closed (`end + grace <= observed stream time`: the record is late for it),
 * updates the aggregate and forwards it with the window's largest input timestamp. A record late for
 * every window is dropped and counted (`dropped-records`, reason `late`). Windows are dropped from the
 * store once they have closed.
 */
export class WindowAggregateProcessor<K, V, VA> implements Processor<K, V, Windowed<K>, VA> {
  private ctx!: ProcessorContext<Windowed<K>, VA>
  private observedStreamTime = -1
  /** Window start -> key id -> cell. Starts are aligned, so there are few of them at a time. */
  private readonly windows = new Map<number, Map<string, Cell<K, VA>>>()
  private readonly starts: number[] = []
  private readonly scratch: number[] = []

  constructor(
    private readonly spec: TimeWindows,
    private readonly aggregation: Aggregation<K, V, VA>,
    private readonly keyId: (key: K) => string,
  ) {}

  init(ctx: ProcessorContext<Windowed<K>, VA>): void {
    this.ctx = ctx
  }

  process(record: StreamRecord<K, V>): void {
    const ts = record.timestamp
    if (ts > this.observedStreamTime) this.observedStreamTime = ts
    const closeTime = this.observedStreamTime - this.spec.graceMs
    const size = this.spec.sizeMs
    let accepted = false
    if (this.spec.advanceMs === size) {
      // Tumbling: exactly one window, no list.
      const start = ts - (ts % size)
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
    this.expire(closeTime)
  }

  private update(record: StreamRecord<K, V>, start: number, id: string): void {
    const ts = record.timestamp
    const cells = this.cellsAt(start)
    let cell = cells.get(id)
    if (cell === undefined) {
      const key: Windowed<K> & WithKeyId = { key: record.key, window: { start, end: start + this.spec.sizeMs } }
      // Not enumerable: the key compares and prints as a plain Windowed<K>.
      Object.defineProperty(key, WINDOWED_KEY_ID, { value: windowedKeyId(id, start) })
      cells.set(id, (cell = { key, agg: this.aggregation.initializer(), ts }))
    }
    cell.agg = this.aggregation.aggregator(record.key, record.value, cell.agg)
    if (ts > cell.ts) cell.ts = ts
    this.ctx.forward({ key: cell.key, value: cell.agg, timestamp: cell.ts, headers: record.headers })
  }

  private cellsAt(start: number): Map<string, Cell<K, VA>> {
    let cells = this.windows.get(start)
    if (cells === undefined) {
      this.windows.set(start, (cells = new Map()))
      // Usually appended in order; out-of-order starts are rare and few.
      let i = this.starts.length
      while (i > 0 && (this.starts[i - 1] as number) > start) i--
      this.starts.splice(i, 0, start)
    }
    return cells
  }

  /** Drops windows that have closed: no record can change them any more. */
  private expire(closeTime: number): void {
    let n = 0
    while (n < this.starts.length && (this.starts[n] as number) + this.spec.sizeMs <= closeTime) this.windows.delete(this.starts[n++] as number)
    if (n > 0) this.starts.splice(0, n)
  }
}
