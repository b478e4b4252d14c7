import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { EmbeddedRuntime, Serdes, silentLogger } from '../../src/index.js'
import { flightsTopology } from '../../demo/flights/topology.js'
import { seededRandom } from '../../src/testing/index.js'
import { CRASH_APP_ID, CRASH_TOPICS } from '../fixtures/flights-crash-app.js'

// `npm run test:crash` sets these for the long variant.
const FLIGHTS = Number(process.env.PUNCTUAL_CRASH_FLIGHTS ?? 200_000)
const KILLS = Number(process.env.PUNCTUAL_CRASH_KILLS ?? 10)
const APP = fileURLToPath(new URL('../fixtures/flights-crash-app.ts', import.meta.url))
/** The deterministic outputs (progress is wall-clock driven, so it differs run to run by design). */
const OUTPUTS = ['hourly-delays', 'daily-reports', 'airport-alerts']

interface Child {
  readonly child: ChildProcess
  /** Resolves with the number of flights already fed when the child runs. */
  readonly started: Promise<number>
  /** Resolves once the child has fed at least `n` flights (or has finished). */
  fed(n: number): Promise<void>
  /** Resolves with true on a clean `done`, false when it was killed. */
  readonly exited: Promise<boolean>
}

/** Starts the crash-test app; with `fileSizeLimitKb`, under a file size limit (a disk that fills up). */
function startChild(stateDir: string, fileSizeLimitKb?: number, env: Record<string, string> = {}): Child {
  const args = ['--import', 'tsx', APP, stateDir, String(FLIGHTS)]
  const options = { stdio: ['ignore', 'pipe', 'inherit'] as Array<'ignore' | 'pipe' | 'inherit'>, env: { ...process.env, ...env } }
  const child =
    fileSizeLimitKb === undefined
      ? spawn(process.execPath, args, options)
      : spawn('/bin/sh', ['-c', `ulimit -f ${fileSizeLimitKb} && exec "$0" "$@"`, process.execPath, ...args], options)
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

/** Every record of the output topics, as comparable strings (topic, partition, key, value, timestamp). */
async function outputs(stateDir: string): Promise<string[]> {
  const runtime = new EmbeddedRuntime(flightsTopology({ progressStartMs: 0 }), { applicationId: CRASH_APP_ID, stateDir, topics: CRASH_TOPICS, logger: silentLogger })
  const out: string[] = []
  const hex = (b: Uint8Array | null): string => (b === null ? 'null' : Buffer.from(b).toString('hex'))
  for (const topic of OUTPUTS) {
    runtime.subscribe<Uint8Array, Uint8Array>(topic, (r, p) => out.push(`${topic} ${p} ${hex(r.key)} ${hex(r.value)} ${r.timestamp}`), { keySerde: Serdes.Bytes(), valueSerde: Serdes.Bytes() })
  }
  runtime.start()
  await runtime.stop()
  return out.sort()
}

/** Records of `a` not in `b`, both sorted, counting duplicates. */
function difference(a: string[], b: string[]): string[] {
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
function decode(line: string): string {
  const [topic, p, k, v, ts] = line.split(' ') as [string, string, string, string, string]
  const text = (h: string): string => (h === 'null' ? 'null' : Buffer.from(h, 'hex').toString('latin1').replace(/[^\x20-\x7e]/g, '.'))
  return `${topic}[${p}] ${text(k)} = ${topic === 'hourly-delays' ? String(Buffer.from(v, 'hex').readBigInt64BE()) : text(v)} @${ts}`
}

/** Asserts that two output lists are the same multiset, showing a few differences if not. */
function assertSameOutput(actual: string[], expected: string[], what: string): void {
  for (const topic of OUTPUTS) assert.ok(expected.some((r) => r.startsWith(`${topic} `)), `the uninterrupted run wrote to ${topic}`)
  const lost = difference(expected, actual)
  const extra = difference(actual, expected)
  const show = (rs: string[]): string => rs.slice(0, 5).map(decode).join('\n    ')
  assert.ok(lost.length === 0 && extra.length === 0, `${what}: ${lost.length} records lost, ${extra.length} extra\n  lost:\n    ${show(lost)}\n  extra:\n    ${show(extra)}`)
}

describe(`crash test: the flights demo over ${FLIGHTS.toLocaleString('en-US')} flights`, () => {
  const root = mkdtempSync(join(tmpdir(), 'punctual-crash-'))
  let expected: string[] = []

  before(async () => {
    const reference = join(root, 'uninterrupted')
    const first = startChild(reference)
    await first.started
    assert.equal(await first.exited, true)
    expected = await outputs(reference)
  })

  /** Kills runs of the app at random points, then lets one finish; its output must be the uninterrupted run's. */
  async function killAndResume(kills: number, dir: string, env: Record<string, string>): Promise<void> {
    const seed = Number(process.env.PUNCTUAL_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31))
    const random = seededRandom(seed)
    // Kill points spread over the whole input: each kill comes when the feed has passed a random flight
    // count, plus a random 0-50 ms, so it lands anywhere: mid-batch, mid-commit, during restore.
    const points = Array.from({ length: kills }, () => Math.floor(random() * FLIGHTS)).sort((a, b) => a - b)
    const crashed = join(root, dir)
    const moments: string[] = []
    for (const point of points) {
      const run = startChild(crashed, undefined, env)
      const resumedAt = await run.started
      await run.fed(point)
      const delay = Math.floor(random() * 50)
      await new Promise((r) => setTimeout(r, delay))
      run.child.kill('SIGKILL')
      const finished = await run.exited
      moments.push(`${finished ? 'finished before the kill' : 'killed'} ${delay} ms after flight ${point} was fed (resumed at ${resumedAt})`)
    }
    const killed = moments.filter((m) => m.startsWith('killed')).length
    console.log(`crash test (${dir}) seed ${seed} (PUNCTUAL_CRASH_SEED to replay): ${moments.join('; ')}`)
    const last = startChild(crashed, undefined, env)
    await last.started
    assert.equal(await last.exited, true)

    assertSameOutput(await outputs(crashed), expected, `seed ${seed}`)
    assert.ok(killed >= kills - 1, `the kills landed mid-run (${killed} of ${kills})`)
  }

  it(`killed with SIGKILL ${KILLS} times, ends with exactly the output of an uninterrupted run: nothing lost, nothing doubled`, async () => {
    await killAndResume(KILLS, 'crashed', {})
  })

  it(`the same with every commit written in slices through the journal (${Math.ceil(KILLS / 2)} kills)`, async () => {
    await killAndResume(Math.ceil(KILLS / 2), 'crashed-sliced', { PUNCTUAL_SLICE_COMMITS_ABOVE: '0' })
  })

  it('stops with a clear error when the disk is full, and resumes exactly once there is room', async () => {
    const dir = join(root, 'full-disk')
    // A file size limit stands in for a full disk: the checkpoint file cannot grow past 3 MB (the
    // first commits fit, a large one going through the journal, which writes its changes twice; the
    // whole run needs about 5 MB).
    const full = startChild(dir, 3072)
    await assert.rejects(full.exited, /exited with code 3 .*cannot write checkpoints: .*(full|too large)/)
    const resumed = startChild(dir)
    assert.ok((await resumed.started) > 0, 'what was committed before the disk filled up is still there')
    assert.equal(await resumed.exited, true)
    assertSameOutput(await outputs(dir), expected, 'after a full disk')
  })
})
