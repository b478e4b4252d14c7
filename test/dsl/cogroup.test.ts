import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { freshStateDir } from '../helpers/durable.js'
import { EmbeddedRuntime, QueryableStoreTypes, Serdes, SessionWindows, SlidingWindows, silentLogger, StreamsBuilder, TimeWindows } from '../../src/index.js'
import type { Topology } from '../../src/index.js'
import { runJoin } from '../helpers/join-driver.js'
import type { SideInput } from '../helpers/join-driver.js'

type Input = SideInput<'clicks' | 'views'>

/** clicks and views cogrouped per user: the aggregate lists "c<value>" and "v<value>" in arrival order. */
function topology(out: (line: string) => void): Topology {
  const b = new StreamsBuilder()
  const views = b.stream<string, string>('views', { keySerde: Serdes.String(), valueSerde: Serdes.String() }).groupByKey()
  b.stream<string, string>('clicks', { keySerde: Serdes.String(), valueSerde: Serdes.String() })
    .groupByKey()
    .cogroup<string>((_user, click, agg) => `${agg}c${click}`)
    .cogroup(views, (_user, view, agg) => `${agg}v${view}`)
    .aggregate(() => '', { name: 'activity' })
    .toStream()
    .process(() => ({ process: (r) => out(`${r.key}=${r.value}@${r.timestamp}`) }))
  return b.build()
}

const inputs = (max: number): fc.Arbitrary<Input[]> =>
  fc.array(
    fc.record({
      side: fc.constantFrom<'clicks' | 'views'>('clicks', 'views'),
      key: fc.constantFrom('u1', 'u2', 'u3'),
      value: fc.option(fc.integer({ min: 0, max: 9 }).map(String), { freq: 8 }),
      ts: fc.integer({ min: 0, max: 50 }),
    }),
    { maxLength: max },
  )

/**
 * Property: `records` fed to three runs in turn on one state directory (a commit every 3 records) give
 * `expected(records)`.
 */
async function restartsExactly(applicationId: string, build: (out: (line: string) => void) => Topology, expected: (records: Input[]) => string[]): Promise<void> {
  await fc.assert(
    fc.asyncProperty(inputs(30), async (records) => {
      const dir = freshStateDir()
      const out: string[] = []
      for (const part of [records.slice(0, 10), records.slice(10, 20), records.slice(20)]) {
        const rt = new EmbeddedRuntime(build((l) => out.push(l)), { applicationId, stateDir: dir, commitMaxRecords: 3, logger: silentLogger })
        await rt.start()
        for (const r of part) {
          rt.producer<string, string | null>(r.side).send(r.key, r.value, r.ts)
          await rt.idle()
        }
        await rt.stop()
      }
      assert.deepEqual(out, expected(records))
    }),
    { numRuns: 15 },
  )
}

/** Kafka Streams' KStreamAggregate per stream on one store: append, at the later of the timestamps. */
function model(records: readonly Input[]): string[] {
  const aggs = new Map<string, { agg: string; ts: number }>()
  const out: string[] = []
  for (const r of records) {
    if (r.value === null) continue
    const before = aggs.get(r.key)
    const agg = `${before?.agg ?? ''}${r.side === 'clicks' ? 'c' : 'v'}${r.value}`
    const ts = Math.max(r.ts, before?.ts ?? r.ts)
    aggs.set(r.key, { agg, ts })
    out.push(`${r.key}=${agg}@${ts}`)
  }
  return out
}

