import { StreamsBuilder } from '../../dsl/builder.js'
import { JoinWindows } from '../../joins/join-windows.js'
import type { KTable } from '../../dsl/ktable.js'
import { malformed } from '../scenario.js'
import type { Scenario } from '../scenario.js'
import type { KindInstance, OutputSink, ScenarioKind } from './kind.js'

type Obj = Record<string, unknown>

const int = (o: Obj, field: string, where: string, min: number): number | undefined => {
  const v = o[field]
  if (v === undefined) return undefined
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) throw malformed(`${where}.${field}`, `must be an integer >= ${min}`)
  return v
}

/** How a scenario derives a table before it is joined: `filter` keeps values not starting with "z", `mapValues` wraps them in "m(...)". */
type Derivation = 'filter' | 'mapValues' | 'filterMapValues'

function derivation(t: Obj, side: 'left' | 'right'): Derivation | undefined {
  const d = t.derive
  if (d === undefined) return undefined
  if (typeof d !== 'object' || d === null) throw malformed('topology.derive', 'must be an object')
  const v = (d as Obj)[side]
  if (v === undefined) return undefined
  if (v !== 'filter' && v !== 'mapValues' && v !== 'filterMapValues') throw malformed(`topology.derive.${side}`, 'must be "filter", "mapValues" or "filterMapValues"')
  return v
}

function derived(table: KTable<string, string>, how: Derivation | undefined): KTable<string, string> {
  if (how === undefined) return table
  const filtered = how === 'mapValues' ? table : table.filter((_k, v) => !v.startsWith('z'))
  return how === 'filter' ? filtered : filtered.mapValues((v) => `m(${v})`)
}

/** The joiner of every join kind: both values, a missing one as "null". */
const joined = (l: string | null, r: string | null): string => `${l}+${r}`

/**
 * Kind `stream-stream-join`: topics "left" and "right" (String keys and values), joined with
 * `join`, `leftJoin` or `outerJoin` in `JoinWindows.ofTimeDifferenceAndGrace(timeDifferenceMs,
 * graceMs)`, optionally with `beforeMs` / `afterMs` set after.
 */
export const streamStreamJoinKind: ScenarioKind = {
  build(scenario: Scenario, out: OutputSink): KindInstance {
    const t = scenario.topology as Obj
    const type = t.join
    if (type !== 'inner' && type !== 'left' && type !== 'outer') throw malformed('topology.join', 'must be "inner", "left" or "outer"')
    const w = t.windows as Obj | undefined
    if (typeof w !== 'object' || w === null) throw malformed('topology.windows', 'must be an object')
    const diff = int(w, 'timeDifferenceMs', 'topology.windows', 0)
    if (diff === undefined) throw malformed('topology.windows.timeDifferenceMs', 'is required')
    let windows = JoinWindows.ofTimeDifferenceAndGrace(diff, int(w, 'graceMs', 'topology.windows', 0) ?? 0)
    const before = int(w, 'beforeMs', 'topology.windows', -Number.MAX_SAFE_INTEGER)
    const after = int(w, 'afterMs', 'topology.windows', -Number.MAX_SAFE_INTEGER)
    if (before !== undefined) windows = windows.before(before)
    if (after !== undefined) windows = windows.after(after)
    const builder = new StreamsBuilder()
    const left = builder.stream<string, string>('left')
    const right = builder.stream<string, string>('right')
    const result = type === 'inner' ? left.join(right, joined, windows) : type === 'left' ? left.leftJoin(right, joined, windows) : left.outerJoin(right, joined, windows)
    result.addStatelessNode<string, string>(undefined, 'SCENARIO-OUTPUT', (r) => out.emit({ key: r.key, value: r.value, ts: r.timestamp }))
    return { topology: builder.build(), inputTopic: 'left', inputTopics: ['left', 'right'] }
  },
}

/**
 * Kind `stream-table-join`: topic "left" (the stream) joined with `join` or `leftJoin` to the table
 * read from topic "right" (String keys and values; a null value deletes the key). With
 * `versioned.historyRetentionMs` the table is versioned (looked up as of each stream record's time);
 * `graceMs` then makes stream records wait for late table updates.
 */
