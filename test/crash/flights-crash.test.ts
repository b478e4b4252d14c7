import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { flightsTopology } from '../../demo/flights/topology.js'
import { CRASH_APP_ID, CRASH_TOPICS } from '../fixtures/flights-crash-app.js'
import { assertSameOutput, crashOutputs, killAndResume, startCrashChild, textLine, uninterruptedRun } from '../helpers/crash.js'
import type { CrashApp } from '../helpers/crash.js'

// `npm run test:crash` sets these for the long variant.
const FLIGHTS = Number(process.env.PUNCTUAL_CRASH_FLIGHTS ?? 200_000)
const KILLS = Number(process.env.PUNCTUAL_CRASH_KILLS ?? 10)

const app: CrashApp = {
  file: fileURLToPath(new URL('../fixtures/flights-crash-app.ts', import.meta.url)),
  inputs: FLIGHTS,
  applicationId: CRASH_APP_ID,
  topology: () => flightsTopology({ progressStartMs: 0 }),
  topics: CRASH_TOPICS,
  // The deterministic outputs (progress is wall-clock driven, so it differs run to run by design).
  outputs: ['hourly-delays', 'daily-reports', 'airport-alerts'],
  describe: (line) => {
    if (!line.startsWith('hourly-delays ')) return textLine(line)
    const [topic, p, k, v, ts] = line.split(' ') as [string, string, string, string, string]
    return `${topic}[${p}] ${Buffer.from(k, 'hex').toString('latin1')} = ${String(Buffer.from(v, 'hex').readBigInt64BE())} @${ts}`
  },
}

describe(`crash test: the flights demo over ${FLIGHTS.toLocaleString('en-US')} flights`, () => {
  const root = mkdtempSync(join(tmpdir(), 'punctual-crash-'))
  let expected: string[] = []

  before(async () => {
    expected = await uninterruptedRun(app, root)
  })

  it(`killed with SIGKILL ${KILLS} times, ends with exactly the output of an uninterrupted run: nothing lost, nothing doubled`, async () => {
    await killAndResume(app, root, 'crashed', KILLS, expected)
  })

  it(`the same with every commit written in slices through the journal (${Math.ceil(KILLS / 2)} kills)`, async () => {
    await killAndResume(app, root, 'crashed-sliced', Math.ceil(KILLS / 2), expected, { PUNCTUAL_SLICE_COMMITS_ABOVE: '0' })
  })

  it('stops with a clear error when the disk is full, and resumes exactly once there is room', async () => {
    const dir = join(root, 'full-disk')
    // A file size limit stands in for a full disk: the checkpoint file cannot grow past 3 MB (the
    // first commits fit, a large one going through the journal, which writes its changes twice; the
    // whole run needs about 5 MB). Commits of at most 5,000 records keep the first ones under it.
    const full = startCrashChild(app.file, [dir, String(FLIGHTS)], { PUNCTUAL_COMMIT_MAX_RECORDS: '5000' }, 3072)
    await assert.rejects(full.exited, /exited with code 3 .*cannot write checkpoints: .*(full|too large)/)
    const resumed = startCrashChild(app.file, [dir, String(FLIGHTS)])
    assert.ok((await resumed.started) > 0, 'what was committed before the disk filled up is still there')
    assert.equal(await resumed.exited, true)
    assertSameOutput(app, await crashOutputs(app, dir), expected, 'after a full disk')
  })
})
