import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { BufferConfig, EmbeddedRuntime, PunctualError, Serdes, SessionWindows, silentLogger, SlidingWindows, StreamsBuilder, Suppressed, TimeWindows, Topology } from '../../src/index.js'
import type { Windowed } from '../../src/index.js'
import { TopologyTestDriver } from '../../src/testing/index.js'
import { countingTopology } from '../helpers/counting.js'
import { STATE_FORMAT_VERSION, StateDirectory } from '../../src/state/state-directory.js'

const fresh = (): string => join(mkdtempSync(join(tmpdir(), 'punctual-state-')), 'app')
const isCode = (code: string) => (e: unknown) => e instanceof PunctualError && e.code === code

describe('state directory', () => {
  it('records the application id, format version and a process id, and is reopened by the same application with the same process id', () => {
    const dir = fresh()
    const first = StateDirectory.open(dir, 'orders')
    first.release()
    const meta = JSON.parse(readFileSync(join(dir, 'punctual.json'), 'utf8')) as { processId: string }
    assert.match(meta.processId, /^[0-9a-f-]{36}$/)
    assert.deepEqual(meta, { format: STATE_FORMAT_VERSION, applicationId: 'orders', processId: first.processId })
    const again = StateDirectory.open(dir, 'orders')
    again.release()
    assert.equal(again.processId, first.processId)
    // A directory of an earlier layout, without one, gets one at its next open, kept from then on.
    writeFileSync(join(dir, 'punctual.json'), JSON.stringify({ format: STATE_FORMAT_VERSION, applicationId: 'orders' }))
    const older = StateDirectory.open(dir, 'orders')
    older.release()
    assert.notEqual(older.processId, first.processId)
    const kept = StateDirectory.open(dir, 'orders')
    kept.release()
    assert.equal(kept.processId, older.processId)
  })

  it('refuses a non-empty directory that is not a punctual state directory, naming what it holds', () => {
    const dir = fresh()
    mkdirSync(dir)
    writeFileSync(join(dir, 'package.json'), '{}')
    assert.throws(() => StateDirectory.open(dir, 'orders'), (e: unknown) => isCode('STATE_DIR')(e) && /is not empty and is not a punctual state directory .*package\.json/.test((e as Error).message))
    assert.deepEqual(readdirSync(dir), ['package.json'], 'nothing was written into it')
  })

  it('adopts an empty directory, and one holding only a stale lock', () => {
    const dir = fresh()
    mkdirSync(dir)
    StateDirectory.open(dir, 'orders').release()
    const other = fresh()
    mkdirSync(other)
    writeFileSync(join(other, '.lock'), '999999999')
    StateDirectory.open(other, 'orders').release()
  })

  it('says so when the state directory path is a file', () => {
    const file = fresh()
    writeFileSync(file, 'x')
    assert.throws(() => StateDirectory.open(file, 'orders'), (e: unknown) => isCode('STATE_DIR')(e) && /is a file, not a directory/.test((e as Error).message))
  })

  it('refuses a second holder while the first runs, saying when the first is in this same process', () => {
    const dir = fresh()
    const first = StateDirectory.open(dir, 'orders')
    assert.throws(
      () => StateDirectory.open(dir, 'orders'),
      (e: unknown) => isCode('STATE_DIR_LOCKED')(e) && (e as Error).message.includes(`is in use by another runtime in this same process (pid ${process.pid})`),
    )
    first.release()
    StateDirectory.open(dir, 'orders').release()
  })

  it('refuses a directory another live process holds, naming it', () => {
    const dir = fresh()
    StateDirectory.open(dir, 'orders').release()
    // The test runner that started this process is alive while it runs.
    writeFileSync(join(dir, '.lock'), String(process.ppid))
    assert.throws(() => StateDirectory.open(dir, 'orders'), (e: unknown) => isCode('STATE_DIR_LOCKED')(e) && (e as Error).message.includes(`is in use by process ${process.ppid};`))
  })

  it('takes over the lock of a process that no longer runs', () => {
    const dir = fresh()
    StateDirectory.open(dir, 'orders').release()
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString()
    writeFileSync(join(dir, '.lock'), dead)
    StateDirectory.open(dir, 'orders').release()
    assert.equal(existsSync(join(dir, '.lock')), false)
  })

  it("refuses another application's directory", () => {
    const dir = fresh()
    StateDirectory.open(dir, 'orders').release()
    assert.throws(() => StateDirectory.open(dir, 'payments'), (e: unknown) => isCode('STATE_DIR')(e) && /belongs to application "orders", not "payments"/.test((e as Error).message))
  })

  it('refuses a corrupt or truncated metadata file instead of resetting', () => {
    const dir = fresh()
    StateDirectory.open(dir, 'orders').release()
    writeFileSync(join(dir, 'punctual.json'), '{"format": 1, "applic')
    assert.throws(() => StateDirectory.open(dir, 'orders'), (e: unknown) => isCode('STATE_DIR')(e) && /punctual.json is corrupt/.test((e as Error).message))
    assert.equal(existsSync(join(dir, '.lock')), false, 'a refused open leaves no lock behind')
  })

  it('refuses another format version', () => {
    const dir = fresh()
    StateDirectory.open(dir, 'orders').release()
    writeFileSync(join(dir, 'punctual.json'), JSON.stringify({ format: 99, applicationId: 'orders' }))
    assert.throws(() => StateDirectory.open(dir, 'orders'), new RegExp(`has format version 99; this punctual reads version ${STATE_FORMAT_VERSION}`))
  })

  it('the embedded runtime holds its state directory from start to stop', async () => {
    const dir = fresh()
    const topology = () => new Topology().addSource('s', 'in').addProcessor('p', () => ({ process() {} }), 's')
    const a = new EmbeddedRuntime(topology(), { applicationId: 'orders', stateDir: dir, logger: silentLogger })
    await a.start()
    const b = new EmbeddedRuntime(topology(), { applicationId: 'orders', stateDir: dir, logger: silentLogger })
    await assert.rejects(b.start(), isCode('STATE_DIR_LOCKED'))
    await a.stop()
    await b.start()
    await b.stop()
  })
})

