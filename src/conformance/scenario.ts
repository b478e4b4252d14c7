import { PunctualError } from '../errors.js'

/** A scenario file (FORMAT.md), validated. Kind-specific topology fields are checked by each kind. */
export interface Scenario {
  readonly name: string
  readonly about: string
  readonly wallClockStartMs: number
  /** Where records' event time comes from (FORMAT.md, "Event time"); undefined: their `ts`. */
  readonly timestampExtractor: ScenarioTimestamps | undefined
  readonly topology: { readonly kind: string } & Readonly<Record<string, unknown>>
  readonly steps: readonly Step[]
  readonly expect: readonly OutputEvent[] | undefined
}

export interface RecordInput {
  readonly key: string
  readonly value: string | null
  readonly ts: number
  /** The input topic, for kinds with several (joins: "left", "right"); the kind's only one otherwise. */
  readonly topic?: string
}

export type Step =
  | { readonly record: RecordInput }
  | { readonly recordsFromFile: string }
  | { readonly advanceWallClockMs: number }
  | { readonly schedule: Readonly<Record<string, unknown>> }
  | { readonly cancel: string }

/** One output line; fields in the order FORMAT.md gives. */
export type OutputEvent = Readonly<Record<string, unknown>>

export function malformed(field: string, message: string): PunctualError {
  return new PunctualError('SCENARIO_INVALID', `malformed scenario: field "${field}" ${message}`)
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** Checks the shape of a parsed scenario; throws SCENARIO_INVALID naming the field. */
export function parseScenario(json: unknown): Scenario {
  if (!isObject(json)) throw malformed('(root)', 'must be a JSON object')
  const name = json.name
  if (typeof name !== 'string' || name.length === 0) throw malformed('name', 'must be a non-empty string')
  const about = json.about ?? ''
  if (typeof about !== 'string') throw malformed('about', 'must be a string')
  const wallClockStartMs = json.wallClockStartMs ?? 0
  if (typeof wallClockStartMs !== 'number' || !Number.isSafeInteger(wallClockStartMs) || wallClockStartMs < 0) {
    throw malformed('wallClockStartMs', 'must be a non-negative integer')
  }
  const timestampExtractor = parseTimestamps(json.timestampExtractor)
  const topology = json.topology
  if (!isObject(topology)) throw malformed('topology', 'must be an object')
  if (typeof topology.kind !== 'string') throw malformed('topology.kind', 'must be a string')
  if (!Array.isArray(json.steps)) throw malformed('steps', 'must be an array')
  const steps = json.steps.map((s, i) => parseStep(s, `steps[${i}]`))
  let expect: OutputEvent[] | undefined
  if (json.expect !== undefined) {
    if (!Array.isArray(json.expect)) throw malformed('expect', 'must be an array')
    json.expect.forEach((e, i) => {
      if (!isObject(e)) throw malformed(`expect[${i}]`, 'must be an object')
      if (typeof e.step !== 'number') throw malformed(`expect[${i}].step`, 'must be a number')
    })
    expect = json.expect as OutputEvent[]
  }
  return { name, about, wallClockStartMs, timestampExtractor, topology: topology as Scenario['topology'], steps, expect }
}

/** A scenario's timestamp extractor: where event time is read, and the policy for an invalid one. */
export interface ScenarioTimestamps {
  readonly from: 'ts' | 'value' | 'wallClock'
  readonly onInvalid: 'fail' | 'logAndSkip' | 'usePartitionTime' | 'useWallClock'
}

const TIMESTAMP_SOURCES = ['ts', 'value', 'wallClock'] as const
const INVALID_POLICIES = ['fail', 'logAndSkip', 'usePartitionTime', 'useWallClock'] as const

function parseTimestamps(json: unknown): ScenarioTimestamps | undefined {
  if (json === undefined) return undefined
  if (!isObject(json)) throw malformed('timestampExtractor', 'must be an object')
  const from = json.from ?? 'ts'
  if (!TIMESTAMP_SOURCES.includes(from as ScenarioTimestamps['from'])) throw malformed('timestampExtractor.from', `must be one of ${TIMESTAMP_SOURCES.join(', ')}, got ${JSON.stringify(from)}`)
  const onInvalid = json.onInvalid ?? 'fail'
  if (!INVALID_POLICIES.includes(onInvalid as ScenarioTimestamps['onInvalid'])) throw malformed('timestampExtractor.onInvalid', `must be one of ${INVALID_POLICIES.join(', ')}, got ${JSON.stringify(onInvalid)}`)
  if (from === 'wallClock' && json.onInvalid !== undefined) throw malformed('timestampExtractor.onInvalid', 'does not apply with from "wallClock" (the wall clock is always valid)')
  return { from: from as ScenarioTimestamps['from'], onInvalid: onInvalid as ScenarioTimestamps['onInvalid'] }
}

function parseStep(s: unknown, where: string): Step {
  if (!isObject(s)) throw malformed(where, 'must be an object')
  const keys = Object.keys(s)
  if (keys.length !== 1) throw malformed(where, `must have exactly one of record, recordsFromFile, advanceWallClockMs, schedule, cancel (got ${keys.join(', ') || 'none'})`)
  if ('record' in s) return { record: parseRecord(s.record, `${where}.record`) }
  if ('recordsFromFile' in s) {
    if (typeof s.recordsFromFile !== 'string') throw malformed(`${where}.recordsFromFile`, 'must be a path string')
    return { recordsFromFile: s.recordsFromFile }
  }
  if ('advanceWallClockMs' in s) {
    const n = s.advanceWallClockMs
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw malformed(`${where}.advanceWallClockMs`, 'must be a non-negative integer')
    return { advanceWallClockMs: n }
  }
  if ('schedule' in s) {
    if (!isObject(s.schedule)) throw malformed(`${where}.schedule`, 'must be an object')
    return { schedule: s.schedule }
  }
  if ('cancel' in s) {
    if (typeof s.cancel !== 'string') throw malformed(`${where}.cancel`, 'must be a schedule id string')
    return { cancel: s.cancel }
  }
  throw malformed(where, `unknown step "${keys[0]}"`)
}

export function parseRecord(r: unknown, where: string): RecordInput {
  if (!isObject(r)) throw malformed(where, 'must be an object with key, value, ts')
  if (typeof r.key !== 'string') throw malformed(`${where}.key`, 'must be a string')
  if (r.value !== null && typeof r.value !== 'string') throw malformed(`${where}.value`, 'must be a string or null')
  if (typeof r.ts !== 'number' || !Number.isSafeInteger(r.ts)) throw malformed(`${where}.ts`, 'must be an integer')
  if (r.topic !== undefined && typeof r.topic !== 'string') throw malformed(`${where}.topic`, 'must be a string')
  return r.topic === undefined ? { key: r.key, value: r.value, ts: r.ts } : { key: r.key, value: r.value, ts: r.ts, topic: r.topic }
}
