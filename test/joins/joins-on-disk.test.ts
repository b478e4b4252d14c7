import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { runSmallHeapChild } from '../helpers/small-heap-child.js'

const APP = fileURLToPath(new URL('../fixtures/joins-on-disk-app.ts', import.meta.url))
/**
 * The heap the child is given (MB: `--max-old-space-size`, which it dies past, so finishing is the
 * proof), and the left records waiting for their partners: keys and characters per value.
 */
const HEAP_MB = 64
const KEYS = 50_000
const CHARS = 6_000

describe('join stores on disk (embedded runtime)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'punctual-joins-on-disk-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  it(`a process given a ${HEAP_MB} MB heap keeps ${KEYS.toLocaleString('en')} left records of ${CHARS.toLocaleString('en')} characters waiting in an outer join's window and outer-join stores (each over 4x its heap), and joins every one right`, async () => {
    assert.ok(KEYS * CHARS >= 4 * HEAP_MB * 1024 * 1024, 'each store holds at least 4x the heap')
    const { code, report, stderr } = await runSmallHeapChild(APP, HEAP_MB, [join(dir, 'state'), String(KEYS), String(CHARS)])
    assert.equal(code, 0, `the child ended with ${code}: ${JSON.stringify(report)}\n${stderr}`)
    assert.equal(report?.wrong, 0, `first wrong: ${report?.firstWrong}`)
    assert.equal(report?.results, KEYS, 'one joined result per key')
  })
})
