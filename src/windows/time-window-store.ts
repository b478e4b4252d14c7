import type { StoreKey } from '../processor/api.js'
import { DURABLE } from '../state/stores.js'
import type { DurableStore } from '../state/stores.js'
import { ChangeLog, LoggedField } from '../state/change-log.js'
import { InputTimes } from './input-times.js'
import { parseWindowedKeyId, stampedKeyId, stampKeyId, windowedKeyId } from './key-id.js'
import type { Windowed } from './windows.js'

/** One window of one key. */
export interface WindowCell<K, VA> {
  /** The windowed key, made once per window and key (keys are immutable, so it is reused). */
  readonly key: Windowed<K>
  agg: VA
  /** Largest input timestamp in the window: the output timestamp. */
  ts: number
  /** The store's change epoch in which the cell was last noted (durable stores): saves a map lookup. */
  noted: number
}

interface SavedCell<K, VA> {
  readonly key: K
  readonly id: string
  readonly start: number
  readonly agg: VA
  readonly ts: number
}

/**
 * A window's cells sorted by windowed key id (a sort per closing window, not per record). The ids of one
 * window share their suffix (the start), so plain key order is windowed key order unless one key is a
 * prefix of another: then the suffix takes part in the comparison, and the stamped ids are sorted
 * instead. A prefix pair, if any, shows up between neighbours in sorted order.
 */
function inKeyIdOrder<K, VA>(cells: Map<string, WindowCell<K, VA>>): Array<WindowCell<K, VA>> {
  const ids = [...cells.keys()].sort()
  let prefixFree = true
  for (let i = 1; i < ids.length && prefixFree; i++) prefixFree = !(ids[i] as string).startsWith(ids[i - 1] as string)
  if (prefixFree) return ids.map((id) => cells.get(id) as WindowCell<K, VA>)
  const byWindowedId = new Map<string, WindowCell<K, VA>>()
  for (const cell of cells.values()) byWindowedId.set(stampedKeyId(cell.key) as string, cell)
  return [...byWindowedId.keys()].sort().map((id) => byWindowedId.get(id) as WindowCell<K, VA>)
}

/** The store key of the observed stream time (cell keys are strings, so it cannot clash). */
const STREAM_TIME_KEY = -1
/** The store key of whether the aggregation forwarded final results only (see `finalResultsOnly`). */
const FINAL_ONLY_KEY = -2
/** The store keys of a cogroup's stream times per input and of the largest window start put. */
const INPUT_TIMES_KEY = -3
const MAX_START_KEY = -4
/** The store key of the close time up to which windows are closed (a store that retains closed windows). */
const CLOSED_UNTIL_KEY = -5

/**
 * The window store of a time-windowed aggregation: window start -> key id -> cell, the sorted starts
 * (aligned, so few at a time), and the aggregation's observed stream time. As a task store it records
 * the cells that change, so commits write only those, and a restart restores them.
 */
export class TimeWindowStore<K, VA> {
  private readonly windows = new Map<number, Map<string, WindowCell<K, VA>>>()
  private readonly starts: number[] = []
  private readonly observed = new LoggedField(STREAM_TIME_KEY, -1)
  private readonly finalOnly = new LoggedField(
    FINAL_ONLY_KEY,
    false,
    (on) => (on ? true : undefined),
    (saved) => saved === true,
  )
  private readonly inputTimes = new InputTimes(INPUT_TIMES_KEY)
  /** The largest window start put (Kafka Streams' window store measures its retention from it). */
  private readonly maxStart = new LoggedField(MAX_START_KEY, -1, (t) => (t < 0 ? undefined : t), (saved) => (typeof saved === 'number' ? saved : -1))
  /**
   * With a retention past the close: windows that end at or before this time are closed (their final
   * results passed on) and stay only to be read by interactive queries.
   */
  private readonly closedUntil = new LoggedField(CLOSED_UNTIL_KEY, -1, (t) => (t < 0 ? undefined : t), (saved) => (typeof saved === 'number' ? saved : -1))
  /** How many of `starts` are closed windows kept for their retention; -1: count again (after a restore). */
  private closedCount = 0
  /** The cells of the last start looked up: consecutive records mostly fall in the same window. */
  private lastStart = NaN
  private lastCells: Map<string, WindowCell<K, VA>> | undefined
  /** Changed cells by windowed key id. */
  private readonly log = new ChangeLog<string>(
    {
      saved: (wid) => this.saved(...parseWindowedKeyId(wid)),
      savedEntries: () => {
        const out: Array<[StoreKey, unknown]> = []
        for (const [start, cells] of this.windows) for (const id of cells.keys()) out.push([windowedKeyId(id, start), this.saved(id, start)])
        return out
      },
      load: (_wid, saved) => {
        const c = saved as SavedCell<K, VA>
        this.create(c.start, c.id, c.key, c.agg, c.ts)
        this.closedCount = -1
      },
    },
    [this.observed, this.finalOnly, this.inputTimes, this.maxStart, this.closedUntil] as Array<LoggedField<unknown>>,
  )

