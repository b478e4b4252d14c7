import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { localCheckpointPath, readLocalCheckpoint, writeLocalCheckpoint } from '../../src/kafka/checkpoint-file.js'
import { LOCAL_CHECKPOINT_MAX_AGE_MS, LocalCheckpoints } from '../../src/kafka/local-checkpoints.js'
import type { ChangelogRecord } from '../../src/runtime/changelog.js'
import { concatSources, recordsSource } from '../../src/runtime/changelog-source.js'
import { silentLogger } from '../../src/util/logger.js'
import type { Logger } from '../../src/util/logger.js'

const dirs: string[] = []
function stateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'punctual-local-checkpoint-'))
  dirs.push(dir)
  return dir
}
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))

const bytes = (s: string): Buffer => Buffer.from(s, 'utf8')
const shown = (records: readonly ChangelogRecord[]): string[] => records.map((r) => `${r.store}:${Buffer.from(r.key).toString()}=${r.value === null ? 'null' : Buffer.from(r.value).toString()}`)

const RECORDS: ChangelogRecord[] = [
  { store: 'counts', key: bytes('a'), value: bytes('1') },
  { store: 'punctual.task', key: bytes('streamTime'), value: bytes('100') },
  { store: 'counts', key: bytes('b'), value: null },
  { store: 'counts', key: bytes(''), value: bytes('') },
  { store: 'counts', key: bytes('big'), value: Buffer.alloc(3 << 20, 7) },
]

/** A logger that keeps its warn and info messages. */
function keepingLogger(): Logger & { lines: string[] } {
  const lines: string[] = []
  const logger = { ...silentLogger, lines, info: (_f: unknown, m?: string) => void lines.push(`info: ${m}`), warn: (_f: unknown, m?: string) => void lines.push(`warn: ${m}`), child: () => logger }
  return logger as Logger & { lines: string[] }
}

describe('checkpoint files', () => {
  it('keep records in order, tombstones and empty keys and values included, with their offsets; read in batches', async () => {
    const path = localCheckpointPath(stateDir(), '0_1')
    await writeLocalCheckpoint(path, { taskId: '0_1', offsets: { t: 42 }, writtenAt: 5 }, RECORDS)
    const read = await readLocalCheckpoint(path)
    assert.ok(read !== undefined)
    assert.deepEqual({ taskId: read.taskId, offsets: read.offsets, writtenAt: read.writtenAt, count: read.count }, { taskId: '0_1', offsets: { t: 42 }, writtenAt: 5, count: 5 })
    const source = read.source()
    const first = source.read(2)
    assert.equal(source.remaining(), 3)
    const rest = source.read(10)
    assert.equal(source.remaining(), 0)
    assert.deepEqual(shown([...first, ...rest].slice(0, 4)), shown(RECORDS.slice(0, 4)))
    assert.ok(Buffer.from((rest[2] as ChangelogRecord).value as Uint8Array).equals(RECORDS[4]?.value as Buffer), 'a record larger than a write chunk')
  })

  it('none: undefined; a file cut short or not a checkpoint: an error naming it', async () => {
    const dir = stateDir()
    assert.equal(await readLocalCheckpoint(localCheckpointPath(dir, '0_0')), undefined)
    const path = localCheckpointPath(dir, '0_2')
    await writeLocalCheckpoint(path, { taskId: '0_2', offsets: {}, writtenAt: 0 }, RECORDS.slice(0, 2))
    const whole = readFileSync(path)
    writeFileSync(path, whole.subarray(0, whole.length - 3))
    const cut = await readLocalCheckpoint(path)
    assert.throws(() => cut?.source().read(10), /cut short|malformed/)
    writeFileSync(path, 'hello world')
    await assert.rejects(readLocalCheckpoint(path), /not a punctual task checkpoint/)
  })

  it('a concatenation reads the first source to its end, then the second', () => {
    const source = concatSources(recordsSource(RECORDS.slice(0, 2)), recordsSource(RECORDS.slice(2, 4)))
    assert.equal(source.remaining(), 4)
    assert.deepEqual(shown(source.read(3)), shown(RECORDS.slice(0, 2)))
    assert.deepEqual(shown(source.read(3)), shown(RECORDS.slice(2, 4)))
    assert.equal(source.remaining(), 0)
  })
})