describe('cogroup (KIP-150)', () => {
  it('updates one aggregate per key from both streams, each with its own aggregator, at the later timestamp', () => {
    const out = runJoin(topology, [
      { side: 'clicks', key: 'u1', value: '1', ts: 5 },
      { side: 'views', key: 'u1', value: '2', ts: 3 },
      { side: 'views', key: 'u2', value: '3', ts: 1 },
      { side: 'clicks', key: 'u1', value: null, ts: 9 },
      { side: 'clicks', key: 'u1', value: '4', ts: 8 },
    ])
    assert.deepEqual(out, ['u1=c1@5', 'u1=c1v2@5', 'u2=v3@1', 'u1=c1v2c4@8'])
  })

  it('matches the model for random inputs (property)', () => {
    fc.assert(
      fc.property(inputs(40), (records) => assert.deepEqual(runJoin(topology, records), model(records))),
      { numRuns: 200 },
    )
  })

  it('restarts exactly from a state directory; its store answers interactive queries', async () => {
    await fc.assert(
      fc.asyncProperty(inputs(30), async (records) => {
        const dir = freshStateDir()
        const out: string[] = []
        const thirds = [records.slice(0, 10), records.slice(10, 20), records.slice(20)]
        let activity: Array<[string, string]> = []
        for (const part of thirds) {
          const rt = new EmbeddedRuntime(topology((l) => out.push(l)), { applicationId: 'cogroup', stateDir: dir, commitMaxRecords: 3, logger: silentLogger })
          await rt.start()
          // One record at a time, so the order across the two topics is the order given.
          for (const r of part) {
            rt.producer<string, string | null>(r.side).send(r.key, r.value, r.ts)
            await rt.idle()
          }
          activity = [...rt.store('activity', QueryableStoreTypes.keyValueStore<string, string>()).all()]
          await rt.stop()
        }
        const expected = model(records)
        assert.deepEqual(out, expected)
        const last = new Map(expected.map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1, l.indexOf('@'))]))
        assert.deepEqual(activity, [...last].sort(([a], [b]) => (a < b ? -1 : 1)))
      }),
      { numRuns: 15 },
    )
  })

  it('refuses what is not a grouped stream or a function, naming the operation', () => {
    const b = new StreamsBuilder()
    const grouped = b.stream<string, string>('a').groupByKey()
    assert.throws(() => grouped.cogroup(undefined as never), /cogroup: the aggregator must be a function, got undefined/)
    const cogrouped = grouped.cogroup<string>((_k, v, agg) => agg + v)
    assert.throws(() => cogrouped.cogroup(b.stream<string, string>('b') as never, (_k, v, agg) => agg + v), /cogroup: the other stream must be a KGroupedStream/)
    assert.throws(() => cogrouped.cogroup(grouped, (_k, v, agg) => agg + v), /cogroup: a grouped stream can be added once/)
  })
})

/** clicks and views cogrouped per user and 10 ms tumbling window with 2 ms of grace. */
function windowedTopology(out: (line: string) => void): Topology {
  const b = new StreamsBuilder()
  const str = { keySerde: Serdes.String(), valueSerde: Serdes.String() }
  const views = b.stream<string, string>('views', str).groupByKey()
  b.stream<string, string>('clicks', str)
    .groupByKey()
    .cogroup<string>((_user, click, agg) => `${agg}c${click}`)
    .cogroup(views, (_user, view, agg) => `${agg}v${view}`)
    .windowedBy(TimeWindows.ofSizeAndGrace(10, 2))
    .aggregate(() => '', { name: 'per-window' })
    .toStream()
    .process(() => ({ process: (r) => out(`${r.key.key}@${r.key.window.start}=${r.value}@${r.timestamp}`) }))
  return b.build()
}

/**
 * Kafka Streams' windowed cogroup: a KStreamWindowAggregate per stream over one window store. Each
 * stream drops a record late for its window by that stream's own stream time (end <= time - grace); the
 * store forgets a window once it is older than size + grace behind the largest window start put.
 */
function windowedModel(records: readonly Input[]): string[] {
  const SIZE = 10
  const GRACE = 2
  const time = { clicks: -1, views: -1 }
  let maxStart = -1
  const windows = new Map<string, { start: number; agg: string; ts: number }>()
  const out: string[] = []
  for (const r of records) {
    // A null value is aggregated too (KStreamWindowAggregate skips only null keys): "null" here.
    time[r.side] = Math.max(time[r.side], r.ts)
    const start = r.ts - (r.ts % SIZE)
    if (start + SIZE > time[r.side] - GRACE) {
      const id = `${r.key}@${start}`
      const before = windows.get(id)
      const agg = `${before?.agg ?? ''}${r.side === 'clicks' ? 'c' : 'v'}${r.value}`
      const ts = Math.max(r.ts, before?.ts ?? r.ts)
      windows.set(id, { start, agg, ts })
      maxStart = Math.max(maxStart, start)
      out.push(`${id}=${agg}@${ts}`)
    }
    for (const [id, w] of windows) if (w.start + SIZE <= maxStart - GRACE) windows.delete(id)
  }
  return out
}

describe('windowed cogroup', () => {
  it('judges lateness by each stream’s own stream time, as Kafka Streams does', () => {
    const out = runJoin(windowedTopology, [
      { side: 'clicks', key: 'u1', value: '1', ts: 3 },
      { side: 'clicks', key: 'u1', value: '2', ts: 25 },
      // Late for the clicks (25 - 2 >= 10) but not for the views, which have seen nothing yet.
      { side: 'views', key: 'u1', value: '3', ts: 4 },
      { side: 'clicks', key: 'u1', value: '4', ts: 5 },
      { side: 'views', key: 'u1', value: '5', ts: 21 },
    ])
    // Window 0 is older than size + grace behind the latest start (20): the view starts it afresh.
    assert.deepEqual(out, ['u1@0=c1@3', 'u1@20=c2@25', 'u1@0=v3@4', 'u1@20=c2v5@25'])
  })

  it('matches the model for random inputs (property)', () => {
    fc.assert(
      fc.property(inputs(40), (records) => assert.deepEqual(runJoin(windowedTopology, records), windowedModel(records))),
      { numRuns: 300 },
    )
  })

  it('restarts exactly from a state directory: the streams’ own times and the windows come back', async () => {
    await restartsExactly('cogroup-windowed', windowedTopology, (records) => windowedModel(records))
  })

  it('takes time, sliding or session windows', () => {
    const b = new StreamsBuilder()
    const cogrouped = b.stream<string, string>('a').groupByKey().cogroup<string>((_k, v, agg) => agg + v)
    assert.throws(() => cogrouped.windowedBy({ kind: 'hourly' } as never), /cogroup windowedBy: TimeWindows, SlidingWindows or SessionWindows are supported, got hourly/)
    assert.throws(() => cogrouped.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(5)).aggregate(() => '', undefined as never), /cogroup aggregate: the session merger must be a function, got undefined/)
  })
})

