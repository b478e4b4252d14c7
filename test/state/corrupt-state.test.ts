import assert from 'node:assert/strict'
import { mkdtempSync, statSync, truncateSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { open } from 'lmdb'
import { EmbeddedRuntime, PunctualError, silentLogger } from '../../src/index.js'
import { countingTopology } from '../helpers/counting.js'
import type { Topology } from '../../src/index.js'

const fresh = (): string => join(mkdtempSync(join(tmpdir(), 'punctual-corrupt-')), 'app')
const stateDirError = (pattern: RegExp) => (e: unknown) => e instanceof PunctualError && e.code === 'STATE_DIR' && pattern.test(e.message)

/** Runs the counting app once over `keys` distinct keys, leaving committed state (and output) behind. */
async function runOnce(dir: string, keys: number): Promise<void> {
  const rt = new EmbeddedRuntime(countingTopology('in'), { applicationId: 'counts', stateDir: dir, logger: silentLogger })
  await rt.start()
  const p = rt.producer('in')
  for (let i = 0; i < keys; i++) p.send(`key-${i}`, 'v', i)
  await rt.stop()
}

const restart = (dir: string) => () => new EmbeddedRuntime(countingTopology('in'), { applicationId: 'counts', stateDir: dir, logger: silentLogger }).start()

describe('a damaged state directory is refused, never reset', () => {
  it('a truncated checkpoint file: a clear error before anything is read (no crash)', async () => {
    const dir = fresh()
    await runOnce(dir, 20_000)
    const file = join(dir, 'checkpoints', 'data.mdb')
    assert.ok(statSync(file).size > 256 * 1024, 'the run wrote enough for truncation to matter')
    truncateSync(file, 64 * 1024)
    await assert.rejects(restart(dir), stateDirError(/checkpoint store cannot be opened \(data\.mdb is truncated: 65536 bytes, its last commit needs \d+\)/))
  })

  it('a corrupt task checkpoint', async () => {
    const dir = fresh()
    await runOnce(dir, 3)
    const env = open({ path: join(dir, 'checkpoints'), compression: false })
    await env.openDB({ name: 'tasks' }).put('0_0', { streamTime: 'yesterday', lastFires: {}, positions: {} })
    await env.close()
    await assert.rejects(restart(dir), stateDirError(/checkpoint of task 0_0 is corrupt/))
  })

  /** Replaces the one chunk of `topic` in the durable log with bytes that do not decode. */
  async function corruptChunk(dir: string, topic: string): Promise<void> {
    const env = open({ path: join(dir, 'checkpoints'), compression: false })
    const log = env.openDB<Buffer, Array<string | number>>({ name: 'log-records', encoding: 'binary' })
    const keys = [...log.getKeys()].filter((k) => k[0] === topic)
    assert.equal(keys.length, 1)
    await log.put(keys[0]!, Buffer.from([1, 0, 0, 0, 9, 9, 9]))
    await env.close()
  }

  it('a corrupt chunk of input not yet processed: refused at start', async () => {
    const dir = fresh()
    const rt = new EmbeddedRuntime(countingTopology('in'), { applicationId: 'counts', stateDir: dir, logger: silentLogger })
    await rt.start()
    rt.producer('in').send('k', 'v', 1)
    await rt.stop({ drain: false }) // committed, not processed
    await corruptChunk(dir, 'in')
    await assert.rejects(restart(dir), stateDirError(/log is corrupt at \["in",0,0,1,\d+\]/))
  })

  it('a corrupt chunk of an output topic: the runtime stops with the error when a reader reaches it', async () => {
    const dir = fresh()
    const withOutput = (): Topology => countingTopology('in').addSink('copy', 'other', {}, 'src')
    const a = new EmbeddedRuntime(withOutput(), { applicationId: 'counts', stateDir: dir, logger: silentLogger })
    await a.start()
    a.producer('in').send('k', 'v', 1)
    await a.stop()
    await corruptChunk(dir, 'other')
    const b = new EmbeddedRuntime(withOutput(), { applicationId: 'counts', stateDir: dir, logger: silentLogger })
    const seen: string[] = []
    const failed = new Promise<Error>((resolve) => b.on('error', resolve))
    b.subscribe<string, string>('other', (r) => seen.push(r.value!))
    await b.start()
    assert.match((await failed).message, /log is corrupt at \["other",0,0,1,\d+\]/)
    assert.deepEqual(seen, [])
    assert.equal(b.state, 'ERROR')
  })
})
