import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { runSmallHeapChild } from '../helpers/small-heap-child.js'

const APP = fileURLToPath(new URL('../fixtures/keyed-on-disk-app.ts', import.meta.url))
/**
 * The heap the child is given (MB: `--max-old-space-size`, which it dies past, so finishing is the
 * proof), and its value state: keys and characters per value. */
const HEAP_MB = 64
const KEYS = 50_000
const CHARS = 6_000

describe('keyed state on disk (embedded runtime)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'punctual-keyed-on-disk-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  it(`a process given a ${HEAP_MB} MB heap keeps a value state of ${KEYS.toLocaleString('en')} keys of ${CHARS.toLocaleString('en')} characters (over 4x its heap), and reads every one back right`, async () => {
    assert.ok(KEYS * CHARS >= 4 * HEAP_MB * 1024 * 1024, 'the state holds at least 4x the heap')
    const { code, report, stderr } = await runSmallHeapChild(APP, HEAP_MB, [join(dir, 'state'), String(KEYS), String(CHARS)])
    assert.equal(code, 0, `the child ended with ${code}: ${JSON.stringify(report)}\n${stderr}`)
    assert.equal(report?.wrong, 0, `first wrong: ${report?.firstWrong}`)
    assert.equal(report?.results, KEYS, 'every key read back in the second round')
  })
})
