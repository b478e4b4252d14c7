import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { createConsoleLogger, EmbeddedRuntime, KafkaRuntime, Produced, Serdes, silentLogger, StreamsBuilder } from '../../src/index.js'
import type { Logger, LogFields, Serde, Topology } from '../../src/index.js'
import { TopologyTestDriver } from '../../src/testing/index.js'

const str = { keySerde: Serdes.String(), valueSerde: Serdes.String() }
const FALLBACK = 'JSON (fallback: none given or known)'

/** The serdes line of each sink of the topology's description, by sink name. */
function sinkSerdes(topology: Topology): Record<string, string> {
  const out: Record<string, string> = {}
  for (const m of topology.describe().matchAll(/ {4}Sink: (\S+) \(topic: \S+\)\n {6}<-- .*\n {6}serdes: (.*)\n/g)) out[m[1] ?? ''] = m[2] ?? ''
  return out
}

/** Orders joined with customers, by a joiner that returns strings: the DSL knows no serde of the result. */
function joinToOut(b: StreamsBuilder, produced?: Produced<string, string>): void {
  const customers = b.table<string, string>('customers', str)
  b.stream<string, string>('orders', str)
    .join(customers, (order, customer) => `${order} for ${customer}`)
    .to('out', { name: 'joined-out', ...produced })
}

/** A logger keeping each warning, with its fields. */
function warnings(): { logger: Logger; warned: Array<{ fields: LogFields; message: string }> } {
  const warned: Array<{ fields: LogFields; message: string }> = []
  const logger: Logger = { debug: silentLogger.debug, info: silentLogger.info, error: silentLogger.error, warn: (fields, message) => void warned.push({ fields, message: message ?? '' }) }
  return { logger, warned }
}

