import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { QueryableStoreTypes, Serdes, silentLogger, Topology } from '../../src/index.js'
import type { ProcessorContext } from '../../src/index.js'
import type { Logger } from '../../src/util/logger.js'
import { KafkaRuntime } from '../../src/kafka/kafka-runtime.js'
import type { ProcessingGuarantee } from '../../src/kafka/config.js'
import { bootstrapServers } from './cluster.js'
import { onSharedBroker } from './shared-broker.js'
import type { TextRecord } from './cluster.js'
import { embedded, lines, PARTITIONS, records, until, windowedFinal } from './workload.js'

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

/** The windows of the `counts` aggregation a runtime holds, through an interactive query. */
function windowsOf(rt: { store: KafkaRuntime['store'] }): string[] {
  return [...rt.store('counts', QueryableStoreTypes.windowStore<string, number>()).all()]
    .map(([w, n]) => `${w.key}@${w.window.start}=${n}`)
    .sort()
}

describe('KafkaRuntime on a real broker', () => {
  const broker = onSharedBroker('rt')
  const { run } = broker

  function runtime(app: string, input: string, output: string, guarantee: ProcessingGuarantee, logger: Logger = silentLogger, deadLetterTopic?: string): KafkaRuntime {
    const rt = new KafkaRuntime(windowedFinal(input, output), { applicationId: app, bootstrapServers: bootstrapServers(), groupProtocol: 'consumer', processingGuarantee: guarantee, commitIntervalMs: 100, logger, ...(deadLetterTopic === undefined ? {} : { deadLetterTopic }) })
    broker.track(rt)
    return rt
  }

  for (const guarantee of ['exactly_once_v2', 'at_least_once'] as const) {
    it(`${guarantee}: one instance writes the final windows of a single embedded run`, async () => {
      const name = `${run}-one-${guarantee === 'exactly_once_v2' ? 'eos' : 'alos'}`
      await broker.cluster.createTopic(`${name}-in`, PARTITIONS)
      await broker.cluster.createTopic(`${name}-out`, PARTITIONS)
      const input = records(6000)
      await broker.cluster.produce(`${name}-in`, PARTITIONS, input)
      // The windows still open at the end, as interactive queries show them.
      let openWindows: string[] = []
      const expected = await embedded(input, windowedFinal, (ref) => (openWindows = windowsOf(ref)))
      assert.ok(expected.length > 300, `enough final windows to compare: ${expected.length}`)
      assert.ok(openWindows.length > 0, 'windows left open')

      const rt = runtime(`${name}-app`, `${name}-in`, `${name}-out`, guarantee)
      await rt.start()
      await until('every record is processed', () => rt.metrics().processedRecords >= input.length)
      // The consumer's lag: each input partition read to its end (the high watermark librdkafka learnt from fetches).
      const inputs = rt.metrics().tasks.flatMap((t) => t.inputs)
      assert.equal(inputs.length, PARTITIONS)
      assert.equal(inputs.reduce((n, i) => n + (i.endOffset ?? 0), 0), input.length)
      assert.deepEqual(inputs.map((i) => i.lag), inputs.map(() => 0))
      assert.deepEqual(windowsOf(rt), openWindows, "interactive queries read the same open windows as the embedded run's")
      await rt.stop()
      assert.deepEqual(lines(await broker.cluster.readAll(`${name}-out`, PARTITIONS)), expected)
    })
  }

  it('exactly_once_v2: a second instance joins mid-run and takes tasks over, restored from their changelogs; the output equals a single embedded run', async () => {
    const name = `${run}-two`
    await broker.cluster.createTopic(`${name}-in`, PARTITIONS)
    await broker.cluster.createTopic(`${name}-out`, PARTITIONS)
    const first = records(4000)
    const second = records(4000, 4000)
    const expected = await embedded([...first, ...second])

    const a = runtime(`${name}-app`, `${name}-in`, `${name}-out`, 'exactly_once_v2')
    await broker.cluster.produce(`${name}-in`, PARTITIONS, first)
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
    await broker.cluster.produce(`${name}-in`, PARTITIONS, second)
    await until('every record is processed', () => a.metrics().processedRecords + b.metrics().processedRecords >= first.length + second.length)
    await a.stop()
    await b.stop()
    assert.deepEqual(lines(await broker.cluster.readAll(`${name}-out`, PARTITIONS)), expected)
  })

  for (const guarantee of ['exactly_once_v2', 'at_least_once'] as const) {
    it(`${guarantee}: a task of two partitions waits for the one not yet fetched, so records are processed in timestamp order from the start (KIP-695)`, async () => {
      const name = `${run}-lag-${guarantee === 'exactly_once_v2' ? 'eos' : 'alos'}`
      for (const t of ['a', 'b', 'out']) await broker.cluster.createTopic(`${name}-${t}`, 1)
      // Interleaved in time, each topic written whole: whichever partition a fetch brings first holds
      // records later than the other's. b is written in transactions: its end lies past a commit marker.
      const n = 20_000
      const at = (i: number): number => 1_700_000_000_000 + i
      await broker.cluster.produce(`${name}-a`, 1, Array.from({ length: n }, (_, i) => ({ key: 'k', value: `a${2 * i}`, timestamp: at(2 * i) })))
      await broker.cluster.produce(`${name}-b`, 1, Array.from({ length: n }, (_, i) => ({ key: 'k', value: `b${2 * i + 1}`, timestamp: at(2 * i + 1) })), { transactional: true })
      const serdes = { keySerde: Serdes.String(), valueSerde: Serdes.String() }
      const topology = new Topology()
        .addSource('in', [`${name}-a`, `${name}-b`], serdes)
        .addProcessor<string, string, string, string>(
          'pass',
          () => {
            let ctx: ProcessorContext<string, string> | undefined
            return {
              init: (c) => (ctx = c),
              process: (r) => ctx?.forward(r),
            }
          },
          'in',
        )
        .addSink('out', `${name}-out`, serdes, 'pass')
      const rt = broker.track(new KafkaRuntime(topology, { applicationId: `${name}-app`, bootstrapServers: bootstrapServers(), groupProtocol: 'consumer', processingGuarantee: guarantee, commitIntervalMs: 100, logger: silentLogger }))
      await rt.start()
      await until('every record is processed', () => rt.metrics().processedRecords >= 2 * n)
      // Later records of a alone: b, drained to its commit marker, is caught up and not waited for.
      await broker.cluster.produce(`${name}-a`, 1, Array.from({ length: 10 }, (_, i) => ({ key: 'k', value: `a${2 * n + i}`, timestamp: at(2 * n + i) })))
      await until('the later records are processed', () => rt.metrics().processedRecords >= 2 * n + 10)
      await rt.stop()
      const values = (await broker.cluster.readAll(`${name}-out`, 1)).flat().map((r) => r.value)
      assert.equal(values.length, 2 * n + 10)
      const outOfOrder = values.findIndex((v, i) => Number(v.slice(1)) !== i)
      assert.equal(outOfOrder, -1, `in timestamp order; first out of order at ${outOfOrder}: ${values.slice(Math.max(0, outOfOrder - 2), outOfOrder + 3).join(' ')}`)
    })
  }

  it('queryMetadataForKey names the instance whose task holds a key, by the applicationServer each instance set', async () => {
    const name = `${run}-meta`
    await broker.cluster.createTopic(`${name}-in`, PARTITIONS)
    await broker.cluster.createTopic(`${name}-out`, PARTITIONS)
    const input = records(2000)
    await broker.cluster.produce(`${name}-in`, PARTITIONS, input)
    const instance = (server: string): KafkaRuntime =>
      broker.track(new KafkaRuntime(windowedFinal(`${name}-in`, `${name}-out`), { applicationId: `${name}-app`, bootstrapServers: bootstrapServers(), groupProtocol: 'consumer', processingGuarantee: 'exactly_once_v2', commitIntervalMs: 100, logger: silentLogger, applicationServer: server }))
    const a = instance('host-a:7001')
    const b = instance('host-b:7002')
    await a.start()
    await b.start()
    await until('the tasks are shared by both instances and every record is processed', () => a.taskIds().length === PARTITIONS / 2 && b.taskIds().length === PARTITIONS / 2 && a.metrics().processedRecords + b.metrics().processedRecords >= input.length)
    const byHost = new Map([['host-a:7001', a], ['host-b:7002', b]])
    const keys = [...new Set(input.map((r) => r.key))]
    for (const key of keys) {
      const fromA = await a.queryMetadataForKey('counts', key)
      const fromB = await b.queryMetadataForKey('counts', key)
      assert.ok(fromA !== undefined, `key ${key} has an instance`)
      assert.deepEqual(fromB, fromA)
      const host = `${fromA.activeHost.host}:${fromA.activeHost.port}`
      const holder = byHost.get(host) as KafkaRuntime
      const other = holder === a ? b : a
      assert.ok(windowsOf(holder).some((w) => w.startsWith(`${key}@`)), `${host} holds windows of ${key}`)
      assert.ok(!windowsOf(other).some((w) => w.startsWith(`${key}@`)), `the other instance holds none of ${key}`)
    }
    const all = await a.metadataForAllStreamsClients()
    assert.deepEqual(all.map((m) => `${m.hostInfo.host}:${m.hostInfo.port}`).sort(), ['host-a:7001', 'host-b:7002'])
    for (const m of all) {
      assert.ok(m.stateStoreNames.includes('counts'))
      assert.equal(m.topicPartitions.filter((tp) => tp.topic === `${name}-in`).length, PARTITIONS / 2)
    }
    await a.stop()
    await b.stop()
    await assert.rejects(a.queryMetadataForKey('counts', keys[0]), /the runtime is NOT_RUNNING/)
  })

  it('serves its metrics and live page: the tasks this instance owns, each input partition read to its end', async () => {
    const name = `${run}-seen`
    await broker.cluster.createTopic(`${name}-in`, PARTITIONS)
    await broker.cluster.createTopic(`${name}-out`, PARTITIONS)
    const input = records(600)
    await broker.cluster.produce(`${name}-in`, PARTITIONS, input)
    const rt = new KafkaRuntime(windowedFinal(`${name}-in`, `${name}-out`), { applicationId: `${name}-app`, bootstrapServers: bootstrapServers(), groupProtocol: 'consumer', metrics: { port: 0 }, logger: silentLogger })
    broker.track(rt)
    await rt.start()
    await until('every record is processed', () => rt.metrics().processedRecords >= input.length)
    const address = await rt.metricsAddress()
    assert.ok(address !== undefined)
    const snapshot = (await (await fetch(`${address.pageUrl}metrics.json`)).json()) as { state: string; tasks: Array<{ taskId: string; inputs: Array<{ lag: number }> }> }
    assert.equal(snapshot.state, 'RUNNING')
    assert.deepEqual(snapshot.tasks.map((t) => t.taskId).sort(), Array.from({ length: PARTITIONS }, (_, p) => `0_${p}`))
    assert.ok(snapshot.tasks.every((t) => t.inputs.length === 1 && t.inputs[0]?.lag === 0))
    assert.match(await (await fetch(address.url)).text(), new RegExp(`punctual_task_input_lag\\{application_id="${name}-app",task_id="0_0",topic="${name}-in",partition="0"\\} 0`))
    assert.match(await (await fetch(address.pageUrl)).text(), /<title>punctual<\/title>/)
    await rt.stop()
  })

  it('exactly_once_v2: records that do not deserialize go to the dead-letter topic with headers naming the error and their source; the rest is processed as usual', async () => {
    const name = `${run}-dlq`
    await broker.cluster.createTopic(`${name}-in`, PARTITIONS)
    await broker.cluster.createTopic(`${name}-out`, PARTITIONS)
    await broker.cluster.createTopic(`${name}-dead`, 1)
    const good = records(2000)
    const bad = [5, 500, 1500].map((i) => ({ key: `bad${i}`, value: Buffer.from([0xff, 0xfe, i & 0xff]), timestamp: (good[i] as TextRecord).timestamp }))
    const expected = await embedded(good)
    const rt = runtime(`${name}-app`, `${name}-in`, `${name}-out`, 'exactly_once_v2', silentLogger, `${name}-dead`)
    await broker.cluster.produce(`${name}-in`, PARTITIONS, [...good.slice(0, 1000), ...bad, ...good.slice(1000)])
    await rt.start()
    await until('every good record is processed', () => rt.metrics().processedRecords >= good.length)
    await rt.stop()
    assert.equal(rt.metrics().droppedRecords.deserialization, bad.length)
    assert.deepEqual(lines(await broker.cluster.readAll(`${name}-out`, PARTITIONS)), expected)

    const letters = (await broker.cluster.readAll(`${name}-dead`, 1)).flat()
    assert.deepEqual(letters.map((l) => l.key).sort(), bad.map((b) => b.key).sort())
    const input = (await broker.cluster.readAll(`${name}-in`, PARTITIONS)).map((p) => new Map(p.map((r) => [r.offset, r])))
    for (const l of letters) {
      const from = bad.find((b) => b.key === l.key) as (typeof bad)[number]
      assert.deepEqual(l.bytes, from.value, 'the value bytes as read')
      assert.equal(l.timestamp, from.timestamp)
      assert.equal(l.headers['__streams.errors.topic'], `${name}-in`)
      assert.match(l.headers['__streams.errors.message'] as string, /invalid UTF-8/)
      // The headers point at the very record.
      const source = input[Number(l.headers['__streams.errors.partition'])]?.get(Number(l.headers['__streams.errors.offset']))
      assert.equal(source?.key, l.key)
    }
  })
})
