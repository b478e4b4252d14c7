import { readdirSync, statSync } from 'node:fs'
import { basename, join } from 'node:path'
import { PunctualError } from '../errors.js'
import { diffOutputs, isKnownKind, loadScenario, runScenario } from '../conformance/runner.js'

export interface ScenarioRunOptions {
  check?: boolean
  /** Only run scenarios of these kinds; others are counted as skipped. */
  kinds?: string[]
}

export interface Io {
  out(line: string): void
  err(line: string): void
}

/** Expands folders to the `.json` files in them, sorted, so runs are reproducible. */
export function expandPaths(paths: readonly string[]): string[] {
  const files: string[] = []
  for (const p of paths) {
    let isDir: boolean
    try {
      isDir = statSync(p).isDirectory()
    } catch {
      files.push(p) // reported as unreadable by loadScenario
      continue
    }
    if (!isDir) files.push(p)
    else for (const f of readdirSync(p).filter((f) => f.endsWith('.json')).sort()) files.push(join(p, f))
  }
  return files
}

type Outcome = 'pass' | 'fail' | 'invalid' | 'skipped'

/**
 * `punctual scenario run PATH... [--check]`. Exit codes: 0 all good, 1 a mismatch, 2 a malformed
 * scenario or an unsupported kind (FORMAT.md).
 */
export function scenarioRun(paths: readonly string[], options: ScenarioRunOptions, io: Io): number {
  for (const k of options.kinds ?? []) {
    if (!isKnownKind(k)) {
      io.err(`--kinds: unknown kind ${JSON.stringify(k)}`)
      return 2
    }
  }
  const files = expandPaths(paths)
  if (files.length === 0) {
    io.err('no scenario files found')
    return 2
  }
  const several = files.length > 1
  const counts: Record<Outcome, number> = { pass: 0, fail: 0, invalid: 0, skipped: 0 }
  for (const file of files) {
    const outcome = runOne(file, options, io, several)
    counts[outcome]++
  }
  if (several && options.check === true) {
    const failed = counts.fail + counts.invalid
    io.out(`${counts.pass} passed, ${failed} failed${counts.skipped > 0 ? `, ${counts.skipped} skipped` : ''}`)
  }
  return counts.invalid > 0 ? 2 : counts.fail > 0 ? 1 : 0
}

function runOne(file: string, options: ScenarioRunOptions, io: Io, several: boolean): Outcome {
  const label = basename(file)
  try {
    const scenario = loadScenario(file)
    if (options.kinds !== undefined && !options.kinds.includes(scenario.topology.kind)) return 'skipped'
    const outputs = runScenario(scenario, file)
    if (options.check !== true) {
      if (several) io.out(JSON.stringify({ scenario: scenario.name }))
      for (const o of outputs) io.out(JSON.stringify(o))
      return 'pass'
    }
    if (scenario.expect === undefined) {
      io.err(`${label}: malformed scenario: field "expect" is required with --check`)
      return 'invalid'
    }
    const diff = diffOutputs(scenario.expect, outputs)
    if (diff === undefined) return 'pass'
    io.out(several ? `FAIL ${label}: ${diff.split('\n')[0]}` : `FAIL ${label}\n${diff}`)
    return 'fail'
  } catch (err) {
    if (err instanceof PunctualError && (err.code === 'SCENARIO_INVALID' || err.code === 'UNSUPPORTED')) {
      io.err(`${label}: ${err.message}`)
      return 'invalid'
    }
    throw err
  }
}
