import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { main } from '../../src/cli/main.js'
import type { EmbeddedRuntime } from '../../src/index.js'

const APP = fileURLToPath(new URL('../fixtures/counter-app.ts', import.meta.url))
const fixture = (name: string): string => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url))
const FAILING_START = fixture('failing-start-app.ts')
const BACKLOG_APP = fixture('backlog-app.ts')
const UI_APP = fixture('ui-app.ts')
const THROWING_TOPOLOGY = fixture('throwing-topology-app.ts')
const SOURCE_CLI = fileURLToPath(new URL('./punctual-source.ts', import.meta.url))
const ROOT = fileURLToPath(new URL('../..', import.meta.url))

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

  it('refuses a module without the app shape, naming what it needs, in one line', async () => {
    const notAnApp = fileURLToPath(new URL('../helpers/collect.ts', import.meta.url))
    const r = await cli('run', notAnApp, '--state-dir', mkdtempSync(join(tmpdir(), 'punctual-run-')))
    assert.equal(r.code, 2)
    assert.deepEqual(r.err.length, 1, r.err.join('\n'))
    assert.match(r.err[0] ?? '', /must export default \{ applicationId, topology\(\), config\?, start\? \}$/)
  })

  it("stops the runtime, lets go of the signals and exits 1 when the app's start fails", async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'punctual-run-')), 'state')
    const { seen } = (await import('./fixtures/failing-start-app.js')) as { seen: { runtime?: EmbeddedRuntime } }
    const listeners = [process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')]
    const r = await cli('run', FAILING_START, '--state-dir', dir)
    assert.equal(r.code, 1, r.err.join('\n'))
    assert.match(r.err.join('\n'), /failing-start stopped: its start failed: TypeError: the feed is not there\n\s+at .*failing-start-app\.ts/)
    assert.equal(seen.runtime?.state, 'NOT_RUNNING', 'its punctuations no longer fire')
    assert.deepEqual([process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')], listeners, 'the next SIGINT or SIGTERM is not swallowed')
    assert.equal(existsSync(join(dir, '.lock')), false, 'the state directory is released')
  })

  it('on a signal, stops after committing what was processed, leaving the backlog to the next run', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'punctual-run-')), 'state')
    const { BACKLOG, counted, feed } = (await import('./fixtures/backlog-app.js')) as { BACKLOG: number; counted: { records: number }; feed: { records: boolean } }
    const first = await cli('run', BACKLOG_APP, '--state-dir', dir)
    assert.equal(first.code, 0, first.err.join('\n'))
    assert.match(first.err.at(-1) ?? '', /backlog-app stopped \(SIGINT\); state kept in /)
    const inFirst = counted.records
    assert.ok(inFirst > 0 && inFirst < BACKLOG, `the first run stopped without draining: ${inFirst} of ${BACKLOG} records counted`)
    feed.records = false
    const second = await cli('run', BACKLOG_APP, '--state-dir', dir)
    assert.equal(second.code, 0, second.err.join('\n'))
    assert.match(second.err.at(-1) ?? '', /backlog-app stopped \(input ended\)/)
    assert.equal(counted.records, BACKLOG, 'the second run counted the rest: nothing lost, nothing counted twice')
  })

  it('without start, runs in its own process until SIGTERM, then commits and exits 0', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'punctual-run-')), 'state')
    const child = spawn(process.execPath, ['--import', 'tsx', SOURCE_CLI, 'run', fixture('idle-app.ts'), '--state-dir', dir], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] })
    let err = ''
    let signalled = false
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      err += d
      if (!signalled && /idle-app started with fresh state/.test(err)) signalled = child.kill('SIGTERM')
    })
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
    assert.equal(code, 0, err)
    assert.match(err, /idle-app stopped \(SIGTERM\); state kept in /)
    assert.equal(existsSync(join(dir, '.lock')), false)
  })

  it('--ui serves the live page while the app runs and prints its address', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'punctual-run-')), 'state')
    const { served } = (await import('./fixtures/ui-app.js')) as { served: { page?: string; metrics?: { applicationId: string; processedRecords: number } } }
    const r = await cli('run', UI_APP, '--state-dir', dir, '--ui', '--port', '0')
    assert.equal(r.code, 0, r.err.join('\n'))
    assert.match(r.err.join('\n'), /punctual: live page at http:\/\/127\.0\.0\.1:\d+\/ \(Prometheus metrics at http:\/\/127\.0\.0\.1:\d+\/metrics\)/)
    assert.match(served.page ?? '', /<title>punctual<\/title>/)
    assert.deepEqual(served.metrics && { applicationId: served.metrics.applicationId, processedRecords: served.metrics.processedRecords }, { applicationId: 'ui-app', processedRecords: 1 })
    const taken = createServer()
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
    try {
      const port = (taken.address() as AddressInfo).port
      const busy = await cli('run', UI_APP, '--state-dir', dir, '--ui', '--port', String(port))
      assert.equal(busy.code, 1)
      assert.match(busy.err.at(-1) ?? '', new RegExp(`ui-app stopped on an error: metrics: cannot serve metrics on 127\\.0\\.0\\.1:${port}: .*EADDRINUSE`))
    } finally {
      taken.close()
    }
    const portWithoutUi = await cli('run', UI_APP, '--state-dir', dir, '--port', '0')
    assert.equal(portWithoutUi.code, 2)
    assert.match(portWithoutUi.err.join('\n'), /--port is the live page's port; give --ui with it/)
  })
})

