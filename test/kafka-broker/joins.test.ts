import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { EmbeddedRuntime, JoinWindows, QueryableStoreTypes, Serdes, silentLogger, StreamsBuilder } from '../../src/index.js'
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
  await rt.start()
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
      broker.track(new KafkaRuntime(join(`${name}-l`, `${name}-r`, `${name}-out`), { applicationId: `${name}-app`, bootstrapServers: bootstrapServers(), groupProtocol: 'consumer', processingGuarantee: 'exactly_once_v2', commitIntervalMs: 100, logger: silentLogger }))

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

  it('exactly_once_v2: a foreign-key join of tables that are not co-partitioned, a second instance joining mid-run, ends with each order joined with its customer', async () => {
    const name = `${broker.run}-fk`
    // Orders in 4 partitions name customers (kept in 3); c50-c52 do not exist, so those orders have no result.
    await broker.cluster.createTopic(`${name}-orders`, PARTITIONS)
    await broker.cluster.createTopic(`${name}-customers`, 3)
    await broker.cluster.createTopic(`${name}-out`, PARTITIONS)
    const customers = Array.from({ length: 50 }, (_, c) => ({ key: `c${c}`, value: `name${c}`, timestamp: 1_000 + c }))
    const renames = Array.from({ length: 10 }, (_, i) => ({ key: `c${i * 5}`, value: `renamed${i * 5}`, timestamp: 100_000 + i }))
    const orders = Array.from({ length: 2000 }, (_, i) => ({ key: `o${i % 300}`, value: `c${(i * 7) % 53}:item${i}`, timestamp: 10_000 + i }))
    const finalName = new Map([...customers, ...renames].map((c) => [c.key, c.value]))
    const expected = new Map<string, string>()
    for (const o of orders) {
      const name = finalName.get(o.value.slice(0, o.value.indexOf(':')))
      if (name === undefined) expected.delete(o.key)
      else expected.set(o.key, `${o.value}+${name}`)
    }
    const topology = (): Topology => {
      const b = new StreamsBuilder()
      b.table<string, string>(`${name}-orders`, str)
        .join(b.table<string, string>(`${name}-customers`, str), (order) => order.slice(0, order.indexOf(':')), (order, customer) => `${order}+${customer}`)
        .toStream()
        .to(`${name}-out`, str)
      return b.build()
    }
    const instance = (): KafkaRuntime =>
      broker.track(new KafkaRuntime(topology(), { applicationId: `${name}-app`, bootstrapServers: bootstrapServers(), groupProtocol: 'consumer', processingGuarantee: 'exactly_once_v2', commitIntervalMs: 100, logger: silentLogger }))
    /** Each order's last result in the committed output (a tombstone removes it). */
    const results = async (): Promise<Map<string, string>> => {
      const last = new Map<string, string>()
      for (const partition of await broker.cluster.readAll(`${name}-out`, PARTITIONS)) {
        for (const r of partition) {
          if (r.bytes === null) last.delete(r.key)
          else last.set(r.key, r.value)
        }
      }
      return last
    }
    const same = (a: ReadonlyMap<string, string>, b: ReadonlyMap<string, string>): boolean => a.size === b.size && [...a].every(([k, v]) => b.get(k) === v)

    await broker.cluster.produce(`${name}-customers`, 3, customers)
    await broker.cluster.produce(`${name}-orders`, PARTITIONS, orders.slice(0, 1000))
    const a = instance()
    await a.start()
    await until('the first orders are processed', () => a.metrics().processedRecords >= 1050)
    const b = instance()
    await b.start()
    await until('the tasks are shared by both instances', () => a.taskIds().length > 0 && b.taskIds().length > 0 && a.taskIds().length + b.taskIds().length === PARTITIONS + 3)
    await broker.cluster.produce(`${name}-orders`, PARTITIONS, orders.slice(1000))
    await broker.cluster.produce(`${name}-customers`, 3, renames)
    let seen = new Map<string, string>()
    await until(
      "the output holds each order's final join",
      async () => same((seen = await results()), expected),
      90_000,
      () => `${seen.size} orders with a result, ${expected.size} expected; first wrong: ${[...expected].find(([k, v]) => seen.get(k) !== v)?.join(' -> ')}`,
    )
    await a.stop()
    await b.stop()
  })

  it('exactly_once_v2: a stream joined with a global table reads the table whole on every instance, before its tasks start and then as it changes', async () => {
    const name = `${broker.run}-gt`
    await broker.cluster.createTopic(`${name}-airports`, 3)
    await broker.cluster.createTopic(`${name}-flights`, PARTITIONS)
    await broker.cluster.createTopic(`${name}-out`, PARTITIONS)
    const airports = Array.from({ length: 30 }, (_, a) => ({ key: `A${a}`, value: `state${a % 7}`, timestamp: 1 }))
    // A27-A29 leave the table before any flight: an inner join drops their flights.
    const removed = ['A27', 'A28', 'A29'].map((key) => ({ key, value: null as unknown as string, timestamp: 2 }))
    const flight = (i: number): TextRecord => ({ key: `f${i}`, value: `A${(i * 11) % 32}`, timestamp: 1_000 + i })
    const first = Array.from({ length: 600 }, (_, i) => flight(i))
    const second = Array.from({ length: 600 }, (_, i) => flight(600 + i))
    const topology = (): Topology => {
      const b = new StreamsBuilder()
      const table = b.globalTable<string, string>(`${name}-airports`, str, { name: 'airports' })
      b.stream<string, string>(`${name}-flights`, str)
        .join(table, (_flight, airport) => airport, (airport, state) => `${airport} in ${state}`)
        .to(`${name}-out`, str)
      return b.build()
    }
    const instance = (): KafkaRuntime =>
      broker.track(new KafkaRuntime(topology(), { applicationId: `${name}-app`, bootstrapServers: bootstrapServers(), groupProtocol: 'consumer', processingGuarantee: 'exactly_once_v2', commitIntervalMs: 100, logger: silentLogger }))
    const expect = (flights: readonly TextRecord[], states: ReadonlyMap<string, string>): string[] =>
      flights.flatMap((f) => (states.has(f.value) ? [`${f.key}=${f.value} in ${states.get(f.value)}`] : []))
    const states = new Map(airports.filter((a) => !['A27', 'A28', 'A29'].includes(a.key)).map((a) => [a.key, a.value]))

    await broker.cluster.produce(`${name}-airports`, 3, [...airports, ...removed])
    await broker.cluster.produce(`${name}-flights`, PARTITIONS, first)
    const a = instance()
    await a.start()
    // Started only once the table was read whole: every flight of the first half found it.
    assert.equal(a.store('airports', QueryableStoreTypes.keyValueStore<string, string>()).approximateNumEntries(), 27)
    await until('the first flights are processed', () => a.metrics().processedRecords >= first.length)
    const b = instance()
    await b.start()
    assert.equal(b.store('airports', QueryableStoreTypes.keyValueStore<string, string>()).get('A3'), 'state3', 'the second instance has the whole table too')
    await until('the tasks are shared by both instances', () => a.taskIds().length === PARTITIONS / 2 && b.taskIds().length === PARTITIONS / 2)
    // The table changes while both run: A3 moves, A30 arrives.
    await broker.cluster.produce(`${name}-airports`, 3, [{ key: 'A3', value: 'moved', timestamp: 3 }, { key: 'A30', value: 'new', timestamp: 3 }])
    states.set('A3', 'moved')
    states.set('A30', 'new')
    for (const rt of [a, b]) {
      const table = rt.store('airports', QueryableStoreTypes.keyValueStore<string, string>())
      await until('each instance has the table update', () => table.get('A3') === 'moved' && table.get('A30') === 'new')
    }
    await broker.cluster.produce(`${name}-flights`, PARTITIONS, second)
    await until('every flight is processed', () => a.metrics().processedRecords + b.metrics().processedRecords >= first.length + second.length)
    await a.stop()
    await b.stop()
    const before = new Map([...states].map(([k, v]) => [k, k === 'A3' ? 'state3' : v]))
    before.delete('A30')
    const expected = [...expect(first, before), ...expect(second, states)].sort()
    assert.deepEqual(lines(await broker.cluster.readAll(`${name}-out`, PARTITIONS)), expected)
  })
})