const GAP = 5
const SESSION_GRACE = 2

/** clicks and views cogrouped per user and session (5 ms gap, 2 ms of grace); merged aggregates are concatenated. */
function sessionTopology(out: (line: string) => void): Topology {
  const b = new StreamsBuilder()
  const str = { keySerde: Serdes.String(), valueSerde: Serdes.String() }
  const views = b.stream<string, string>('views', str).groupByKey()
  b.stream<string, string>('clicks', str)
    .groupByKey()
    .cogroup<string>((_user, click, agg) => `${agg}c${click}`)
    .cogroup(views, (_user, view, agg) => `${agg}v${view}`)
    .windowedBy(SessionWindows.ofInactivityGapAndGrace(GAP, SESSION_GRACE))
    .aggregate(
      () => '',
      (_user, a, b) => a + b,
      { name: 'per-session' },
    )
    .toStream()
    .process(() => ({ process: (r) => out(`${r.key.key}@${r.key.window.start}/${r.key.window.end}=${r.value}@${r.timestamp}`) }))
  return b.build()
}

/**
 * Kafka Streams' session-windowed cogroup: a KStreamSessionWindowAggregate per stream over one session
 * store. A record merges the key's sessions within the gap of it that the store still holds (ending
 * after the store's time, the largest timestamp of both streams before this record, minus gap and
 * grace); the merged session is late when it ends before the record's own stream's time minus gap and
 * grace. Merged-away sessions are retracted (unless the result is the record's own point) before the
 * merged one is sent at its end.
 */
function sessionModel(records: readonly Input[]): string[] {
  const time = { clicks: -1, views: -1 }
  let storeTime = -1
  const sessions = new Map<string, Array<{ start: number; end: number; agg: string }>>()
  const out: string[] = []
  for (const r of records) {
    const gone = storeTime - SESSION_GRACE - GAP
    storeTime = Math.max(storeTime, r.ts)
    time[r.side] = Math.max(time[r.side], r.ts)
    const list = sessions.get(r.key) ?? []
    const merged = list.filter((s) => s.end > gone && s.end + GAP >= r.ts && s.start - GAP <= r.ts)
    const start = Math.min(r.ts, ...merged.map((s) => s.start))
    const end = Math.max(r.ts, ...merged.map((s) => s.end))
    if (end >= time[r.side] - SESSION_GRACE - GAP) {
      let agg = ''
      for (const s of merged) {
        agg += s.agg
        if (start !== r.ts || end !== r.ts) out.push(`${r.key}@${s.start}/${s.end}=null@${s.end}`)
      }
      agg += `${r.side === 'clicks' ? 'c' : 'v'}${r.value}`
      const kept = list.filter((s) => !merged.includes(s))
      kept.push({ start, end, agg })
      kept.sort((a, b) => a.start - b.start)
      out.push(`${r.key}@${start}/${end}=${agg}@${end}`)
      sessions.set(r.key, kept)
    }
    const close = storeTime - SESSION_GRACE - GAP
    for (const [key, l] of sessions) sessions.set(key, l.filter((s) => s.end > close))
  }
  return out
}

describe('session-windowed cogroup', () => {
  it('merges sessions across the streams, each stream judging lateness by its own stream time', () => {
    const out = runJoin(sessionTopology, [
      { side: 'clicks', key: 'u1', value: '1', ts: 10 },
      { side: 'views', key: 'u1', value: '2', ts: 13 },
      { side: 'clicks', key: 'u1', value: '3', ts: 40 },
      // Late for the clicks (40 - 7 > 18) but not for the views (13 - 7); session 10/13 has left the store.
      { side: 'views', key: 'u1', value: '4', ts: 18 },
      { side: 'clicks', key: 'u1', value: '5', ts: 20 },
    ])
    assert.deepEqual(out, ['u1@10/10=c1@10', 'u1@10/10=null@10', 'u1@10/13=c1v2@13', 'u1@40/40=c3@40', 'u1@18/18=v4@18'])
  })

  it('matches the model for random inputs (property)', () => {
    fc.assert(
      fc.property(inputs(40), (records) => assert.deepEqual(runJoin(sessionTopology, records), sessionModel(records))),
      { numRuns: 300 },
    )
  })

  it('restarts exactly from a state directory: the streams’ own times and the sessions come back', async () => {
    await restartsExactly('cogroup-sessions', sessionTopology, (records) => sessionModel(records))
  })
})

