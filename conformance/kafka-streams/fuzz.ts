/**
 * `npm run fuzz:kafka-streams -- [--cases N] [--seed S] [--kinds a,b]`: a differential fuzzer. Generates
 * seeded random scenarios of kinds punctuate, suppress-table, windowed-count, stream-stream-join,
 * stream-table-join, table-table-join, foreign-key-join, stream-global-join, table-aggregate and stream-aggregate (in-order and out-of-order data, bounds, grace, hopping,
 * sliding and session windows, inner, left and outer joins with both sides, tombstones, asymmetric
 * windows, plain and versioned tables), runs each through punctual and through Kafka
 * Streams, and on a mismatch prints the scenario minimized (steps removed while it still differs).
 * Exits 1 on a mismatch. Suppression runs with waitFrom first, which is what Kafka Streams does (see
 * expected-differences.json for the default, latest).
 */
import { parseArgs } from 'node:util'
import { runScenario } from '../../src/conformance/runner.js'
import { parseScenario } from '../../src/conformance/scenario.js'
import { seededRandom } from '../../src/testing/index.js'
import { comparable, ReferenceHarness } from './harness.js'

const KINDS = ['punctuate', 'suppress-table', 'windowed-count', 'stream-stream-join', 'stream-table-join', 'table-table-join', 'foreign-key-join', 'table-aggregate', 'stream-aggregate', 'stream-global-join'] as const
type Kind = (typeof KINDS)[number]
const { values } = parseArgs({ options: { cases: { type: 'string', default: '300' }, seed: { type: 'string' }, kinds: { type: 'string' } } })
const kinds = (values.kinds?.split(',') ?? [...KINDS]) as Kind[]
for (const k of kinds) {
  if (!KINDS.includes(k)) {
    console.error(`--kinds: unknown kind ${JSON.stringify(k)} (known: ${KINDS.join(', ')})`)
    process.exit(2)
  }
}
const cases = Number(values.cases)
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed)

type Json = Record<string, unknown>

/** One random scenario from a seeded generator. */
function generate(random: () => number, n: number): Json {
  const int = (lo: number, hi: number): number => lo + Math.floor(random() * (hi - lo + 1))
  const pick = <T>(xs: readonly T[]): T => xs[int(0, xs.length - 1)] as T
  const kind = pick(kinds)
  const ordered = random() < 0.3
  const aggregate = pick(['count', 'reduce', 'cogroup'] as const)
  const steps: Json[] = []
  let ts = 0
  const count = int(1, 25)
  for (let i = 0; i < count; i++) {
    if (random() < 0.15) {
      steps.push({ advanceWallClockMs: int(1, 30) })
      continue
    }
    ts = ordered ? ts + int(0, 3) : int(0, 30)
    const key = pick(['A', 'B', 'C', 'D'])
    const join = kind === 'stream-stream-join' || kind === 'stream-table-join' || kind === 'table-table-join'
    const value = (kind === 'suppress-table' || join) && random() < (kind === 'table-table-join' ? 0.25 : 0.1) ? null : pick(['v', 'w', 'xy', 'z'])
    if (kind === 'foreign-key-join') {
      // Left values name a right key (or none); right records update those keys.
      const topic = pick(['left', 'right'])
      const fk = pick(['A', 'B', 'C', 'D', 'A', 'B', ''])
      // Values starting with "z" are the ones a derived table's filter drops.
      const v = random() < 0.2 ? null : topic === 'left' ? (random() < 0.1 ? `p${i}` : `${random() < 0.15 ? 'z' : ''}${fk}:p${i}`) : `${pick(['r', 'z'])}${i}`
      steps.push({ record: { topic, key: topic === 'left' ? `k${int(0, 3)}` : key, value: v, ts } })
    } else if (kind === 'stream-global-join') {
      // Stream records name a table key in their value; table records update the global table.
      const topic = pick(['left', 'right'])
      const v = random() < 0.15 ? null : topic === 'left' ? pick(['A', 'B', 'C', 'D']) : `${pick(['v', 'w'])}${i}`
      steps.push({ record: { topic, key: topic === 'left' ? `s${int(0, 3)}` : key, value: v, ts } })
    } else if (join) steps.push({ record: { topic: pick(['left', 'right']), key, value: value === null ? null : `${value}${i}`, ts } })
    else if (kind === 'table-aggregate') steps.push({ record: { key, value: random() < 0.25 ? null : `${pick(['x', 'y', 'z'])}:${int(-3, 9)}`, ts } })
    else if (kind === 'stream-aggregate') {
      const v = random() < 0.1 ? null : String(i)
      steps.push({ record: { ...(aggregate === 'cogroup' ? { topic: pick(['left', 'right']) } : {}), key, value: v, ts } })
    }
    else steps.push({ record: { key, value, ts } })
  }
  /** Now and then a joined table is derived first (filter, mapValues or both): `derive.left` only when the left side is a table. */
  const derive = (leftToo: boolean): Json => {
    if (random() < 0.6) return {}
    const how = (): string | undefined => pick([undefined, 'filter', 'mapValues', 'filterMapValues'])
    const d: Json = {}
    const l = leftToo ? how() : undefined
    const r = how()
    if (l !== undefined) d.left = l
    if (r !== undefined) d.right = r
    return Object.keys(d).length === 0 ? {} : { derive: d }
  }
  let topology: Json
  if (kind === 'punctuate') {
    const schedules = Array.from({ length: int(1, 2) }, (_, i) => ({
      id: `p${i}`,
      type: pick(['stream', 'wall']),
      intervalMs: int(1, 12),
      ...(random() < 0.5 ? { startMs: int(0, 40) } : {}),
    }))
    topology = { kind, schedules }
    if (random() < 0.3) steps.splice(int(0, steps.length), 0, { cancel: 'p0' })
  } else if (kind === 'suppress-table') {
    const bound = random() < 0.5 ? { maxRecords: int(1, 3), whenFull: pick(['emitEarly', 'shutDown']) } : {}
    topology = { kind, suppress: { until: 'timeLimit', waitMs: int(0, 8), waitFrom: 'first', ...bound } }
  } else if (kind === 'table-table-join') {
    topology = { kind, join: pick(['inner', 'left', 'outer']), ...derive(true) }
  } else if (kind === 'stream-global-join') {
    topology = { kind, join: pick(['inner', 'left']) }
  } else if (kind === 'foreign-key-join') {
    topology = { kind, join: pick(['inner', 'left']), ...derive(true) }
  } else if (kind === 'table-aggregate') {
    topology = { kind, aggregate: pick(['count', 'sum', 'reduce']), ...(random() < 0.4 ? { derive: pick(['filter', 'mapValues', 'filterMapValues']) } : {}) }
  } else if (kind === 'stream-aggregate') {
    // A cogroup is windowed now and then: tumbling or hopping, sliding, or sessions, with grace.
    const size = int(1, 10)
    const windowed = aggregate === 'cogroup' && random() < 0.7
    const shape = random()
    const windows =
      shape < 0.3
        ? { gapMs: int(1, 6), graceMs: int(0, 6) }
        : shape < 0.6
          ? { timeDifferenceMs: int(1, 8), graceMs: int(0, 6) }
          : { sizeMs: size, graceMs: int(0, 6), ...(random() < 0.4 ? { advanceMs: int(1, size) } : {}) }
    topology = { kind, aggregate, ...(windowed ? { windows } : {}) }
  } else if (kind === 'stream-table-join') {
    // Plain, versioned, or versioned with a grace period no longer than the history retention.
    const history = int(0, 12)
    const variant = pick(['plain', 'versioned', 'grace'] as const)
    topology = {
      kind,
      join: pick(['inner', 'left']),
      ...(variant === 'plain' ? derive(false) : { versioned: { historyRetentionMs: history } }),
      ...(variant === 'grace' ? { graceMs: int(0, history) } : {}),
    }
  } else if (kind === 'stream-stream-join') {
    const diff = int(0, 6)
    const windows: Json = { timeDifferenceMs: diff, graceMs: pick([0, 0, int(0, 6)]) }
    // Asymmetric windows now and then: before + after must stay >= 0.
    if (random() < 0.25) windows.beforeMs = int(-diff, 8)
    if (random() < 0.25) windows.afterMs = int(Math.max(-diff, -((windows.beforeMs as number | undefined) ?? diff)), 8)
    topology = { kind, join: pick(['inner', 'left', 'outer']), windows }
  } else {
    const grace = int(0, 6)
    const windows = pick([
      { type: 'tumbling', sizeMs: int(1, 10), graceMs: grace },
      { type: 'hopping', sizeMs: 10, advanceMs: pick([2, 5, 10]), graceMs: grace },
      { type: 'sliding', timeDifferenceMs: int(1, 8), graceMs: grace },
      { type: 'session', gapMs: int(1, 6), graceMs: grace },
    ])
    const suppress = random() < 0.5 ? null : { until: 'windowCloses', ...(random() < 0.3 ? { maxRecords: int(1, 4), whenFull: 'shutDown' } : {}) }
    topology = { kind, windows, suppress }
  }
  return { name: `fuzz-${seed}-${n}`, wallClockStartMs: int(0, 20), topology, steps, expect: [] }
}