  constructor(
    readonly name: string,
    private readonly sizeMs: number,
    /**
     * How long a window stays in the store after it closes, for interactive queries (its retention
     * less size and grace; Kafka Streams' `Materialized.withRetention`). 0: it leaves when it closes.
     */
    private readonly retainedAfterCloseMs = 0,
  ) {}

  get streamTime(): number {
    return this.observed.value
  }

  /** A cogroup input's stream time (-1 before its first record). */
  inputTime(input: number): number {
    return this.inputTimes.of(input)
  }

  setInputTime(input: number, t: number): void {
    this.inputTimes.setTime(input, t)
  }

  /** The largest window start put so far (-1: none). */
  get largestStart(): number {
    return this.maxStart.value
  }

  set largestStart(start: number) {
    this.maxStart.value = start
  }

  set streamTime(t: number) {
    this.observed.value = t
  }

  /**
   * Whether the aggregation forwards final results only (the buffer-less final results), as of the run
   * that last committed: a run that does not must pass the open windows on to its suppression once.
   */
  get finalResultsOnly(): boolean {
    return this.finalOnly.value
  }

  set finalResultsOnly(on: boolean) {
    if (on !== this.finalOnly.value) this.finalOnly.value = on
  }

  /** Every open window's cells: oldest window first, each in windowed key id order. */
  openCells(): Array<WindowCell<K, VA>> {
    return this.cellsOf(this.starts.slice(this.closedWindows()))
  }

  /** Every window's cells, the closed ones kept for their retention too: oldest window first. */
  allCells(): Array<WindowCell<K, VA>> {
    return this.cellsOf(this.starts)
  }

  private cellsOf(starts: readonly number[]): Array<WindowCell<K, VA>> {
    const out: Array<WindowCell<K, VA>> = []
    for (const start of starts) {
      const cells = this.windows.get(start)
      if (cells !== undefined) out.push(...inKeyIdOrder(cells))
    }
    return out
  }

  /** How many of the oldest windows are closed ones kept for their retention. */
  private closedWindows(): number {
    if (this.closedCount < 0) {
      const until = this.closedUntil.value
      let n = 0
      while (n < this.starts.length && (this.starts[n] as number) + this.sizeMs <= until) n++
      this.closedCount = n
    }
    return this.closedCount
  }

  /** The cells of the windows (closed ones in their retention too) with starts from `from` to `to` (both included): oldest window first, each in windowed key id order. */
  cellsBetween(from: number, to: number): Array<WindowCell<K, VA>> {
    const out: Array<WindowCell<K, VA>> = []
    for (const start of this.starts) {
      if (start < from) continue
      if (start > to) break
      const cells = this.windows.get(start)
      if (cells !== undefined) out.push(...inKeyIdOrder(cells))
    }
    return out
  }

  /** The starts of the windows in the store (closed ones in their retention too), oldest first. */
  windowStarts(): readonly number[] {
    return this.starts
  }

  get(start: number, id: string): WindowCell<K, VA> | undefined {
    if (start !== this.lastStart) {
      this.lastStart = start
      this.lastCells = this.windows.get(start)
    }
    return this.lastCells?.get(id)
  }

