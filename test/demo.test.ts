// The flights demo as a newcomer runs it (npm start): its options, and a run resumed after it finished.
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

function demo(...args: string[]): { code: number | null; out: string; err: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'demo/flights/main.ts', ...args], { cwd: ROOT, encoding: 'utf8' })
  return { code: r.status, out: r.stdout, err: r.stderr }
}

describe('the flights demo (npm start)', () => {
  it('--help prints the options and exits 0; an unknown option prints them and exits 2', () => {
    const help = demo('--help')
    assert.equal(help.code, 0)
    assert.match(help.out, /^usage: npm start -- \[--limit N\] \[--partitions N\] \[--state-dir DIR\] \[--fresh\] \[--ui \[--port N\]\] \[--rate N\]/)
    const bad = demo('--bogus')
    assert.equal(bad.code, 2)
    assert.match(bad.err, /Unknown option '--bogus'[\s\S]*usage: npm start/)
  })

  it('a second run after a finished one says what the first fed, loads nothing, and shows no earlier progress lines', () => {
    const stateDir = join(mkdtempSync(join(tmpdir(), 'punctual-demo-')), 'state')
    const first = demo('--limit', '20000', '--state-dir', stateDir)
    assert.equal(first.code, 0, first.err)
    assert.match(first.out, /starting fresh/)
    assert.match(first.out, /loaded 20,000 flights/)
    assert.match(first.out, /done: 20,000 flights in /)
    const second = demo('--limit', '20000', '--state-dir', stateDir)
    assert.equal(second.code, 0, second.err)
    assert.match(second.out, /an earlier run fed all 20,000 flights; finishing what it left and showing the results/)
    assert.doesNotMatch(second.out, /loaded /, 'the flights are not read again')
    assert.doesNotMatch(second.out, /\[-\d+ s\]/, 'no progress line with a negative time')
    assert.match(second.out, /done: 0 flights in this run/)
  })

  it('--ui serves the live page while it runs, prints its address, and keeps it up until Ctrl-C', async () => {
    const stateDir = join(mkdtempSync(join(tmpdir(), 'punctual-demo-ui-')), 'state')
    const child = spawn(process.execPath, ['--import', 'tsx', 'demo/flights/main.ts', '--limit', '20000', '--state-dir', stateDir, '--ui', '--port', '0', '--rate', '50000'], { cwd: ROOT })
    let out = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d))
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
    const waitFor = async (pattern: RegExp): Promise<RegExpMatchArray> => {
      for (;;) {
        const m = pattern.exec(out)
        if (m !== null) return m
        if (child.exitCode !== null) throw new Error(`the demo exited (${child.exitCode}) before printing ${pattern}:\n${out}`)
        await new Promise((r) => setTimeout(r, 50))
      }
    }
    try {
      const [, page] = await waitFor(/live page: (http:\/\/127\.0\.0\.1:\d+\/)/)
      await waitFor(/every flight is processed; the live page stays up/)
      const res = await fetch(`${page}metrics.json`)
      const metrics = (await res.json()) as { applicationId: string; processedRecords: number; tasks: unknown[] }
      assert.equal(metrics.applicationId, 'flights-demo')
      assert.equal(metrics.processedRecords, 20_000)
      assert.equal(metrics.tasks.length, 4)
      assert.match(await (await fetch(page as string)).text(), /<title>punctual<\/title>/)
      child.kill('SIGINT')
      assert.equal(await exited, 0)
      assert.match(out, /done: 20,000 flights in /)
    } finally {
      child.kill('SIGKILL')
    }
  })

  it('--ui: the live page answers while the flights load (they load on a worker thread)', async () => {
    const stateDir = join(mkdtempSync(join(tmpdir(), 'punctual-demo-load-')), 'state')
    // All 3,000,000 flights: seconds of decoding and sorting, which the page's answer must not wait for.
    const child = spawn(process.execPath, ['--import', 'tsx', 'demo/flights/main.ts', '--state-dir', stateDir, '--ui', '--port', '0'], { cwd: ROOT })
    let out = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d))
    try {
      for (;;) {
        if (/starting fresh/.test(out)) break
        if (child.exitCode !== null) throw new Error(`the demo exited (${child.exitCode}):\n${out}`)
        await new Promise((r) => setTimeout(r, 20))
      }
      const page = /live page: (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out)?.[1] as string
      const metrics = (await (await fetch(`${page}metrics.json`)).json()) as { state: string }
      assert.equal(metrics.state, 'RUNNING')
      assert.doesNotMatch(out, /loaded /, 'answered before the flights were loaded')
    } finally {
      child.kill('SIGKILL')
    }
  })
})

describe('the delays-by-state demo (npm run demo:states)', () => {
  it('joins every flight with its airport’s state, counts weeks once each, and queries the stores at the end', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'demo/flights/states.ts', '--limit', '120000'], { cwd: ROOT, encoding: 'utf8' })
    assert.equal(r.status, 0, r.stderr)
    assert.match(r.stdout, /interactive queries: airport-states holds 3,376 airports \(ORD is in IL\); state-delays holds \d+ open \(state, week\) windows/)
    // The first 120,000 flights leave from airports of the table, 1-9 January 2001: the week from 28 December closes.
    assert.match(r.stdout, /\n {2}2000-12-28 {2}[A-Z]{2} +[\d,]+ +[\d.]+ min +\d+%\n/)
    const done = /done: 120,000 flights in [\d.]+ s · ([\d,]+) in (\d+) closed weeks, ([\d,]+) in weeks still open, 0 from airports not in the table · 0 late flights dropped · 0 results emitted twice/.exec(r.stdout)
    assert.ok(done !== null, r.stdout)
    const n = (s: string): number => Number(s.replace(/,/g, ''))
    assert.equal(n(done[1]!) + n(done[3]!), 120_000, 'every flight is in a closed or an open week')
  })
})
