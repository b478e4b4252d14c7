// The crash-test harness: runs an application child process over a state directory, kills it with
// SIGKILL at random points of its input, resumes it, and compares what it wrote with one uninterrupted
// run. The children print `started <n already fed>`, `fed <n>` after each batch, `done` after a clean
// stop, and `error <message>` (exit code 3) when the runtime stops on an error.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { EmbeddedRuntime, Serdes, silentLogger } from '../../src/index.js'
import type { Topology, TopicConfig } from '../../src/index.js'
import { seededRandom } from '../../src/testing/index.js'

export interface CrashChild {
  readonly child: ChildProcess
  /** Resolves with the number of inputs already fed when the child runs. */
  readonly started: Promise<number>
  /** Resolves once the child has fed at least `n` inputs (or has finished). */
  fed(n: number): Promise<void>
  /** Resolves with true on a clean `done`, false when it was killed. */
  readonly exited: Promise<boolean>
}

/**
 * Starts `app` (a TypeScript file run through tsx) with `args`; with `fileSizeLimitKb`, under a file
 * size limit (a disk that fills up).
 */
export function startCrashChild(app: string, args: readonly string[], env: Record<string, string> = {}, fileSizeLimitKb?: number): CrashChild {
  const argv = ['--import', 'tsx', app, ...args]
  const options = { stdio: ['ignore', 'pipe', 'inherit'] as Array<'ignore' | 'pipe' | 'inherit'>, env: { ...process.env, ...env } }
  const child =
    fileSizeLimitKb === undefined
      ? spawn(process.execPath, argv, options)
      : spawn('/bin/sh', ['-c', `ulimit -f ${fileSizeLimitKb} && exec "$0" "$@"`, process.execPath, ...argv], options)
  let done = false
  let error: string | undefined
  let fedSoFar = 0
  const waiting: Array<{ n: number; resolve: () => void }> = []
  let onStarted: (n: number) => void = () => {}
  const started = new Promise<number>((resolve) => (onStarted = resolve))
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const m = /^(started|fed) (\d+)$/.exec(line)
    if (m !== null) {
      fedSoFar = Number(m[2])
      if (m[1] === 'started') onStarted(fedSoFar)
    }
    if (line === 'done') done = true
    if (line.startsWith('error ')) error = line.slice(6)
    for (let i = waiting.length - 1; i >= 0; i--) {
      const w = waiting[i]!
      if (done || fedSoFar >= w.n) {
        waiting.splice(i, 1)
        w.resolve()
      }
    }
  })
  const exited = new Promise<boolean>((resolve, reject) =>
    child.once('exit', (code, signal) => {
      for (const w of waiting.splice(0)) w.resolve()
      if (signal === 'SIGKILL') resolve(false)
      else if (code === 0 && done) resolve(true)
      else reject(new Error(`crash-test child exited with code ${code} signal ${signal}${error === undefined ? '' : `: ${error}`}`))
    }),
  )
  const fed = (n: number): Promise<void> => (done || fedSoFar >= n ? Promise.resolve() : new Promise((resolve) => waiting.push({ n, resolve })))
  return { child, started, fed, exited }
}

/** What the harness needs to know of an application. */
export interface CrashApp {
  /** The child's file. */
  readonly file: string
  /** How many inputs a run feeds (the child's second argument, after the state directory). */
  readonly inputs: number
  readonly applicationId: string
  readonly topology: () => Topology
  readonly topics: Readonly<Record<string, TopicConfig>>
  /** The topics whose records must match the uninterrupted run's. */
  readonly outputs: readonly string[]
  /** A record line of `outputs()` made readable for a failure message. */
  readonly describe?: (line: string) => string
}

/** Every record of the app's output topics in `stateDir`, as sorted strings (topic, partition, key, value, timestamp). */
export async function crashOutputs(app: CrashApp, stateDir: string): Promise<string[]> {
  const runtime = new EmbeddedRuntime(app.topology(), { applicationId: app.applicationId, stateDir, topics: app.topics, logger: silentLogger })
  const out: string[] = []
  const hex = (b: Uint8Array | null): string => (b === null ? 'null' : Buffer.from(b).toString('hex'))
  for (const topic of app.outputs) {
    runtime.subscribe<Uint8Array, Uint8Array>(topic, (r, p) => out.push(`${topic} ${p} ${hex(r.key)} ${hex(r.value)} ${r.timestamp}`), { keySerde: Serdes.Bytes(), valueSerde: Serdes.Bytes() })
  }
  await runtime.start()
  await runtime.stop()
  return out.sort()
}

