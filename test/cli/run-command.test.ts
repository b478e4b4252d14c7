import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { main } from '../../src/cli/main.js'

const APP = fileURLToPath(new URL('../fixtures/counter-app.ts', import.meta.url))

async function cli(...args: string[]): Promise<{ code: number; err: string[] }> {
  const err: string[] = []
  const code = await main(['node', 'punctual', ...args], { out: () => {}, err: (l) => err.push(l) })
  return { code, err }
}

describe('punctual run APP --state-dir DIR', () => {
  it('runs the app, keeps its state, and resumes from it (and says so)', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'punctual-run-')), 'state')
    const { printed } = (await import('../fixtures/counter-app.js')) as { printed: string[] }
    const first = await cli('run', APP, '--state-dir', dir)
    assert.equal(first.code, 0, first.err.join('\n'))
    assert.match(first.err[0] ?? '', /counter-app started with fresh state in /)
    assert.match(first.err.at(-1) ?? '', /counter-app stopped \(input ended\); state kept in /)
    const second = await cli('run', APP, '--state-dir', dir)
    assert.match(second.err[0] ?? '', /counter-app resumed from its state in /)
    assert.deepEqual(printed, ['a=1', 'b=1', 'a=2', 'a=3', 'b=2', 'a=4'])
  })

  it('refuses a module without the app shape, naming what it needs', async () => {
    const notAnApp = fileURLToPath(new URL('../helpers/collect.ts', import.meta.url))
    await assert.rejects(cli('run', notAnApp, '--state-dir', mkdtempSync(join(tmpdir(), 'punctual-run-'))), /must export default \{ applicationId, topology\(\), config\?, start\? \}/)
  })
})

describe('punctual run APP --kafka BOOTSTRAP', () => {
  it('needs --state-dir or --kafka, and says so', async () => {
    const r = await cli('run', APP)
    assert.equal(r.code, 2)
    assert.match(r.err.join('\n'), /--state-dir <dir> is required \(or --kafka <bootstrap> to run on Kafka\)/)
  })

  it('refuses a guarantee it does not know before connecting, naming the value', async () => {
    await assert.rejects(cli('run', APP, '--kafka', 'localhost:1', '--guarantee', 'exactly_once'), /processingGuarantee must be 'at_least_once' or 'exactly_once_v2', got "exactly_once"/)
  })
})

describe('punctual --version and --help', () => {
  it('prints the version of package.json', async () => {
    const out: string[] = []
    const code = await main(['node', 'punctual', '--version'], { out: (l) => out.push(l), err: () => {} })
    assert.equal(code, 0)
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string; files: string[] }
    assert.deepEqual(out, [pkg.version])
  })

  it('names in its help only files that ship in the package', async () => {
    const out: string[] = []
    await main(['node', 'punctual', 'scenario', '--help'], { out: (l) => out.push(l), err: (l) => out.push(l) })
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { files: string[] }
    const named = out.join('\n').match(/[\w-]+\/[\w./-]+/g) ?? []
    assert.ok(named.length > 0, 'the help names the format file')
    for (const path of named) assert.ok(pkg.files.some((f) => path === f || path.startsWith(f + '/')), `${path} is not in package.json's files`)
  })
})
