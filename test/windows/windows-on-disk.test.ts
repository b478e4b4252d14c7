import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'

const APP = fileURLToPath(new URL('../fixtures/windows-on-disk-app.ts', import.meta.url))
/** The heap the child is given (MB), and its window's cells: keys and characters per aggregate. */
const HEAP_MB = 64
const KEYS = 100_000
const CHARS = 3_000

interface Report {
  readonly results?: number
  readonly wrong?: number
  readonly firstWrong?: string
  readonly peakHeap?: number
  readonly error?: string
}

function runChild(stateDir: string): Promise<{ code: number | null; report: Report | undefined; stderr: string }> {
  const child = spawn(process.execPath, [`--max-old-space-size=${HEAP_MB}`, '--import', 'tsx', APP, stateDir, String(KEYS), String(CHARS)], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
  return new Promise((resolve) => {
    child.on('exit', (code) => {
      const line = stdout.trim().split('\n').pop()
      resolve({ code, report: line === undefined || line === '' ? undefined : (JSON.parse(line) as Report), stderr: stderr.slice(-2000) })
    })
  })
}

describe('window store on disk (embedded runtime)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'punctual-windows-on-disk-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  it(`a process given a ${HEAP_MB} MB heap aggregates ${KEYS.toLocaleString('en')} keys of ${CHARS.toLocaleString('en')} characters in one window (over 4x its heap), and every final result is right`, async () => {
    assert.ok(KEYS * CHARS >= 4 * HEAP_MB * 1024 * 1024, 'the window holds at least 4x the heap')
    const { code, report, stderr } = await runChild(join(dir, 'state'))
    assert.equal(code, 0, `the child ended with ${code}: ${JSON.stringify(report)}\n${stderr}`)
    assert.equal(report?.wrong, 0, `first wrong: ${report?.firstWrong}`)
    assert.equal(report?.results, KEYS, 'one final result per key')
    assert.ok((report?.peakHeap ?? Infinity) <= HEAP_MB * 1024 * 1024)
  })
})