describe('LocalCheckpoints', () => {
  const task = { taskId: '0_3', partition: 3, topics: ['app-counts-changelog', 'app-punctual-0-changelog'] }
  const ends = new Map([
    ['app-counts-changelog', 120],
    ['app-punctual-0-changelog', 30],
  ])
  const endOffset = async (topic: string, partition: number): Promise<number> => {
    assert.equal(partition, 3)
    return ends.get(topic) as number
  }

  it('saves a task with its changelog partitions’ end offsets as they are when it is saved, and loads it once', async () => {
    const dir = stateDir()
    const checkpoints = new LocalCheckpoints(dir, endOffset, silentLogger, () => 1_000)
    await checkpoints.save([{ ...task, records: RECORDS.slice(0, 2) }])
    await checkpoints.written()
    await checkpoints.load([task])
    const loaded = checkpoints.take('0_3')
    assert.deepEqual(loaded?.offsets, { 'app-counts-changelog': 120, 'app-punctual-0-changelog': 30 })
    assert.deepEqual(shown(loaded?.source().read(10) ?? []), shown(RECORDS.slice(0, 2)))
    assert.equal(checkpoints.take('0_3'), undefined, 'taken once')
  })

  it('a load waits for the task’s write under way', async () => {
    const checkpoints = new LocalCheckpoints(stateDir(), endOffset, silentLogger, () => 1_000)
    await checkpoints.save([{ ...task, records: RECORDS }])
    await checkpoints.load([task])
    assert.equal(checkpoints.take('0_3')?.count, RECORDS.length)
  })

  const unusable: Array<[string, (dir: string) => Promise<void>, () => number, RegExp]> = [
    ['past a partition’s end (the topic was made again)', (dir) => writeLocalCheckpoint(localCheckpointPath(dir, '0_3'), { taskId: '0_3', offsets: { 'app-counts-changelog': 121, 'app-punctual-0-changelog': 30 }, writtenAt: 0 }, RECORDS), () => 0, /whose end is 120/],
    ['for other changelog topics', (dir) => writeLocalCheckpoint(localCheckpointPath(dir, '0_3'), { taskId: '0_3', offsets: { 'app-other-changelog': 1, 'app-punctual-0-changelog': 30 }, writtenAt: 0 }, RECORDS), () => 0, /changelog topics/],
    ['older than tombstones are kept', (dir) => writeLocalCheckpoint(localCheckpointPath(dir, '0_3'), { taskId: '0_3', offsets: { 'app-counts-changelog': 1, 'app-punctual-0-changelog': 1 }, writtenAt: 0 }, RECORDS), () => LOCAL_CHECKPOINT_MAX_AGE_MS + 1, /older than/],
    ['unreadable', async (dir) => writeLocalCheckpoint(localCheckpointPath(dir, '0_3'), { taskId: '0_3', offsets: {}, writtenAt: 0 }, []).then(() => writeFileSync(localCheckpointPath(dir, '0_3'), 'garbage')), () => 0, /cannot be read/],
  ]
  for (const [what, write, now, why] of unusable) {
    it(`a checkpoint ${what} is not used, and removed`, async () => {
      const dir = stateDir()
      await write(dir)
      const logger = keepingLogger()
      const checkpoints = new LocalCheckpoints(dir, endOffset, logger, now)
      await checkpoints.load([task])
      assert.equal(checkpoints.take('0_3'), undefined)
      assert.equal(existsSync(localCheckpointPath(dir, '0_3')), false)
      assert.match(logger.lines.join('\n'), why)
    })
  }

  it('without the end offsets nothing is written, and the checkpoint already there stays', async () => {
    const dir = stateDir()
    const good = new LocalCheckpoints(dir, endOffset, silentLogger, () => 1_000)
    await good.save([{ ...task, records: RECORDS.slice(0, 1) }])
    await good.written()
    const logger = keepingLogger()
    const failing = new LocalCheckpoints(dir, () => Promise.reject(new Error('broker away')), logger, () => 2_000)
    await failing.save([{ ...task, records: RECORDS }])
    await failing.written()
    assert.match(logger.lines.join('\n'), /not written \(broker away\)/)
    await good.load([task])
    assert.equal(good.take('0_3')?.count, 1)
  })
})
