import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { JOIN_CRASH_APP_ID, JOIN_CRASH_TOPICS, joinCrashTopology } from '../fixtures/join-crash-app.js'
import { killAndResume, uninterruptedRun } from '../helpers/crash.js'
import type { CrashApp } from '../helpers/crash.js'

// `npm run test:crash` sets these for the long variant.
const FLIGHTS = Number(process.env.PUNCTUAL_CRASH_FLIGHTS ?? 100_000)
const KILLS = Number(process.env.PUNCTUAL_CRASH_KILLS ?? 8)

const app: CrashApp = {
  file: fileURLToPath(new URL('../fixtures/join-crash-app.ts', import.meta.url)),
  inputs: FLIGHTS,
  applicationId: JOIN_CRASH_APP_ID,
  topology: joinCrashTopology,
  topics: JOIN_CRASH_TOPICS,
  outputs: ['trips', 'enriched'],
}

/** The value of an output line as text. */
const valueOf = (line: string): string => Buffer.from(line.split(' ')[3] as string, 'hex').toString('utf8')

describe(`crash test: a stream-stream outer join and a versioned stream-table join over ${FLIGHTS.toLocaleString('en-US')} flights`, () => {
  const root = mkdtempSync(join(tmpdir(), 'punctual-join-crash-'))
  let expected: string[] = []

  before(async () => {
    expected = await uninterruptedRun(app, root)
  })

  it('the uninterrupted run has every kind of result: joined and unmatched trips, conditions found and not', () => {
    const trips = expected.filter((l) => l.startsWith('trips ')).map((l) => JSON.parse(valueOf(l)) as { departed: number | null; arrived: number | null })
    const enriched = expected.filter((l) => l.startsWith('enriched ')).map(valueOf)
    const count = (p: (t: { departed: number | null; arrived: number | null }) => boolean): number => trips.filter(p).length
    // About 9 in 10 flights have their arrival, 1 in 10 lost it, and 1 in 17 also lands somewhere else.
    assert.ok(count((t) => t.departed !== null && t.arrived !== null) > FLIGHTS * 0.8, 'joined trips')
    assert.ok(count((t) => t.arrived === null) > FLIGHTS * 0.05, 'departures whose arrival never came')
    assert.ok(count((t) => t.departed === null) > FLIGHTS * 0.03, 'arrivals without a departure')
    assert.ok(enriched.length > trips.length * 0.9, 'trips reach the conditions join')
    const unknown = enriched.filter((v) => v.endsWith(' unknown')).length
    // Most trips leave from an airport whose condition was written before they left.
    assert.ok(unknown > 0 && unknown < enriched.length * 0.3, `conditions found for most trips (${unknown} of ${enriched.length} not found)`)
  })

  it(`killed with SIGKILL ${KILLS} times, ends with exactly the output of an uninterrupted run: nothing lost, nothing doubled`, async () => {
    await killAndResume(app, root, 'crashed', KILLS, expected)
  })
})
