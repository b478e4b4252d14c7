import assert from 'node:assert/strict'
import { after, afterEach, before, describe, it } from 'node:test'
import { BufferConfig, EmbeddedRuntime, Serdes, silentLogger, StreamsBuilder, Suppressed, TimeWindows } from '../../src/index.js'
import type { Topology, Windowed } from '../../src/index.js'
import type { Logger } from '../../src/util/logger.js'
import { KafkaRuntime } from '../../src/kafka/kafka-runtime.js'
import type { ProcessingGuarantee } from '../../src/kafka/config.js'
import { bootstrapServers, TestCluster } from './cluster.js'
import type { TextRecord } from './cluster.js'

const MINUTE = 60_000
const PARTITIONS = 4

/** Counts per key in 10-minute windows with 5 minutes of grace, final results only, as "key@start" -> count. */
function windowedFinal(input: string, output: string): Topology {
  const b = new StreamsBuilder()
  b.stream<string, string>(input, { keySerde: Serdes.String(), valueSerde: Serdes.String() })
    .groupByKey()
    .windowedBy(TimeWindows.ofSizeAndGrace(10 * MINUTE, 5 * MINUTE))
    .count({ name: 'counts' })
    .suppress(Suppressed.untilWindowCloses<Windowed<string>, number>(BufferConfig.unbounded()))
    .toStream()
    .map((k, v) => ({ key: `${k.key}@${k.window.start}`, value: String(v) }))
    .to(output, { keySerde: Serdes.String(), valueSerde: Serdes.String() })
  return b.build()
}

/** `n` records over 40 keys, a second apart, a tenth of them up to 8 minutes late. */
function records(n: number, from = 0): TextRecord[] {
  let seed = 42 + from
  const random = (): number => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648)
  return Array.from({ length: n }, (_, j) => {
    const i = from + j
    const late = random() < 0.1 ? Math.floor(random() * 8 * MINUTE) : 0
    return { key: `k${Math.floor(random() * 40)}`, value: String(i), timestamp: 1_700_000_000_000 + i * 1000 - late }
  })
}

/** The same topology in one embedded process: the output every Kafka run must match. */
async function embedded(input: readonly TextRecord[]): Promise<string[]> {
  const out: string[] = []
  const rt = new EmbeddedRuntime(windowedFinal('in', 'out'), { applicationId: 'reference', logger: silentLogger, topics: { in: { partitions: PARTITIONS }, out: { partitions: PARTITIONS } } })
  rt.subscribe<string, string>('out', (r) => out.push(`${r.key}=${r.value}`))
  rt.start()
  const producer = rt.producer<string, string>('in')
  for (const r of input) producer.send(r.key, r.value, r.timestamp)
  await rt.stop()
  return out.sort()
}

function lines(partitions: readonly TextRecord[][]): string[] {
  return partitions.flat().map((r) => `${r.key}=${r.value}`).sort()
}

async function until(what: string, condition: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** A logger that hands the fields of each info line to `onInfo`. */
function recordingLogger(onInfo: (fields: Record<string, unknown>) => void): Logger {
  const logger: Logger = {
    ...silentLogger,
    info: (fields: unknown) => {
      if (typeof fields === 'object' && fields !== null) onInfo(fields as Record<string, unknown>)
    },
    child: () => logger,
  }
  return logger
}

describe('KafkaRuntime on a real broker', () => {
  let cluster: TestCluster
  const run = `rt${process.pid}x${Date.now()}`

  before(async () => {
    cluster = await TestCluster.connect()
  })

  after(async () => {
    await cluster.deleteTopics(run)
    await cluster.close()
  })

  const started: KafkaRuntime[] = []
  afterEach(async () => {
    // A failed test leaves its instances running: stop them so the process can end.
    for (const rt of started.splice(0)) if (rt.state === 'RUNNING') await rt.stop().catch(() => {})
  })

  function runtime(app: string, input: string, output: string, guarantee: ProcessingGuarantee, logger: Logger = silentLogger): KafkaRuntime {
    const rt = new KafkaRuntime(windowedFinal(input, output), { applicationId: app, bootstrapServers: bootstrapServers(), processingGuarantee: guarantee, commitIntervalMs: 100, logger })
    started.push(rt)
    return rt
  }

  for (const guarantee of ['exactly_once_v2', 'at_least_once'] as const) {
    it(`${guarantee}: one instance writes the final windows of a single embedded run`, async () => {
      const name = `${run}-one-${guarantee === 'exactly_once_v2' ? 'eos' : 'alos'}`
      await cluster.createTopic(`${name}-in`, PARTITIONS)
      await cluster.createTopic(`${name}-out`, PARTITIONS)
      const input = records(6000)
      await cluster.produce(`${name}-in`, PARTITIONS, input)
      const expected = await embedded(input)
      assert.ok(expected.length > 300, `enough final windows to compare: ${expected.length}`)

      const rt = runtime(`${name}-app`, `${name}-in`, `${name}-out`, guarantee)
      await rt.start()
      await until('every record is processed', () => rt.metrics().processedRecords >= input.length)
      await rt.stop()
      assert.deepEqual(lines(await cluster.readAll(`${name}-out`, PARTITIONS)), expected)
    })
  }

  it('exactly_once_v2: a second instance joins mid-run and takes tasks over, restored from their changelogs; the output equals a single embedded run', async () => {
    const name = `${run}-two`
    await cluster.createTopic(`${name}-in`, PARTITIONS)
    await cluster.createTopic(`${name}-out`, PARTITIONS)
    const first = records(4000)
    const second = records(4000, 4000)
    const expected = await embedded([...first, ...second])

    const a = runtime(`${name}-app`, `${name}-in`, `${name}-out`, 'exactly_once_v2')
    await cluster.produce(`${name}-in`, PARTITIONS, first)
    await a.start()
    await until('the first half is processed', () => a.metrics().processedRecords >= first.length)
    assert.equal(a.taskIds().length, PARTITIONS)

    const restored = new Map<string, number>()
    const b = runtime(`${name}-app`, `${name}-in`, `${name}-out`, 'exactly_once_v2', recordingLogger((fields) => {
      if (typeof fields.taskId === 'string' && typeof fields.records === 'number') restored.set(fields.taskId, fields.records)
    }))
    await b.start()
    await until('the tasks are shared by both instances', () => a.taskIds().length === PARTITIONS / 2 && b.taskIds().length === PARTITIONS / 2)
    // The tasks that moved came back from their changelogs: windows, the suppression buffer, stream time.
    assert.deepEqual([...restored.keys()].sort(), b.taskIds().sort())
    for (const [task, n] of restored) assert.ok(n > 0, `task ${task} restored ${n} changelog records`)
    await cluster.produce(`${name}-in`, PARTITIONS, second)
    await until('every record is processed', () => a.metrics().processedRecords + b.metrics().processedRecords >= first.length + second.length)
    await a.stop()
    await b.stop()
    assert.deepEqual(lines(await cluster.readAll(`${name}-out`, PARTITIONS)), expected)
  })
})
