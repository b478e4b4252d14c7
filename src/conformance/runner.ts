import { readFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { PunctualError } from '../errors.js'
import { NO_HEADERS } from '../processor/api.js'
import { Serdes } from '../processor/serdes.js'
import type { Serde } from '../processor/serdes.js'
import { TopologyTestDriver } from '../testing/test-driver.js'
import type { KindInstance, ScenarioKind } from './kinds/kind.js'
import { keyedTimersKind } from './kinds/keyed-timers.js'
import { punctuateKind } from './kinds/punctuate.js'
import { suppressTableKind, windowedCountKind } from './kinds/suppression.js'
import { foreignKeyJoinKind, streamGlobalJoinKind, streamStreamJoinKind, streamTableJoinKind, tableTableJoinKind } from './kinds/joins.js'
import { tableAggregateKind } from './kinds/table-aggregate.js'
import { streamAggregateKind } from './kinds/stream-aggregate.js'
import { malformed, parseRecord, parseScenario } from './scenario.js'
import type { OutputEvent, RecordInput, Scenario, ScenarioTimestamps } from './scenario.js'
import {
  FailOnInvalidTimestamp,
  LogAndSkipOnInvalidTimestamp,
  UsePartitionTimeOnInvalidTimestamp,
  UseWallClockOnInvalidTimestamp,
  WallclockTimestampExtractor,
} from '../processor/timestamp-extractor.js'
import type { ConsumerRecord, TimestampExtractor } from '../processor/timestamp-extractor.js'

/** Every kind FORMAT.md defines; `undefined` marks the ones later issues implement. */
const KINDS: Readonly<Record<string, ScenarioKind | undefined>> = {
  punctuate: punctuateKind,
  'suppress-table': suppressTableKind,
  'windowed-count': windowedCountKind,
  'keyed-timers': keyedTimersKind,
  'stream-stream-join': streamStreamJoinKind,
  'stream-table-join': streamTableJoinKind,
  'table-table-join': tableTableJoinKind,
  'foreign-key-join': foreignKeyJoinKind,
  'stream-global-join': streamGlobalJoinKind,
  'table-aggregate': tableAggregateKind,
  'stream-aggregate': streamAggregateKind,
}

export function isKnownKind(kind: string): boolean {
  return Object.hasOwn(KINDS, kind)
}

export function loadScenario(path: string): Scenario {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    throw new PunctualError('SCENARIO_INVALID', `cannot read scenario ${path}: ${(err as Error).message}`, { cause: err })
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (err) {
    throw new PunctualError('SCENARIO_INVALID', `malformed scenario: ${path} is not valid JSON: ${(err as Error).message}`, { cause: err })
  }
  return parseScenario(json)
}

/**
 * Runs a scenario on the test driver and returns its outputs in emission order. Throws SCENARIO_INVALID
 * for a malformed scenario and UNSUPPORTED for a kind not implemented yet.
 */
export function runScenario(scenario: Scenario, scenarioPath: string): OutputEvent[] {
  const kindName = scenario.topology.kind
  if (!isKnownKind(kindName)) throw malformed('topology.kind', `is unknown: ${JSON.stringify(kindName)} (known: ${Object.keys(KINDS).join(', ')})`)
  const kind = KINDS[kindName]
  if (kind === undefined) throw new PunctualError('UNSUPPORTED', `kind ${kindName} is not supported yet`)

  const outputs: OutputEvent[] = []
  let step = -1
  let line: number | undefined
  const instance: KindInstance = kind.build(scenario, {
    emit(fields) {
      outputs.push(line === undefined ? { step, ...fields } : { step, line, ...fields })
    },
  })
  let driver: TopologyTestDriver
  try {
    const extractor = scenarioExtractor(scenario.timestampExtractor)
    driver = new TopologyTestDriver(instance.topology, {
      wallClockStartMs: scenario.wallClockStartMs,
      ...(extractor === undefined ? {} : { defaultTimestampExtractor: extractor }),
      // Dropped input (negative timestamps) is part of what scenarios test: no output, no noise.
      errorHandler: () => 'continue',
    })
  } catch (err) {
    if (err instanceof PunctualError && err.code === 'INVALID_CONFIG') throw new PunctualError('SCENARIO_INVALID', `malformed scenario: ${err.message}`, { cause: err })
    throw err
  }
  const topics = instance.inputTopics ?? [instance.inputTopic]
  for (const topic of topics) driver.createInputTopic(topic, Serdes.String(), Serdes.String())
  // Scenarios include records with invalid timestamps (SEMANTICS 1: dropped and counted), which the
  // public pipeInput refuses at the call; they go in as a topic written by another client would hold them.
  const S = Serdes.String() as Serde<unknown>
  const pipe = (r: RecordInput, where: string): void => {
    const topic = r.topic ?? instance.inputTopic
    if (!topics.includes(topic)) throw malformed(`${where}.topic`, `must be one of ${topics.map((t) => JSON.stringify(t)).join(', ')} for kind ${kindName}, got ${JSON.stringify(topic)}`)
    driver.append(topic, r.key, S, r.value, S, r.ts, NO_HEADERS)
  }

  for (step = 0; step < scenario.steps.length; step++) {
    const s = scenario.steps[step] as Scenario['steps'][number]
    const where = `steps[${step}]`
    try {
      if ('record' in s) pipe(s.record, `${where}.record`)
      else if ('advanceWallClockMs' in s) driver.advanceWallClockTime(s.advanceWallClockMs)
      else if ('recordsFromFile' in s) {
        const records = readRecordsFile(resolve(dirname(scenarioPath), s.recordsFromFile), `${where}.recordsFromFile`)
        for (line = 0; line < records.length; line++) pipe(records[line] as RecordInput, `${where}.recordsFromFile line ${line}`)
        line = undefined
      } else if (instance.handleStep?.(s, where) !== true) {
        throw malformed(where, `is not a step kind ${kindName} supports`)
      }
    } catch (err) {
      // An error that stops the topology is an output; later steps are not run.
      const code = err instanceof PunctualError && err.code === 'INVALID_TIMESTAMP' ? 'invalid-timestamp' : instance.errorOutput?.(err)
      if (code === undefined) throw err
      line = undefined
      outputs.push({ step, error: code })
      return outputs
    }
  }
  driver.close()
  return outputs
}

/** A value that is a decimal integer is its event time; anything else (a tombstone too) is invalid. */
const valueTime = (record: ConsumerRecord<unknown, unknown>): unknown => (typeof record.value === 'string' && /^[0-9]+$/.test(record.value) ? Number(record.value) : undefined)

function scenarioExtractor(spec: ScenarioTimestamps | undefined): TimestampExtractor | undefined {
  if (spec === undefined) return undefined
  if (spec.from === 'wallClock') return new WallclockTimestampExtractor()
  const source = spec.from === 'value' ? valueTime : undefined
  switch (spec.onInvalid) {
    case 'fail':
      return new FailOnInvalidTimestamp(source)
    case 'logAndSkip':
      return new LogAndSkipOnInvalidTimestamp(source)
    case 'usePartitionTime':
      return new UsePartitionTimeOnInvalidTimestamp(source)
    case 'useWallClock':
      return new UseWallClockOnInvalidTimestamp(source)
  }
}

function readRecordsFile(path: string, where: string): RecordInput[] {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    throw malformed(where, `names a file that cannot be read: ${(err as Error).message}`)
  }
  return text
    .split('\n')
    .filter((l) => l.trim().length > 0)
    .map((l, i) => {
      let json: unknown
      try {
        json = JSON.parse(l)
      } catch {
        throw malformed(`${where} line ${i}`, 'is not valid JSON')
      }
      return parseRecord(json, `${where} line ${i}`)
    })
}