describe('non-windowed aggregations', () => {
  it('forward each update at the later of the record’s and the aggregate’s timestamps, as Kafka Streams does', () => {
    const b = new StreamsBuilder()
    const out: string[] = []
    b.stream<string, string>('in', { keySerde: Serdes.String(), valueSerde: Serdes.String() })
      .groupByKey()
      .count()
      .toStream()
      .process(() => ({ process: (r) => out.push(`${r.key}=${r.value}@${r.timestamp}`) }))
    runJoin(
      () => b.build(),
      [
        { side: 'in', key: 'A', value: 'a', ts: 5 },
        { side: 'in', key: 'A', value: 'b', ts: 3 },
        { side: 'in', key: 'A', value: 'c', ts: 7 },
      ],
    )
    assert.deepEqual(out, ['A=1@5', 'A=2@5', 'A=3@7'])
  })
})

const DIFF = 5
const SLIDING_GRACE = 2

/** clicks and views cogrouped per user over sliding windows (5 ms difference, 2 ms of grace). */
function slidingTopology(out: (line: string) => void): Topology {
  const b = new StreamsBuilder()
  const str = { keySerde: Serdes.String(), valueSerde: Serdes.String() }
  const views = b.stream<string, string>('views', str).groupByKey()
  b.stream<string, string>('clicks', str)
    .groupByKey()
    .cogroup<string>((_user, click, agg) => `${agg}c${click}`)
    .cogroup(views, (_user, view, agg) => `${agg}v${view}`)
    .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(DIFF, SLIDING_GRACE))
    .aggregate(() => '', { name: 'per-sliding-window' })
    .toStream()
    .process(() => ({ process: (r) => out(`${r.key.key}@${r.key.window.start}/${r.key.window.end}=${r.value}@${r.timestamp}`) }))
  return b.build()
}

/** The same windows over one stream carrying both kinds of record ("c<value>" or "v<value>"). */
function slidingUnionTopology(out: (line: string) => void): Topology {
  const b = new StreamsBuilder()
  b.stream<string, string>('clicks', { keySerde: Serdes.String(), valueSerde: Serdes.String() })
    .groupByKey()
    .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(DIFF, SLIDING_GRACE))
    .aggregate(
      () => '',
      (_user, v, agg) => agg + v,
    )
    .toStream()
    .process(() => ({ process: (r) => out(`${r.key.key}@${r.key.window.start}/${r.key.window.end}=${r.value}@${r.timestamp}`) }))
  return b.build()
}

describe('sliding-windowed cogroup', () => {
  it('judges lateness by each stream’s own stream time, as Kafka Streams does', () => {
    const out = runJoin(slidingTopology, [
      { side: 'clicks', key: 'u1', value: '1', ts: 10 },
      { side: 'views', key: 'u1', value: '2', ts: 12 },
      { side: 'clicks', key: 'u1', value: '3', ts: 40 },
      // Late for the clicks (its right window ends 20 < 40 - 2) but not for the views (time 14); the
      // windows it would have reached start 23 or more before the latest start (35): gone.
      { side: 'views', key: 'u1', value: '4', ts: 14 },
      { side: 'clicks', key: 'u1', value: '5', ts: 13 },
    ])
    assert.deepEqual(out, ['u1@5/10=c1@10', 'u1@11/16=v2@12', 'u1@7/12=c1v2@12', 'u1@35/40=c3@40', 'u1@9/14=v4@14'])
  })

  it('with records in timestamp order, equals the sliding aggregation of both streams as one (property)', () => {
    const ordered = inputs(40).map((records) => [...records].sort((a, b) => a.ts - b.ts))
    fc.assert(
      fc.property(ordered, (records) => {
        const union = records.map((r) => ({ side: 'clicks' as const, key: r.key, value: r.value === null ? null : `${r.side === 'clicks' ? 'c' : 'v'}${r.value}`, ts: r.ts }))
        assert.deepEqual(runJoin(slidingTopology, records), runJoin(slidingUnionTopology, union))
      }),
      { numRuns: 300 },
    )
  })

  it('restarts exactly from a state directory: the streams’ own times and the windows come back', async () => {
    await restartsExactly('cogroup-sliding', slidingTopology, (records) => runJoin(slidingTopology, records))
  })
})
