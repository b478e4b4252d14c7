import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { freshStateDir } from '../helpers/durable.js'

const app = fileURLToPath(new URL('../fixtures/reopen-on-error-app.ts', import.meta.url))

describe('a durable run that fails', () => {
  it("has released its state directory when it reports the failure: an 'error' listener can open it again at once", () => {
    // In a process of its own: were lmdb's writer still busy with the old store when the listener opens
    // the directory again, the new store's recovery would wait for the writer, and the writer for this
    // thread, for ever. The kill is only there so that such a hang fails this test instead of the run.
    const r = spawnSync(process.execPath, ['--import', 'tsx', app, freshStateDir()], { encoding: 'utf8', timeout: 300_000, killSignal: 'SIGKILL' })
    assert.equal(r.signal, null, `the app hung and was killed; its output: ${r.stdout}${r.stderr}`)
    assert.equal(r.status, 0, r.stderr)
    assert.match(r.stdout, /reopened and stopped/)
  })
})