describe('key-value stores survive a restart with the same state directory', () => {
  const counting = (seen: Array<[string, number]>) => countingTopology('in', (k, n) => void seen.push([k, n]))

  it('restores what the last commit wrote, deletions included', async () => {
    const dir = fresh()
    const first: Array<[string, number]> = []
    const a = new EmbeddedRuntime(counting(first), { applicationId: 'counts', stateDir: dir, logger: silentLogger })
    await a.start()
    const p1 = a.producer('in')
    for (const k of ['x', 'x', 'y', 'z']) p1.send(k, 'v', 1)
    p1.send('z', 'forget', 2)
    await a.stop()
    const second: Array<[string, number]> = []
    const b = new EmbeddedRuntime(counting(second), { applicationId: 'counts', stateDir: dir, logger: silentLogger })
    await b.start()
    const p2 = b.producer('in')
    for (const k of ['x', 'y', 'z']) p2.send(k, 'v', 3)
    await b.stop()
    assert.deepEqual(second, [
      ['x', 3],
      ['y', 2],
      ['z', 1],
    ])
  })

  it('the test driver carries store contents in its checkpoint', () => {
    const seen: Array<[string, number]> = []
    const d1 = new TopologyTestDriver(counting(seen))
    d1.createInputTopic('in', Serdes.String(), Serdes.String()).pipeInput('x', 'v', 1)
    const d2 = new TopologyTestDriver(counting(seen), { checkpoint: d1.checkpoint() })
    d2.createInputTopic('in', Serdes.String(), Serdes.String()).pipeInput('x', 'v', 2)
    assert.deepEqual(seen, [
      ['x', 1],
      ['x', 2],
    ])
  })
})

describe('suppression buffers survive a restart with the same state directory', () => {
  const app = (out: string[]) => {
    const b = new StreamsBuilder()
    b.table<string, string>('in')
      .suppress(Suppressed.untilTimeLimit<string, string>(10, BufferConfig.unbounded()).withName('hold'))
      .toStream()
      .addStatelessNode(undefined, 'OUT', (r) => out.push(`${r.key}=${r.value}@${r.timestamp}`))
    return b.build()
  }
  const run = async (dir: string, records: Array<[string, string, number]>): Promise<string[]> => {
    const out: string[] = []
    const rt = new EmbeddedRuntime(app(out), { applicationId: 'hold', stateDir: dir, logger: silentLogger })
    await rt.start()
    const p = rt.producer('in')
    for (const [k, v, ts] of records) p.send(k, v, ts)
    await rt.stop()
    return out
  }

  it('buffered entries come back and are emitted when due', async () => {
    const dir = fresh()
    assert.deepEqual(await run(dir, [['A', 'x', 1], ['B', 'y', 2]]), [])
    assert.deepEqual(await run(dir, [['C', 'z', 20]]), ['A=x@1', 'B=y@2'])
  })

  it("the suppression's observed stream time comes back too", async () => {
    const dir = fresh()
    assert.deepEqual(await run(dir, [['A', 'x', 25]]), [])
    // Stream time 25 restored: B at 5 has waited 10 already.
    assert.deepEqual(await run(dir, [['B', 'y', 5]]), ['B=y@5'])
  })
})

