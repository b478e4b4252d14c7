import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'

const APP = fileURLToPath(new URL('../fixtures/fire-once-app.ts', import.meta.url))
const INTERVAL = 2000
/** The apps run on a manual clock; the test moves it (test/fixtures/manual-time.ts). */
const T0 = 1_000_000

/** A test app in a child process, read line by line. */
function startChild(app: string, args: string[]): { child: ChildProcess; nextLine: (what: RegExp) => Promise<string>; send: (line: string) => void } {
  const child = spawn(process.execPath, ['--import', 'tsx', app, ...args], { stdio: ['pipe', 'pipe', 'inherit'] })
  const lines: string[] = []
  const waiters: Array<(line: string) => void> = []
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const w = waiters.shift()
    if (w !== undefined) w(line)
    else lines.push(line)
  })
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`the app exited (code ${code}) before the expected line`))))
  exited.catch(() => {})
  return {
    child,
    /** The next line the app prints; it must match `what`. */
    nextLine: async (what) => {
      const line = lines.shift() ?? (await Promise.race([new Promise<string>((resolve) => waiters.push(resolve)), exited]))
      assert.match(line, what)
      return line
    },
    send: (line) => child.stdin!.write(line + '\n'),
  }
}

function killed(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once('exit', () => resolve())
    child.kill('SIGKILL')
  })
}

describe('missed-trigger policy across a real crash and restart (state directory)', () => {
  for (const onMissed of ['fireOnce', 'skip'] as const) {
    it(`${onMissed}: a point missed while the process was killed ${onMissed === 'fireOnce' ? 'fires once at start-up' : 'is not replayed'}`, async () => {
      const stateDir = join(mkdtempSync(join(tmpdir(), 'punctual-restart-')), 'state')
      const anchor = T0 + 4000
      const first = startChild(APP, [stateDir, String(T0), String(anchor), String(INTERVAL), onMissed])
      try {
        await first.nextLine(/^ready$/)
        first.send('advance 4000')
        assert.equal(await first.nextLine(/^fire /), `fire ${anchor}`, 'the first run fires at the anchor')
        await first.nextLine(/^at /)
      } finally {
        await killed(first.child)
      }
      // The grid point anchor + INTERVAL passes while nothing runs: the second run starts 300 ms after it.
      const restartAt = anchor + INTERVAL + 300
      const second = startChild(APP, [stateDir, String(restartAt), String(anchor), String(INTERVAL), onMissed])
      try {
        if (onMissed === 'fireOnce') assert.equal(await second.nextLine(/^fire /), `fire ${restartAt}`, 'one catch-up call at start-up')
        await second.nextLine(/^ready$/)
        second.send(`advance ${anchor + 2 * INTERVAL - restartAt}`)
        assert.equal(await second.nextLine(/^fire /), `fire ${anchor + 2 * INTERVAL}`, 'then the grid resumes at the next point')
        assert.equal(await second.nextLine(/^at /), `at ${anchor + 2 * INTERVAL}`, 'and nothing else fired')
      } finally {
        await killed(second.child)
      }
    })
  }
})

describe('keyed state and timers across a real crash and restart (state directory)', () => {
  it('restores the counts and pending event-time timers committed before the kill', async () => {
    const stateDir = join(mkdtempSync(join(tmpdir(), 'punctual-restart-')), 'state')
    const app = fileURLToPath(new URL('../fixtures/keyed-app.ts', import.meta.url))
    const run = async (phase: string): Promise<string[]> => {
      const { child, nextLine } = startChild(app, [stateDir, phase, String(T0)])
      const lines: string[] = []
      try {
        for (let line = await nextLine(/./); line !== 'ready'; line = await nextLine(/./)) lines.push(line)
      } finally {
        await killed(child)
      }
      return lines
    }
    assert.deepEqual(await run('1'), [], 'nothing fires in the first run (stream time 3, wall timer 1 s ahead)')
    // After the restart (1.2 s later on the app's clock): b's processing-time timer came due while down
    // and fires at the first wall-clock check; stream time goes 3 -> 12, so a's timers at 11 and 12 fire
    // and see a's count of 2.
    assert.deepEqual((await run('2')).sort(), ['event timer a 11 count=2', 'event timer a 12 count=2', 'processing timer b wall count=1'])
  })
})