const harness = await ReferenceHarness.start()

/** Whether punctual and Kafka Streams differ on a scenario (undefined: not comparable). */
async function differs(s: Json): Promise<{ ours: string[]; theirs: string[] } | undefined | false> {
  const ref = await harness.run({ scenario: s })
  if (ref.notComparable !== undefined) return undefined
  if (ref.failed !== undefined) throw new Error(`harness failed on ${JSON.stringify(s)}: ${ref.failed}`)
  const [ours, theirs] = comparable(runScenario(parseScenario(s), process.cwd()), ref.outputs ?? [])
  return theirs.length === ours.length && theirs.every((l, i) => l === ours[i]) ? false : { ours, theirs }
}

/** Removes steps one at a time while the scenario still differs. */
async function minimize(s: Json): Promise<Json> {
  let steps = s.steps as Json[]
  for (let changed = true; changed; ) {
    changed = false
    for (let i = 0; i < steps.length; i++) {
      const fewer = steps.filter((_, j) => j !== i)
      if (await differs({ ...s, steps: fewer })) {
        steps = fewer
        changed = true
        break
      }
    }
  }
  return { ...s, steps }
}

const random = seededRandom(seed)
let compared = 0
let skipped = 0
let mismatches = 0
const started = Date.now()
for (let n = 0; n < cases; n++) {
  const s = generate(random, n)
  const d = await differs(s)
  if (d === undefined) {
    skipped++
    continue
  }
  compared++
  if (d === false) continue
  mismatches++
  const small = await minimize(s)
  const m = (await differs(small)) as { ours: string[]; theirs: string[] }
  console.log(`MISMATCH (case ${n}, seed ${seed}), minimized:\n${JSON.stringify(small)}\n  punctual:      ${m.ours.join(' ')}\n  Kafka Streams: ${m.theirs.join(' ')}`)
  if (mismatches >= 5) break
}
await harness.close()
console.log(`fuzz seed ${seed}: ${compared} cases compared, ${skipped} not comparable, ${mismatches} mismatches, in ${((Date.now() - started) / 1000).toFixed(1)} s`)
console.log(`fuzz: ${compared - mismatches} passed, ${mismatches} failed`)
process.exit(mismatches === 0 ? 0 : 1)