  create(start: number, id: string, key: K, agg: VA, ts: number): WindowCell<K, VA> {
    const windowed: Windowed<K> = { key, window: { start, end: start + this.sizeMs } }
    // A private stamp: the key still compares and prints as a plain Windowed<K>.
    stampKeyId(windowed, windowedKeyId(id, start))
    const cell: WindowCell<K, VA> = { key: windowed, agg, ts, noted: 0 }
    this.cellsAt(start).set(id, cell)
    this.noteChange(cell, false)
    return cell
  }

  /** Records that a cell changed (for the next commit); free unless the store is durable. */
  touched(cell: WindowCell<K, VA>): void {
    this.noteChange(cell, true)
  }

  /** `existed`: whether the cell existed before this change (a window is never created twice). */
  private noteChange(cell: WindowCell<K, VA>, existed: boolean): void {
    const changes = this.log.changes
    if (changes === undefined || cell.noted === changes.epoch) return
    cell.noted = changes.epoch
    const wid = stampedKeyId(cell.key) as string
    if (!changes.has(wid)) changes.first(wid, existed)
  }

  /**
   * Drops windows that ended at or before `closeTime`: no record can change them any more. With
   * `onClose`, each closing window's cells are passed to it first, oldest window first, each window's
   * cells in the order of their windowed key ids (the order a suppression buffer emits them in).
   */
  expire(closeTime: number, onClose?: (cells: ReadonlyArray<WindowCell<K, VA>>) => void): void {
    if (this.retainedAfterCloseMs > 0) {
      this.closeAndRetain(closeTime, onClose)
      return
    }
    let n = 0
    while (n < this.starts.length && (this.starts[n] as number) + this.sizeMs <= closeTime) {
      const start = this.starts[n++] as number
      const cells = this.windows.get(start)
      if (this.log.changes !== undefined) for (const cell of cells?.values() ?? []) this.touched(cell)
      this.windows.delete(start)
      if (start === this.lastStart) this.lastStart = NaN
      if (onClose !== undefined && cells !== undefined) onClose(inKeyIdOrder(cells))
    }
    if (n > 0) this.starts.splice(0, n)
  }

  /**
   * `expire` for a store that keeps closed windows: windows that end at or before `closeTime` close
   * (passed to `onClose` once), and leave the store `retainedAfterCloseMs` later.
   */
  private closeAndRetain(closeTime: number, onClose: ((cells: ReadonlyArray<WindowCell<K, VA>>) => void) | undefined): void {
    const starts = this.starts
    let closed = this.closedWindows()
    if (closeTime > this.closedUntil.value) {
      while (closed < starts.length && (starts[closed] as number) + this.sizeMs <= closeTime) {
        const cells = this.windows.get(starts[closed++] as number)
        if (onClose !== undefined && cells !== undefined) onClose(inKeyIdOrder(cells))
      }
      this.closedUntil.value = closeTime
    }
    const leaveTime = closeTime - this.retainedAfterCloseMs
    let n = 0
    while (n < closed && (starts[n] as number) + this.sizeMs <= leaveTime) {
      const start = starts[n++] as number
      if (this.log.changes !== undefined) for (const cell of this.windows.get(start)?.values() ?? []) this.touched(cell)
      this.windows.delete(start)
      if (start === this.lastStart) this.lastStart = NaN
    }
    if (n > 0) starts.splice(0, n)
    this.closedCount = closed - n
  }

  readonly [DURABLE]: DurableStore = this.log

  close(): void {}

  private saved(id: string, start: number): SavedCell<K, VA> | undefined {
    const cell = this.get(start, id)
    return cell === undefined ? undefined : { key: cell.key.key, id, start, agg: cell.agg, ts: cell.ts }
  }

  private cellsAt(start: number): Map<string, WindowCell<K, VA>> {
    let cells = this.windows.get(start)
    if (cells === undefined) {
      this.windows.set(start, (cells = new Map()))
      if (start === this.lastStart) this.lastCells = cells
      // Usually appended in order; out-of-order starts are rare and few.
      let i = this.starts.length
      while (i > 0 && (this.starts[i - 1] as number) > start) i--
      this.starts.splice(i, 0, start)
      // A window older than a closed one kept for its retention counts among the closed.
      if (i < this.closedCount) this.closedCount++
    }
    return cells
  }
}