describe('window aggregates survive a restart with the same state directory', () => {
  it('counts continue where they stopped, and the final result counts both runs', async () => {
    const dir = fresh()
    const run = async (records: Array<[string, number]>): Promise<string[]> => {
      const out: string[] = []
      const b = new StreamsBuilder()
      b.stream('in')
        .groupByKey()
        .windowedBy(TimeWindows.ofSizeAndGrace(10, 0))
        .count()
        .suppress(Suppressed.untilWindowCloses<Windowed<string>, number>(BufferConfig.unbounded()))
        .toStream()
        .addStatelessNode(undefined, 'OUT', (r) => out.push(`${r.key.key}@${r.key.window.start}=${r.value}`))
      const rt = new EmbeddedRuntime(b.build(), { applicationId: 'windows', stateDir: dir, logger: silentLogger })
      await rt.start()
      const p = rt.producer('in')
      for (const [k, ts] of records) p.send(k, 'v', ts)
      await rt.stop()
      return out
    }
    assert.deepEqual(await run([['k', 1], ['k', 2]]), [])
    assert.deepEqual(await run([['k', 5], ['k', 20]]), ['k@0=3'])
  })
})

describe('session and sliding windows survive a restart with the same state directory', () => {
  const run = async (dir: string, windows: SessionWindows | SlidingWindows, records: number[]): Promise<string[]> => {
    const out: string[] = []
    const b = new StreamsBuilder()
    const grouped = b.stream('in').groupByKey()
    const table = windows instanceof SessionWindows ? grouped.windowedBy(windows).count() : grouped.windowedBy(windows).count()
    table.toStream().addStatelessNode(undefined, 'OUT', (r) => out.push(`${r.key.key}[${r.key.window.start},${r.key.window.end}]=${r.value}@${r.timestamp}`))
    const rt = new EmbeddedRuntime(b.build(), { applicationId: 'windows', stateDir: dir, logger: silentLogger })
    await rt.start()
    const p = rt.producer('in')
    for (const ts of records) p.send('k', 'v', ts)
    await rt.stop()
    return out
  }

  it('a session continues: the restored session merges with the new record', async () => {
    const dir = fresh()
    const sessions = SessionWindows.ofInactivityGapAndGrace(5, 100)
    assert.deepEqual(await run(dir, sessions, [0, 4]), ['k[0,0]=1@0', 'k[0,0]=null@0', 'k[0,4]=2@4'])
    assert.deepEqual(await run(dir, sessions, [8]), ['k[0,4]=null@4', 'k[0,8]=3@8'])
  })

  it('sliding windows continue: the new record finds the restored windows', async () => {
    const dir = fresh()
    const sliding = SlidingWindows.ofTimeDifferenceAndGrace(10, 100)
    assert.deepEqual(await run(dir, sliding, [10]), ['k[0,10]=1@10'])
    assert.deepEqual(await run(dir, sliding, [15]), ['k[11,21]=1@15', 'k[5,15]=2@15'])
  })
})

describe('durable commits stay small', () => {
  it('commit after commitMaxRecords records, also while draining on stop', async () => {
    const topology = new Topology().addSource('s', 'in').addProcessor('p', () => ({ process() {} }), 's')
    const rt = new EmbeddedRuntime(topology, { applicationId: 'small-commits', stateDir: fresh(), commitMaxRecords: 1000, commitIntervalMs: 60_000, logger: silentLogger })
    const p = rt.producer('in')
    for (let i = 0; i < 10_000; i++) p.send('k', 'v', i)
    await rt.start()
    await rt.stop()
    // Start, at least one per 1000 records, and stop.
    assert.ok(rt.commitStats().commits >= 11, `${rt.commitStats().commits} commits`)
  })

  it('without a state directory, only the commit interval applies', async () => {
    const topology = new Topology().addSource('s', 'in').addProcessor('p', () => ({ process() {} }), 's')
    const rt = new EmbeddedRuntime(topology, { applicationId: 'no-dir', commitMaxRecords: 1000, commitIntervalMs: 60_000, logger: silentLogger })
    const p = rt.producer('in')
    for (let i = 0; i < 10_000; i++) p.send('k', 'v', i)
    await rt.start()
    await rt.stop()
    assert.ok(rt.commitStats().commits <= 3, `${rt.commitStats().commits} commits`)
  })
})