/** Records of `a` not in `b`, both sorted, counting duplicates. */
function difference(a: readonly string[], b: readonly string[]): string[] {
  const out: string[] = []
  let j = 0
  for (const r of a) {
    while (j < b.length && (b[j] as string) < r) j++
    if (j < b.length && b[j] === r) j++
    else out.push(r)
  }
  return out
}

/** A record line with its key and value shown as text. */
export function textLine(line: string): string {
  const [topic, p, k, v, ts] = line.split(' ') as [string, string, string, string, string]
  const text = (h: string): string => (h === 'null' ? 'null' : Buffer.from(h, 'hex').toString('latin1').replace(/[^\x20-\x7e]/g, '.'))
  return `${topic}[${p}] ${text(k)} = ${text(v)} @${ts}`
}

/** Asserts that two output lists are the same multiset, showing a few differences if not. */
export function assertSameOutput(app: CrashApp, actual: readonly string[], expected: readonly string[], what: string): void {
  for (const topic of app.outputs) assert.ok(expected.some((r) => r.startsWith(`${topic} `)), `the uninterrupted run wrote to ${topic}`)
  const lost = difference(expected, actual)
  const extra = difference(actual, expected)
  const show = (rs: string[]): string => rs.slice(0, 5).map(app.describe ?? textLine).join('\n    ')
  assert.ok(lost.length === 0 && extra.length === 0, `${what}: ${lost.length} records lost, ${extra.length} extra\n  lost:\n    ${show(lost)}\n  extra:\n    ${show(extra)}`)
}

/** Runs the app once, uninterrupted, in `root/<dir>`, and returns its outputs. */
export async function uninterruptedRun(app: CrashApp, root: string, dir = 'uninterrupted'): Promise<string[]> {
  const stateDir = join(root, dir)
  const run = startCrashChild(app.file, [stateDir, String(app.inputs)])
  await run.started
  assert.equal(await run.exited, true)
  return crashOutputs(app, stateDir)
}

/**
 * Kills runs of the app at `kills` random points of its input, then lets one finish; its output must be
 * `expected` (the uninterrupted run's). The seed comes from PUNCTUAL_CRASH_SEED or is drawn, and is
 * printed so a failure can be replayed.
 */
export async function killAndResume(app: CrashApp, root: string, dir: string, kills: number, expected: readonly string[], env: Record<string, string> = {}): Promise<void> {
  const seed = Number(process.env.PUNCTUAL_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31))
  const random = seededRandom(seed)
  // Kill points spread over the whole input: each kill comes when the feed has passed a random input
  // count, plus a random 0-50 ms, so it lands anywhere: mid-batch, mid-commit, during restore.
  const points = Array.from({ length: kills }, () => Math.floor(random() * app.inputs)).sort((a, b) => a - b)
  const stateDir = join(root, dir)
  const moments: string[] = []
  for (const point of points) {
    const run = startCrashChild(app.file, [stateDir, String(app.inputs)], env)
    const resumedAt = await run.started
    await run.fed(point)
    const delay = Math.floor(random() * 50)
    await new Promise((r) => setTimeout(r, delay))
    run.child.kill('SIGKILL')
    const finished = await run.exited
    moments.push(`${finished ? 'finished before the kill' : 'killed'} ${delay} ms after input ${point} was fed (resumed at ${resumedAt})`)
  }
  const killed = moments.filter((m) => m.startsWith('killed')).length
  console.log(`crash test (${dir}) seed ${seed} (PUNCTUAL_CRASH_SEED to replay): ${moments.join('; ')}`)
  const last = startCrashChild(app.file, [stateDir, String(app.inputs)], env)
  await last.started
  assert.equal(await last.exited, true)

  assertSameOutput(app, await crashOutputs(app, stateDir), expected, `seed ${seed}`)
  assert.ok(killed >= kills - 1, `the kills landed mid-run (${killed} of ${kills})`)
}
