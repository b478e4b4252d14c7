import type { StoreKey } from '../processor/api.js'
import { DEFAULT_CACHE_ENTRIES, DURABLE } from '../state/stores.js'
import type { DurableStore } from '../state/stores.js'
import { PERSISTENT } from '../state/persistent-store.js'
import type { PersistentCapability } from '../state/persistent-store.js'
import { ChangeLog, LoggedField } from '../state/change-log.js'
import { lastPerKey } from '../state/change-set.js'
import { InputTimes } from './input-times.js'
import { stampedKeyId, stampKeyId, windowedKeyId } from './key-id.js'
import { isWindowStoreKey, otherLayout, ownCopy, storeKeyId, storeKeyStart, WindowDisk, windowStoreKey } from './window-disk.js'
import type { SavedCell } from './window-disk.js'
import type { Windowed } from './windows.js'

/** One window of one key. */
export interface WindowCell<K, VA> {
  /** The windowed key, made once per window and key (keys are immutable, so it is reused). */
  readonly key: Windowed<K>
  agg: VA
  /** Largest input timestamp in the window: the output timestamp. */
  ts: number
  /** The store's change epoch in which the cell was last noted (durable stores): it is noted once per epoch. */
  noted: number
  /** Whether the last commit before its first change of the epoch wrote it (so a removal must be written). */
  written: boolean
  /** It left the store (its window closed or expired): the next commit deletes it if written. */
  removed: boolean
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
 *
 * In a durable run it lives on disk (Kafka Streams' persistent window store): the committed cells are
 * in the state directory under start-first keys (`windowStoreKey`), and memory holds the cells changed
 * since the last durable commit plus up to `cacheEntries` cells read or written before; a closing
 * window is read from disk in one range, merged with its cells in memory. Without a disk (the test kit,
 * a run without `stateDir`, `storeType: 'inMemory'`) every cell is in memory.
 */
export class TimeWindowStore<K, VA> {
  private readonly windows = new Map<number, Map<string, WindowCell<K, VA>>>()
  /** Every window's start, oldest first: windows with cells in memory, or (on disk) in the state directory. */
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
  /** On disk: the committed cells (undefined: every cell is in memory). */
  private disk: WindowDisk<K, VA> | undefined
  /**
   * On disk: the starts of windows with cells that may be on disk only (on disk when the store was
   * attached, or a cell left memory). Memory holds every cell of the other windows, so a key it lacks
   * there needs no read, and such a window closes without one.
   */
  private readonly partial = new Set<number>()
  /** On disk: the cells in memory, and the change epochs taken by commits that are not durable yet. */
  private resident = 0
  private readonly takenEpochs: number[] = []
  /** On disk: cells noted in this epoch or before are on disk (they may leave memory). */
  private durableEpoch = 0
  /**
   * The cells changed since the last take, each once (its `noted` epoch says so), and the store keys of
   * cells removed that an earlier commit wrote (the cell itself is let go: a closing window read from
   * disk holds no aggregate until the commit). Most cells of a windowed aggregation are created and
   * closed between two commits: tracked as objects, they cost no store key and no change set entry,
   * and the take skips them.
   */
  private changed: Array<WindowCell<K, VA> | string> = []
  private readonly log = new ChangeLog<string>(
    {
      saved: (key) => this.saved(key),
      takeTracked: () => this.takeChangedCells(),
      savedEntries: () => {
        const out: Array<[StoreKey, unknown]> = []
        for (const start of this.starts) for (const cell of this.windowCells(start)) out.push([windowStoreKey(stampedKeyId(cell.key) as string), savedCell(cell)])
        return out
      },
      load: (key, saved) => {
        const c = saved as SavedCell<K, VA>
        if (!isWindowStoreKey(key) || storeKeyStart(key) !== c.start) throw otherLayout(this.name, key)
        this.create(c.start, c.id, c.key, c.agg, c.ts)
        this.closedCount = -1
      },
      taken: () => {
        if (this.disk !== undefined) this.takenEpochs.push((this.log.changes?.epoch ?? 1) - 1)
      },
      committed: () => {
        if (this.disk === undefined) return
        this.durableEpoch = this.takenEpochs.shift() ?? this.durableEpoch
        this.evict()
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
    /** On disk: how many cells memory keeps beyond those changed since the last durable commit. */
    private readonly cacheEntries = DEFAULT_CACHE_ENTRIES,
  ) {}

  readonly [PERSISTENT]: PersistentCapability = {
    attach: (disk) => {
      const windowDisk = new WindowDisk<K, VA>(this.name, disk)
      this.disk = windowDisk
      // The store's fields are small: read them now. Cells are read when a record or a close needs them.
      for (const field of [this.observed, this.finalOnly, this.inputTimes, this.maxStart, this.closedUntil] as Array<LoggedField<unknown>>) {
        const saved = windowDisk.field(field.key)
        if (saved !== undefined) field.restore(saved)
      }
      for (const start of windowDisk.starts()) {
        this.partial.add(start)
        this.addStart(start)
      }
      this.closedCount = -1
    },
  }

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
    for (const start of starts) out.push(...this.windowCells(start))
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
      out.push(...this.windowCells(start))
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
    const cell = this.lastCells?.get(id)
    if (cell !== undefined || this.disk === undefined || !this.partial.has(start)) return cell
    const saved = this.disk.cell(start, id)
    if (saved === undefined) return undefined
    const read = this.cellOf(saved.key, id, start, saved.agg, saved.ts)
    this.cellsAt(start).set(id, read)
    this.resident++
    return read
  }

  create(start: number, id: string, key: K, agg: VA, ts: number): WindowCell<K, VA> {
    const cell = this.cellOf(key, id, start, agg, ts)
    this.cellsAt(start).set(id, cell)
    this.resident++
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
    cell.written = existed
    this.changed.push(cell)
  }

  /** The changed cells as [store key, saved cell or undefined: deleted]; a cell created and removed since the last take is neither. */
  private takeChangedCells(): Array<[StoreKey, unknown]> {
    const changed = this.changed
    if (changed.length === 0) return []
    this.changed = []
    // The epoch just taken (the take started the next one); a cell noted before a restore's clear is not a change.
    const epoch = (this.log.changes?.epoch ?? 1) - 1
    const out: Array<[StoreKey, unknown]> = []
    let removals = 0
    for (const cell of changed) {
      if (typeof cell === 'string') {
        out.push([cell, undefined])
        removals++
        continue
      }
      if (cell.noted !== epoch) continue
      if (!cell.removed) out.push([windowStoreKey(stampedKeyId(cell.key) as string), savedCell(cell)])
      else if (cell.written) {
        out.push([windowStoreKey(stampedKeyId(cell.key) as string), undefined])
        removals++
      }
    }
    return removals === 0 ? out : lastPerKey(out)
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
    while (n < this.starts.length && (this.starts[n] as number) + this.sizeMs <= closeTime) this.drop(this.starts[n++] as number, onClose)
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
        const start = starts[closed++] as number
        if (onClose !== undefined) inChunks(this.cellsIn(start), onClose)
      }
      this.closedUntil.value = closeTime
    }
    const leaveTime = closeTime - this.retainedAfterCloseMs
    let n = 0
    while (n < closed && (starts[n] as number) + this.sizeMs <= leaveTime) this.drop(starts[n++] as number, undefined)
    if (n > 0) starts.splice(0, n)
    this.closedCount = closed - n
  }

  /** Removes a window's cells (the caller removes its start), passing them to `onClose` first if given. */
  private drop(start: number, onClose: ((cells: ReadonlyArray<WindowCell<K, VA>>) => void) | undefined): void {
    const inMemory = this.windows.get(start)
    if (this.disk === undefined) {
      if (this.log.changes !== undefined) for (const cell of inMemory?.values() ?? []) this.removed(cell)
      this.forget(start)
      if (onClose !== undefined && inMemory !== undefined) onClose(inKeyIdOrder(inMemory))
      return
    }
    // Every cell, the disk's too, is deleted by the next commit; a large window goes a chunk at a time.
    const cells = this.cellsIn(start)
    this.forget(start)
    inChunks(cells, onClose, (cell) => this.removed(cell))
  }

  /** Notes a cell's removal (its window left the store). */
  private removed(cell: WindowCell<K, VA>): void {
    const changes = this.log.changes
    if (changes === undefined) return
    cell.removed = true
    // Changed since the last take: the take sees it removed. Otherwise an earlier commit wrote it.
    if (cell.noted === changes.epoch) return
    cell.noted = changes.epoch
    this.changed.push(windowStoreKey(stampedKeyId(cell.key) as string))
  }

  private forget(start: number): void {
    const cells = this.windows.get(start)
    if (cells !== undefined) this.resident -= cells.size
    this.windows.delete(start)
    this.partial.delete(start)
    if (start === this.lastStart) this.lastStart = NaN
  }

  /** A window's cells in windowed key id order (`cellsIn`), all at once. */
  private windowCells(start: number): Array<WindowCell<K, VA>> {
    return [...this.cellsIn(start)]
  }

  /**
   * A window's cells in windowed key id order: those memory holds now and, on disk, the disk's others
   * merged in as they are read (made for the caller, not kept).
   */
  private cellsIn(start: number): Iterable<WindowCell<K, VA>> {
    const inMemory = this.windows.get(start)
    const held = inMemory === undefined ? [] : inKeyIdOrder(inMemory)
    return this.disk === undefined || !this.partial.has(start) ? held : this.mergedWithDisk(start, held, this.disk)
  }

  private *mergedWithDisk(start: number, held: Array<WindowCell<K, VA>>, disk: WindowDisk<K, VA>): Generator<WindowCell<K, VA>> {
    let i = 0
    for (const [key, saved] of disk.window(start)) {
      const wid = key.slice(8)
      while (i < held.length && (stampedKeyId((held[i] as WindowCell<K, VA>).key) as string) < wid) yield held[i++] as WindowCell<K, VA>
      if (i < held.length && stampedKeyId((held[i] as WindowCell<K, VA>).key) === wid) yield held[i++] as WindowCell<K, VA>
      else yield this.cellOf(saved.key, ownCopy(saved.id), start, saved.agg, saved.ts)
    }
    while (i < held.length) yield held[i++] as WindowCell<K, VA>
  }

  /**
   * On disk, after a durable commit: cells beyond `cacheEntries` leave memory, oldest windows first,
   * save those changed since the durable commit (the next commit reads them here).
   */
  private evict(): void {
    let excess = this.resident - this.cacheEntries
    if (excess <= 0 || this.log.changes === undefined) return
    for (const [start, cells] of this.windows) {
      for (const [id, cell] of cells) {
        if (cell.noted > this.durableEpoch) continue
        cells.delete(id)
        this.partial.add(start)
        if (--excess === 0) break
      }
      if (excess === 0) break
    }
    this.resident = this.cacheEntries + excess
  }

  readonly [DURABLE]: DurableStore = this.log

  close(): void {}

  /** The saved form of a cell memory holds (a cell changed since the last commit is always there), or undefined: deleted. */
  private saved(key: string): SavedCell<K, VA> | undefined {
    const cell = this.windows.get(storeKeyStart(key))?.get(storeKeyId(key))
    return cell === undefined ? undefined : savedCell(cell)
  }

  /** A cell object (not in the store yet). */
  private cellOf(key: K, id: string, start: number, agg: VA, ts: number): WindowCell<K, VA> {
    const windowed: Windowed<K> = { key, window: { start, end: start + this.sizeMs } }
    // A private stamp: the key still compares and prints as a plain Windowed<K>.
    stampKeyId(windowed, windowedKeyId(id, start))
    return { key: windowed, agg, ts, noted: 0, written: false, removed: false }
  }

  private cellsAt(start: number): Map<string, WindowCell<K, VA>> {
    let cells = this.windows.get(start)
    if (cells === undefined) {
      this.windows.set(start, (cells = new Map()))
      if (start === this.lastStart) this.lastCells = cells
      this.addStart(start)
    }
    return cells
  }

  private addStart(start: number): void {
    // Usually appended in order; out-of-order starts are rare and few. On disk, a window's start stays
    // while its cells are out of memory.
    let i = this.starts.length
    while (i > 0 && (this.starts[i - 1] as number) > start) i--
    if (i > 0 && this.starts[i - 1] === start) return
    this.starts.splice(i, 0, start)
    // A window older than a closed one kept for its retention counts among the closed, and so does one
    // that ended by the close time (a cogroup's slower input may start it afresh), as a recount finds.
    if (this.closedCount >= 0 && (i < this.closedCount || start + this.sizeMs <= this.closedUntil.value)) this.closedCount++
  }
}

/** Cells a closing window passes on at once, when it is read from disk: bounds the heap it takes. */
const CLOSE_CHUNK = 1000

/** Passes `cells` to `onClose` (if any) in chunks of up to CLOSE_CHUNK, calling `each` on every cell first. */
function inChunks<C>(cells: Iterable<C>, onClose: ((cells: readonly C[]) => void) | undefined, each?: (cell: C) => void): void {
  let chunk: C[] = []
  for (const cell of cells) {
    each?.(cell)
    if (onClose === undefined) continue
    chunk.push(cell)
    if (chunk.length === CLOSE_CHUNK) {
      onClose(chunk)
      chunk = []
    }
  }
  if (chunk.length > 0) onClose?.(chunk)
}

function savedCell<K, VA>(cell: WindowCell<K, VA>): SavedCell<K, VA> {
  const wid = stampedKeyId(cell.key) as string
  return { key: cell.key.key, id: wid.slice(0, -8), start: cell.key.window.start, agg: cell.agg, ts: cell.ts }
}