describe('punctual: how errors are printed', () => {
  it("prints the stack of an error in the user's code, and punctual's own errors in one line", async () => {
    for (const command of ['run', 'topology']) {
      const r = await cli(command, THROWING_TOPOLOGY, ...(command === 'run' ? ['--state-dir', join(mkdtempSync(join(tmpdir(), 'punctual-run-')), 'state')] : []))
      assert.equal(r.code, 2, command)
      assert.match(r.err.join('\n'), /^TypeError: .*\n\s+at buildTopology .*throwing-topology-app\.ts/, command)
    }
    const failed = await cli('run', fixture('throwing-processor-app.ts'), '--state-dir', join(mkdtempSync(join(tmpdir(), 'punctual-run-')), 'state'))
    assert.equal(failed.code, 1)
    assert.match(failed.err.join('\n'), /throwing-processor stopped on an error: task 0_0: processing error .*\ncaused by TypeError: .*\n\s+at describeOrder .*throwing-processor-app\.ts/)
    const file = join(mkdtempSync(join(tmpdir(), 'punctual-run-')), 'file')
    writeFileSync(file, 'x')
    const own = await cli('run', APP, '--state-dir', file)
    assert.equal(own.code, 1)
    assert.deepEqual(own.err, [`punctual: counter-app cannot start: state directory ${file} is a file, not a directory; give stateDir a new or empty directory`])
  })

  it('ends quietly when the reader of its output goes away (punctual inspect DIR | head)', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'punctual-run-')), 'state')
    assert.equal((await cli('run', APP, '--state-dir', dir)).code, 0)
    const child = spawn(process.execPath, ['--import', 'tsx', SOURCE_CLI, 'inspect', dir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    // Closed before the child writes a line: its first write meets a pipe with no reader.
    child.stdout.destroy()
    let err = ''
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d))
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
    assert.equal(err, '')
    assert.equal(code, 0)
  })
})

describe('punctual run APP --kafka BOOTSTRAP', () => {
  it('needs --state-dir or --kafka, and says so', async () => {
    const r = await cli('run', APP)
    assert.equal(r.code, 2)
    assert.match(r.err.join('\n'), /--state-dir <dir> is required \(or --kafka <bootstrap> to run on Kafka\)/)
  })

  it('refuses a guarantee it does not know before connecting, naming the value', async () => {
    const r = await cli('run', APP, '--kafka', 'localhost:1', '--guarantee', 'exactly_once')
    assert.equal(r.code, 2)
    assert.match(r.err.join('\n'), /processingGuarantee must be 'at_least_once' or 'exactly_once_v2', got "exactly_once"/)
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
