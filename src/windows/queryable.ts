import type { StateStore } from '../processor/api.js'
import type { StoreQuery } from '../state/stores.js'
import type { KeyedListStore } from './keyed-list-store.js'
import type { Session } from './session-aggregate.js'
import type { SlidingWindow } from './sliding-aggregate.js'
import type { TimeWindowStore } from './time-window-store.js'
import type { ReadOnlySessionStore, ReadOnlyWindowStore, Windowed } from './windows.js'

/** Interactive queries of a time-windowed aggregation's store; `keyId` is the aggregation's own. */
export function timeWindowQuery<K, VA>(keyId: (key: K) => string): StoreQuery {
  return {
    kind: 'window',
    view: (store: StateStore): ReadOnlyWindowStore<K, VA> => {
      const s = store as unknown as TimeWindowStore<K, VA>
      function fetch(key: K, windowStart: number): VA | undefined
      function fetch(key: K, timeFrom: number, timeTo: number): IterableIterator<[number, VA]>
      function fetch(key: K, from: number, to?: number): VA | undefined | IterableIterator<[number, VA]> {
        const id = keyId(key)
        if (to === undefined) return s.get(from, id)?.agg
        const out: Array<[number, VA]> = []
        for (const start of s.windowStarts()) {
          if (start < from) continue
          if (start > to) break
          const cell = s.get(start, id)
          if (cell !== undefined) out.push([start, cell.agg])
        }
        return out.values()
      }
      return {
        fetch,
        fetchAll: (from, to) => s.cellsBetween(from, to).map((c): [Windowed<K>, VA] => [c.key, c.agg]).values(),
        all: () => s.allCells().map((c): [Windowed<K>, VA] => [c.key, c.agg]).values(),
      }
    },
  }
}

/** Interactive queries of a sliding-window aggregation's store. */
export function slidingWindowQuery<K, VA>(keyId: (key: K) => string): StoreQuery {
  return {
    kind: 'window',
    view: (store: StateStore): ReadOnlyWindowStore<K, VA> => {
      const s = store as unknown as KeyedListStore<K, SlidingWindow<K, VA>>
      const inOrder = (ws: ReadonlyArray<SlidingWindow<K, VA>>): Array<SlidingWindow<K, VA>> => [...ws].sort((a, b) => a.start - b.start)
      const between = (ws: ReadonlyArray<SlidingWindow<K, VA>>, from: number, to: number): Array<SlidingWindow<K, VA>> => inOrder(ws).filter((w) => w.start >= from && w.start <= to)
      function fetch(key: K, windowStart: number): VA | undefined
      function fetch(key: K, timeFrom: number, timeTo: number): IterableIterator<[number, VA]>
      function fetch(key: K, from: number, to?: number): VA | undefined | IterableIterator<[number, VA]> {
        const list = s.get(keyId(key))?.list ?? []
        if (to === undefined) return list.find((w) => w.start === from)?.agg
        return between(list, from, to)
          .map((w): [number, VA] => [w.start, w.agg])
          .values()
      }
      const windows = (from: number, to: number): Array<[Windowed<K>, VA]> =>
        s
          .inKeyIdOrder()
          .flatMap((entry) => between(entry.list, from, to))
          .sort((a, b) => a.start - b.start)
          .map((w) => [w.key, w.agg])
      return { fetch, fetchAll: (from, to) => windows(from, to).values(), all: () => windows(-Infinity, Infinity).values() }
    },
  }
}

/** Interactive queries of a session aggregation's store. */
export function sessionQuery<K, VA>(keyId: (key: K) => string): StoreQuery {
  return {
    kind: 'session',
    view: (store: StateStore): ReadOnlySessionStore<K, VA> => {
      const s = store as unknown as KeyedListStore<K, Session<VA>>
      const sessions = (key: K, earliestEnd: number, latestStart: number): Array<[Windowed<K>, VA]> => {
        const entry = s.get(keyId(key))
        if (entry === undefined) return []
        return entry.list
          .filter((w) => w.end >= earliestEnd && w.start <= latestStart)
          .sort((a, b) => a.start - b.start)
          .map((w) => [{ key: entry.key, window: { start: w.start, end: w.end } }, w.agg])
      }
      return { fetch: (key) => sessions(key, -Infinity, Infinity).values(), findSessions: (key, earliestEnd, latestStart) => sessions(key, earliestEnd, latestStart).values() }
    },
  }
}