describe("a sink's serdes: shown by describe(), and a fallback to JSON warned of at start", () => {
  it('describe() shows the key and value serde of each sink, and marks JSON chosen for want of a serde', () => {
    const b = new StreamsBuilder()
    joinToOut(b)
    const source = b.stream<string, string>('clicks', str)
    source.filter(() => true).to('kept', { name: 'known-from-upstream' })
    source.mapValues((v) => v.length).to('lengths', { name: 'given', ...Produced.with(Serdes.String(), Serdes.Long()) })
    source.map((k, v) => ({ key: [k], value: { v } })).to('pairs', { name: 'neither' })
    const upper: Serde<string> = { name: 'Upper', serialize: (s) => (s === null ? null : Buffer.from(s.toUpperCase())), deserialize: (d) => (d === null ? null : Buffer.from(d).toString()) }
    source.mapValues((v) => v).to('upper', { name: 'own-serde', valueSerde: upper })
    assert.deepEqual(sinkSerdes(b.build()), {
      'joined-out': `key String, value ${FALLBACK}`,
      'known-from-upstream': 'key String, value String',
      given: 'key String, value Long',
      neither: `key ${FALLBACK}, value ${FALLBACK}`,
      'own-serde': `key String, value Upper`,
    })
  })

  it('a builder default serde is no fallback; a repartition topic shows the serdes it is written with', () => {
    const b = new StreamsBuilder({ defaultValueSerde: Serdes.String() })
    joinToOut(b)
    b.stream<string, string>('clicks', str)
      .selectKey((_k, v) => v.length)
      .groupByKey()
      .count({ name: 'per-length' })
      .toStream()
      .to('counts', { name: 'counts-out' })
    const t = b.build()
    const serdes = sinkSerdes(t)
    assert.equal(serdes['joined-out'], 'key String, value String')
    assert.equal(serdes['counts-out'], `key ${FALLBACK}, value Long`, 'the key selected was given no serde, and kept the fallback through the grouping')
    const repartition = Object.entries(serdes).filter(([name]) => !name.endsWith('-out'))
    assert.deepEqual(repartition, [[repartition[0]?.[0], `key ${FALLBACK}, value String`]], 'the repartition sink, numbered')
  })

  it('writes what it wrote before: the JSON of the value, a string quoted', () => {
    const b = new StreamsBuilder()
    joinToOut(b)
    const driver = new TopologyTestDriver(b.build())
    driver.createInputTopic('customers', Serdes.String(), Serdes.String()).pipeInput('c', 'Ada', 1)
    driver.createInputTopic('orders', Serdes.String(), Serdes.String()).pipeInput('c', 'tea', 2)
    assert.deepEqual(driver.createOutputTopic('out').readValuesToList(), ['tea for Ada'])
    driver.close()
    const sink = b.build().subtopologies().flatMap((sub) => sub.nodes).find((node) => node.name === 'joined-out')
    assert.ok(sink?.kind === 'sink')
    assert.equal(Buffer.from(sink.valueSerde.serialize('tea for Ada', 'out') ?? []).toString(), '"tea for Ada"')
    assert.deepEqual(sink.valueSerde.serialize({ n: 1 }, 'out'), Serdes.JSON().serialize({ n: 1 }, 'out'))
  })

  it('EmbeddedRuntime.start logs one WARN per output sink writing JSON for want of a serde: the sink, topic, side and the fix', async () => {
    const b = new StreamsBuilder()
    joinToOut(b)
    const source = b.stream<string, string>('clicks', str)
    source.filter(() => true).to('kept')
    source.mapValues((v) => v.length).to('lengths', Produced.with(Serdes.String(), Serdes.Long()))
    source.map((k, v) => ({ key: [k], value: { v } })).to('pairs', { name: 'pairs-out' })
    source.selectKey((_k, v) => v).groupByKey().count().toStream().to('counts', { name: 'counts-out', valueSerde: Serdes.Long() })
    const { logger, warned } = warnings()
    const rt = new EmbeddedRuntime(b.build(), { applicationId: 'sink-serdes', logger })
    await rt.start()
    await rt.stop()
    assert.deepEqual(
      warned.map((w) => w.fields),
      [
        { sink: 'joined-out', topic: 'out', sides: 'value' },
        { sink: 'pairs-out', topic: 'pairs', sides: 'key,value' },
        { sink: 'counts-out', topic: 'counts', sides: 'key' },
      ],
      'none for the sinks given serdes or knowing them from upstream, none for the repartition topic',
    )
    const [join, pairs, counts] = warned.map((w) => w.message)
    assert.match(join ?? '', /^sink "joined-out" writes the values of topic "out" as JSON, for want of a value serde: none was given, and none is known from upstream \(/)
    assert.match(join ?? '', /to\("out", Produced\.with\(keySerde, valueSerde\)\), or give StreamsBuilder a defaultValueSerde$/)
    assert.match(pairs ?? '', /^sink "pairs-out" writes the keys and values of topic "pairs" as JSON, for want of a key or value serde: .* a defaultKeySerde and a defaultValueSerde$/)
    assert.match(counts ?? '', /^sink "counts-out" writes the keys of topic "counts" as JSON, for want of a key serde: .* a defaultKeySerde$/)
  })

  it('logs nothing when every sink has its serdes: given, known from upstream, or the builder defaults', async () => {
    const b = new StreamsBuilder({ defaultKeySerde: Serdes.String(), defaultValueSerde: Serdes.JSON() })
    joinToOut(b)
    b.stream<string, string>('clicks', str).map((k, v) => ({ key: k, value: v.length })).to('lengths')
    const lines: string[] = []
    const rt = new EmbeddedRuntime(b.build(), { applicationId: 'sink-serdes-quiet', logger: createConsoleLogger({ write: (l) => void lines.push(l) }) })
    await rt.start()
    await rt.stop()
    assert.deepEqual(
      lines.filter((l) => / WARN /.test(l)),
      [],
    )
  })

  it('a console logger writes the warning as one WARN line with the sink, topic and side', async () => {
    const b = new StreamsBuilder()
    joinToOut(b)
    const lines: string[] = []
    const rt = new EmbeddedRuntime(b.build(), { applicationId: 'sink-serdes-line', logger: createConsoleLogger({ write: (l) => void lines.push(l) }) })
    await rt.start()
    await rt.stop()
    const warns = lines.filter((l) => / WARN /.test(l))
    assert.equal(warns.length, 1, lines.join('\n'))
    assert.match(warns[0] ?? '', / WARN {2}sink "joined-out" writes the values of topic "out" as JSON.* \(applicationId=sink-serdes-line sink=joined-out topic=out sides=value\)$/)
  })

  const dir = mkdtempSync(join(tmpdir(), 'punctual-sink-serdes-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('KafkaRuntime.start warns the same way, first of all (here before the state directory refuses it)', async () => {
    const b = new StreamsBuilder()
    joinToOut(b)
    const { logger, warned } = warnings()
    const file = join(dir, 'a-file')
    writeFileSync(file, '')
    const rt = new KafkaRuntime(b.build(), { applicationId: 'sink-serdes-kafka', bootstrapServers: 'localhost:1', stateDir: file, logger })
    await assert.rejects(rt.start(), /is a file, not a directory/)
    assert.deepEqual(
      warned.map((w) => w.fields),
      [{ sink: 'joined-out', topic: 'out', sides: 'value' }],
    )
    assert.match(warned[0]?.message ?? '', /^sink "joined-out" writes the values of topic "out" as JSON.*Produced\.with\(keySerde, valueSerde\).*defaultValueSerde$/)
  })
})