export const streamTableJoinKind: ScenarioKind = {
  build(scenario: Scenario, out: OutputSink): KindInstance {
    const t = scenario.topology as Obj
    const type = t.join
    if (type !== 'inner' && type !== 'left') throw malformed('topology.join', 'must be "inner" or "left"')
    let history: number | undefined
    if (t.versioned !== undefined) {
      if (typeof t.versioned !== 'object' || t.versioned === null) throw malformed('topology.versioned', 'must be an object')
      history = int(t.versioned as Obj, 'historyRetentionMs', 'topology.versioned', 0)
      if (history === undefined) throw malformed('topology.versioned.historyRetentionMs', 'is required')
    }
    const grace = int(t, 'graceMs', 'topology', 0)
    const builder = new StreamsBuilder()
    const stream = builder.stream<string, string>('left')
    const how = derivation(t, 'right')
    if (how !== undefined && history !== undefined) throw malformed('topology.derive.right', 'applies to a plain table, not a versioned one')
    const table = derived(builder.table<string, string>('right', {}, history === undefined ? {} : { historyRetentionMs: history }), how)
    const joinedOptions = grace === undefined ? {} : { gracePeriodMs: grace }
    const result = type === 'inner' ? stream.join(table, joined, joinedOptions) : stream.leftJoin(table, joined, joinedOptions)
    result.addStatelessNode<string, string>(undefined, 'SCENARIO-OUTPUT', (r) => out.emit({ key: r.key, value: r.value, ts: r.timestamp }))
    return { topology: builder.build(), inputTopic: 'left', inputTopics: ['left', 'right'] }
  },
}

/** Kind `table-table-join`: the tables of topics "left" and "right" joined with `join`, `leftJoin` or `outerJoin`. */
export const tableTableJoinKind: ScenarioKind = {
  build(scenario: Scenario, out: OutputSink): KindInstance {
    const t = scenario.topology as Obj
    const type = t.join
    if (type !== 'inner' && type !== 'left' && type !== 'outer') throw malformed('topology.join', 'must be "inner", "left" or "outer"')
    const builder = new StreamsBuilder()
    const left = derived(builder.table<string, string>('left'), derivation(t, 'left'))
    const right = derived(builder.table<string, string>('right'), derivation(t, 'right'))
    const result = type === 'inner' ? left.join(right, joined) : type === 'left' ? left.leftJoin(right, joined) : left.outerJoin(right, joined)
    result.toStream().addStatelessNode<string, string | null>(undefined, 'SCENARIO-OUTPUT', (r) => out.emit({ key: r.key, value: r.value, ts: r.timestamp }))
    return { topology: builder.build(), inputTopic: 'left', inputTopics: ['left', 'right'] }
  },
}

/**
 * Kind `stream-global-join`: topic "left" is a stream whose values name keys of the global table of
 * topic "right"; each record joins the table's current value for that key with `join` or `leftJoin`,
 * the same joiner as the other join kinds.
 */
export const streamGlobalJoinKind: ScenarioKind = {
  build(scenario: Scenario, out: OutputSink): KindInstance {
    const type = (scenario.topology as Obj).join
    if (type !== 'inner' && type !== 'left') throw malformed('topology.join', 'must be "inner" or "left"')
    const builder = new StreamsBuilder()
    const table = builder.globalTable<string, string>('right')
    const left = builder.stream<string, string>('left')
    const pick = (_k: string, v: string): string => v
    const result = type === 'inner' ? left.join(table, pick, joined) : left.leftJoin(table, pick, joined)
    result.addStatelessNode<string, string>(undefined, 'SCENARIO-OUTPUT', (r) => out.emit({ key: r.key, value: r.value, ts: r.timestamp }))
    return { topology: builder.build(), inputTopic: 'left', inputTopics: ['left', 'right'] }
  },
}

/** The foreign key of a `foreign-key-join` left value `fk:payload`: the part before the colon, null when empty or absent. */
function foreignKeyOf(value: string): string | null {
  const at = value.indexOf(':')
  return at <= 0 ? null : value.slice(0, at)
}

/**
 * Kind `foreign-key-join`: the table of topic "left" (values `fk:payload`, the foreign key before the
 * colon; none when empty or absent) joined by foreign key with the table of topic "right" (keyed by the
 * foreign keys), with `join` or `leftJoin`.
 */
export const foreignKeyJoinKind: ScenarioKind = {
  build(scenario: Scenario, out: OutputSink): KindInstance {
    const t = scenario.topology as Obj
    const type = t.join
    if (type !== 'inner' && type !== 'left') throw malformed('topology.join', 'must be "inner" or "left"')
    const builder = new StreamsBuilder()
    const left = derived(builder.table<string, string>('left'), derivation(t, 'left'))
    const right = derived(builder.table<string, string>('right'), derivation(t, 'right'))
    const result = type === 'inner' ? left.join(right, foreignKeyOf, joined) : left.leftJoin(right, foreignKeyOf, joined)
    result.toStream().addStatelessNode<string, string | null>(undefined, 'SCENARIO-OUTPUT', (r) => out.emit({ key: r.key, value: r.value, ts: r.timestamp }))
    return { topology: builder.build(), inputTopic: 'left', inputTopics: ['left', 'right'] }
  },
}
