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

/** Starts the app; resolves each `fire <ts>` line through `next()`. */
function startApp(stateDir: string, anchor: number, onMissed: 'skip' | 'fireOnce'): { child: ChildProcess; nextFire: () => Promise<number> } {
  const child = spawn(process.execPath, ['--import', 'tsx', APP, stateDir, String(anchor), String(INTERVAL), onMissed], { stdio: ['ignore', 'pipe', 'inherit'] })
  const fires: number[] = []
  const waiters: Array<(t: number) => void> = []
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const m = /^fire (\d+(?:\.\d+)?)$/.exec(line)
    if (m === null) return
    const t = Number(m[1])
    const w = waiters.shift()
    if (w !== undefined) w(t)
    else fires.push(t)
  })
  return {
    child,
    nextFire: () => {
      const t = fires.shift()
      if (t !== undefined) return Promise.resolve(t)
      return new Promise((resolve, reject) => {
        waiters.push(resolve)
        setTimeout(() => reject(new Error('no fire within 15 s')), 15_000).unref()
      })
    },
  }
}

function killed(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.once('exit', () => resolve())
    child.kill('SIGKILL')
  })
}

const until = (t: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, t - Date.now())))

describe('missed-trigger policy across a real crash and restart (state directory)', () => {
  for (const onMissed of ['fireOnce', 'skip'] as const) {
    it(`${onMissed}: a point missed while the process was killed ${onMissed === 'fireOnce' ? 'fires once at start-up' : 'is not replayed'}`, async () => {
      const stateDir = join(mkdtempSync(join(tmpdir(), 'punctual-restart-')), 'state')
      // Far enough ahead for the child (tsx start-up included) to be running before the anchor.
      const anchor = Date.now() + 4000
      const first = startApp(stateDir, anchor, onMissed)
      assert.ok(Math.abs((await first.nextFire()) - anchor) < 1000, 'the first run fires at the anchor')
      await killed(first.child)
      // The grid point anchor + INTERVAL passes while nothing runs.
      await until(anchor + INTERVAL + 300)
      const second = startApp(stateDir, anchor, onMissed)
      try {
        const fire = await second.nextFire()
        if (onMissed === 'fireOnce') {
          assert.ok(fire > anchor + INTERVAL && fire < anchor + 2 * INTERVAL, `one catch-up call at start-up, before the next grid point (fired at anchor + ${fire - anchor} ms)`)
          const next = await second.nextFire()
          assert.ok(next >= anchor + 2 * INTERVAL, 'then the grid resumes')
        } else {
          assert.ok(fire >= anchor + 2 * INTERVAL, `no catch-up: the next fire is the next grid point (fired at anchor + ${fire - anchor} ms)`)
        }
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
      const child = spawn(process.execPath, ['--import', 'tsx', app, stateDir, phase], { stdio: ['ignore', 'pipe', 'inherit'] })
      const lines: string[] = []
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('app did not get ready')), 15_000)
        createInterface({ input: child.stdout! }).on('line', (line) => {
          if (line === 'ready') {
            clearTimeout(timer)
            resolve()
          } else lines.push(line)
        })
      })
      await killed(child)
      return lines
    }
    assert.deepEqual(await run('1'), [], 'nothing fires in the first run (stream time 3, wall timer 1 s ahead)')
    await new Promise((r) => setTimeout(r, 1200))
    // After the restart: b's processing-time timer came due while down and fires right away; stream time
    // goes 3 -> 12, so a's timers at 11 and 12 fire and see a's count of 2.
    assert.deepEqual((await run('2')).sort(), ['event timer a 11 count=2', 'event timer a 12 count=2', 'processing timer b wall count=1'])
  })
})
