import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { EmbeddedRuntime, JoinWindows, Serdes, silentLogger, StreamsBuilder } from '../../src/index.js'
import type { ProcessorContext, Topology } from '../../src/index.js'
import { KafkaRuntime } from '../../src/kafka/kafka-runtime.js'
import { bootstrapServers } from './cluster.js'
import type { TextRecord } from './cluster.js'
import { onSharedBroker } from './shared-broker.js'
import { lines, MINUTE, PARTITIONS, records, until } from './workload.js'

const str = { keySerde: Serdes.String(), valueSerde: Serdes.String() }

/**
 * An inner stream-stream join within 2 minutes, with an hour of grace, each result written as
 * "left+right@timestamp". The join's stores keep records for 64 minutes, longer than the input spans
 * (50 minutes): no record expires, so every pair within 2 minutes joins exactly once whatever order the
 * two topics are read in (on Kafka one topic's records can run far ahead of the other's), and the
 * output, sorted, is that of any other run.
 */
function join(left: string, right: string, output: string): Topology {
  const b = new StreamsBuilder()
  b.stream<string, string>(left, str)
    .join(b.stream<string, string>(right, str), (l, r) => `${l}+${r}`, JoinWindows.ofTimeDifferenceAndGrace(2 * MINUTE, 60 * MINUTE))
    .processValues<string>(() => {
      let ctx: ProcessorContext<string, string>
      return {
        init: (c) => void (ctx = c),
        process: (r) => ctx.forward({ ...r, value: `${r.value}@${r.timestamp}` }),
      }
    })
    .to(output, str)
  return b.build()
}

/** The join in one embedded process. */
async function embeddedJoin(left: readonly TextRecord[], right: readonly TextRecord[]): Promise<string[]> {
  const out: string[] = []
  const topics = { l: { partitions: PARTITIONS }, r: { partitions: PARTITIONS }, out: { partitions: PARTITIONS } }
  const rt = new EmbeddedRuntime(join('l', 'r', 'out'), { applicationId: 'reference-join', logger: silentLogger, topics })
  rt.subscribe<string, string>('out', (r) => out.push(`${r.key}=${r.value}`))
  rt.start()
  for (const r of left) rt.producer<string, string>('l').send(r.key, r.value, r.timestamp)
  for (const r of right) rt.producer<string, string>('r').send(r.key, r.value, r.timestamp)
  await rt.stop()
  return out.sort()
}

describe('KafkaRuntime: joins on a real broker', () => {
  const broker = onSharedBroker('jn')

  it('exactly_once_v2: a stream-stream join whose tasks move to a second instance mid-run, the window stores of both sides restored from their changelogs, writes the output of a single embedded run', async () => {
    const name = `${broker.run}-ss`
    for (const t of ['l', 'r', 'out']) await broker.cluster.createTopic(`${name}-${t}`, PARTITIONS)
    const leftAll = records(3000)
    const rightAll = records(3000, 50_000).map((r) => ({ ...r, value: `r${r.value}`, timestamp: r.timestamp - 50_000_000 }))
    const expected = await embeddedJoin(leftAll, rightAll)
    assert.ok(expected.length > 1000, `enough results to compare: ${expected.length}`)
    const half = (xs: TextRecord[]): [TextRecord[], TextRecord[]] => [xs.slice(0, xs.length / 2), xs.slice(xs.length / 2)]
    const [left1, left2] = half(leftAll)
    const [right1, right2] = half(rightAll)
    const instance = (): KafkaRuntime =>
      broker.track(new KafkaRuntime(join(`${name}-l`, `${name}-r`, `${name}-out`), { applicationId: `${name}-app`, bootstrapServers: bootstrapServers(), processingGuarantee: 'exactly_once_v2', commitIntervalMs: 100, logger: silentLogger }))

    await broker.cluster.produce(`${name}-l`, PARTITIONS, left1)
    await broker.cluster.produce(`${name}-r`, PARTITIONS, right1)
    const a = instance()
    await a.start()
    await until('the first half is processed', () => a.metrics().processedRecords >= left1.length + right1.length)
    const b = instance()
    await b.start()
    await until('the tasks are shared by both instances', () => a.taskIds().length === PARTITIONS / 2 && b.taskIds().length === PARTITIONS / 2)
    await broker.cluster.produce(`${name}-l`, PARTITIONS, left2)
    await broker.cluster.produce(`${name}-r`, PARTITIONS, right2)
    await until('every record is processed', () => a.metrics().processedRecords + b.metrics().processedRecords >= leftAll.length + rightAll.length)
    await a.stop()
    await b.stop()
    const out = lines(await broker.cluster.readAll(`${name}-out`, PARTITIONS))
    const missing = expected.filter((l) => !out.includes(l))
    const extra = out.filter((l) => !expected.includes(l))
    assert.deepEqual(out, expected, `${out.length} results, ${expected.length} expected; missing ${missing.length} (${missing.slice(0, 5).join(', ')}), extra ${extra.length} (${extra.slice(0, 5).join(', ')})`)
  })
})