/** Canonical form for comparison: field order does not matter, values must be equal. */
function canonical(e: OutputEvent): string {
  return JSON.stringify(Object.fromEntries(Object.entries(e).sort(([a], [b]) => (a < b ? -1 : 1))))
}

/** Compares outputs with expectations exactly and in order; returns a readable diff, or undefined on a match. */
export function diffOutputs(expected: readonly OutputEvent[], actual: readonly OutputEvent[]): string | undefined {
  const n = Math.max(expected.length, actual.length)
  let firstMismatch = -1
  for (let i = 0; i < n; i++) {
    const e = expected[i]
    const a = actual[i]
    if (e === undefined || a === undefined || canonical(e) !== canonical(a)) {
      firstMismatch = i
      break
    }
  }
  if (firstMismatch < 0) return undefined
  const lines = [`outputs differ from output #${firstMismatch} (expected ${expected.length}, got ${actual.length}):`]
  for (let i = 0; i < n; i++) {
    const e = expected[i]
    const a = actual[i]
    if (e !== undefined && a !== undefined && canonical(e) === canonical(a)) lines.push(`    ${JSON.stringify(a)}`)
    else {
      if (e !== undefined) lines.push(`  - ${JSON.stringify(e)}`)
      if (a !== undefined) lines.push(`  + ${JSON.stringify(a)}`)
    }
  }
  lines.push('  (- expected, + actual)')
  return lines.join('\n')
}
