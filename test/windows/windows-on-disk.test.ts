import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { runSmallHeapChild } from '../helpers/small-heap-child.js'

const APP = fileURLToPath(new URL('../fixtures/windows-on-disk-app.ts', import.meta.url))
/**
 * The heap the child is given (MB: `--max-old-space-size`, which it dies past, so finishing is the
 * proof), and its window's cells: keys and characters per aggregate. A closing window makes garbage
 * fast (every cell decoded, passed on, dropped): with 64 MB, Node 24's collector sometimes fell behind
 * it, though the live heap stayed near 30 MB.
 */
const HEAP_MB = 96
const KEYS = 70_000
const CHARS = 6_000

describe('window store on disk (embedded runtime)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'punctual-windows-on-disk-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  it(`a process given a ${HEAP_MB} MB heap aggregates ${KEYS.toLocaleString('en')} keys of ${CHARS.toLocaleString('en')} characters in one window (over 4x its heap), and every final result is right`, async () => {
    assert.ok(KEYS * CHARS >= 4 * HEAP_MB * 1024 * 1024, 'the window holds at least 4x the heap')
    const { code, report, stderr } = await runSmallHeapChild(APP, HEAP_MB, [join(dir, 'state'), String(KEYS), String(CHARS)])
    assert.equal(code, 0, `the child ended with ${code}: ${JSON.stringify(report)}\n${stderr}`)
    assert.equal(report?.wrong, 0, `first wrong: ${report?.firstWrong}`)
    assert.equal(report?.results, KEYS, 'one final result per key')
  })
})
