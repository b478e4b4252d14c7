import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { inspect } from 'node:util'
import { BufferConfig, EmbeddedRuntime, JoinWindows, Named, Serdes, SessionWindows, silentLogger, SlidingWindows, KStream, StreamsBuilder, Suppressed, TimeWindows } from '../../src/index.js'
import type { Windowed } from '../../src/index.js'
import { TopologyTestDriver } from '../../src/testing/index.js'

/** Collects what reaches the end of a stream as "key=value@ts" lines. */
function collect<K, V>(stream: KStream<K, V>, show: (k: K) => string = String): string[] {
  const out: string[] = []
  stream.addStatelessNode(undefined, 'TEST-OUT', (r) => out.push(`${show(r.key)}=${r.value}@${r.timestamp}`))
  return out
}
const win = (k: Windowed<string>): string => `${k.key}[${k.window.start},${k.window.end})`

function drive(builder: StreamsBuilder, topic = 'in') {
  const driver = new TopologyTestDriver(builder.build(), { errorHandler: () => 'fail' })
  const input = driver.createInputTopic(topic, Serdes.String(), Serdes.String())
  return { driver, pipe: (k: string, v: string, ts: number) => input.pipeInput(k, v, ts) }
}

describe('stateless KStream operations', () => {
  it('filter, mapValues, selectKey, flatMap and peek compose', () => {
    const b = new StreamsBuilder()
    const seen: string[] = []
    const out = collect(
      b
        .stream('in')
        .filter((_k, v) => v !== 'skip')
        .peek((k) => seen.push(k))
        .mapValues((v) => v.toUpperCase())
        .flatMap((k, v) => [
          { key: `${k}1`, value: v },
          { key: `${k}2`, value: v },
        ])
        .selectKey((k) => k.toUpperCase()),
    )
    const { pipe } = drive(b)
    pipe('a', 'x', 1)
    pipe('b', 'skip', 2)
    assert.deepEqual(out, ['A1=X@1', 'A2=X@1'])
    assert.deepEqual(seen, ['a'])
  })

  it('split routes to the first matching branch, else the default', () => {
    const b = new StreamsBuilder()
    const branches = b
      .stream('in')
      .split(Named.as('route-'))
      .branch((_k, v) => v.startsWith('a'), Named.as('a'))
      .branch((_k, v) => v.startsWith('b'), Named.as('b'))
      .defaultBranch(Named.as('other'))
    const a = collect(branches['route-a']!)
    const other = collect(branches['route-other']!)
    const { pipe } = drive(b)
    pipe('k', 'apple', 1)
    pipe('k', 'cherry', 2)
    assert.deepEqual([a, other], [['k=apple@1'], ['k=cherry@2']])
  })

  it('merge interleaves two streams', () => {
    const b = new StreamsBuilder()
    const out = collect(b.stream('in').merge(b.stream('in2')))
    const d = new TopologyTestDriver(b.build())
    d.createInputTopic('in', Serdes.String(), Serdes.String()).pipeInput('a', '1', 1)
    d.createInputTopic('in2', Serdes.String(), Serdes.String()).pipeInput('b', '2', 2)
    assert.deepEqual(out, ['a=1@1', 'b=2@2'])
  })
})

describe('aggregations', () => {
  it('groupByKey().count() forwards every update', () => {
    const b = new StreamsBuilder()
    const out = collect(b.stream('in').groupByKey().count().toStream())
    const { pipe } = drive(b)
    for (const [k, ts] of [['a', 1], ['b', 2], ['a', 3]] as const) pipe(k, 'v', ts)
    assert.deepEqual(out, ['a=1@1', 'b=1@2', 'a=2@3'])
  })

  it('groupBy repartitions by the new key through a topic, then aggregates', () => {
    const b = new StreamsBuilder()
    const out = collect(
      b
        .stream('in')
        .groupBy((_k, v) => v.slice(0, 1), { keySerde: Serdes.String() })
        .aggregate(
          () => '',
          (_k, v, agg) => agg + v,
        )
        .toStream(),
    )
    const { pipe } = drive(b)
    pipe('1', 'ax', 1)
    pipe('2', 'by', 2)
    pipe('3', 'az', 3)
    assert.deepEqual(out, ['a=ax@1', 'b=by@2', 'a=axaz@3'])
    assert.match(b.build().describe(), /Sub-topology: 1/)
  })

  it('groupByKey after a key change (selectKey, map, flatMap) repartitions, so each key is counted in one task', async () => {
    for (const rekey of ['selectKey', 'map', 'flatMap'] as const) {
      const b = new StreamsBuilder()
      const words = b.stream<string, string>('lines').flatMapValues((line) => line.split(' '))
      const keyed =
        rekey === 'selectKey'
          ? words.selectKey((_k, w) => w)
          : rekey === 'map'
            ? words.map((_k, w) => ({ key: w, value: w }))
            : words.flatMap((_k, w) => [{ key: w, value: w }])
      // filter keeps the need to repartition: the key changed upstream of it.
      keyed.filter(() => true).groupByKey({ keySerde: Serdes.String() }).count().toStream().to('counts', { keySerde: Serdes.String(), valueSerde: Serdes.Long() })
      assert.match(b.build().describe(), /-repartition/, rekey)
      const rt = new EmbeddedRuntime(b.build(), { applicationId: `rekey-${rekey}`, topics: { lines: { partitions: 3 } }, logger: silentLogger })
      const last = new Map<string, number>()
      rt.subscribe<string, number>('counts', (r) => void last.set(r.key!, r.value!))
      await rt.start()
      const p = rt.producer<string, string>('lines')
      ;['the fox', 'the dog', 'a dog', 'the end'].forEach((line, i) => p.send(`line-${i}`, line, i))
      await rt.stop()
      assert.deepEqual(Object.fromEntries([...last].sort()), { a: 1, dog: 2, end: 1, fox: 1, the: 3 }, rekey)
    }
  })

  it('groupByKey without a key change reads the stream as it is (no repartition topic)', () => {
    const b = new StreamsBuilder()
    b.stream('in').filter(() => true).mapValues((v) => v).groupByKey().count()
    assert.doesNotMatch(b.build().describe(), /repartition/)
  })

  it('reduce combines values per key', () => {
    const b = new StreamsBuilder()
    const out = collect(b.stream('in').groupByKey().reduce((a, v) => `${a}+${v}`).toStream())
    const { pipe } = drive(b)
    pipe('k', 'x', 1)
    pipe('k', 'y', 2)
    assert.deepEqual(out, ['k=x@1', 'k=x+y@2'])
  })
})

describe('time windows (SEMANTICS 5)', () => {
  it('a size, grace or gap that is not an integer is refused, shown as JavaScript writes it (NaN, not null; issue 39)', () => {
    assert.throws(() => TimeWindows.ofSizeWithNoGrace(NaN), /TimeWindows.*: must be an integer >= 1, got NaN$/)
    assert.throws(() => TimeWindows.ofSizeAndGrace(10, Infinity), /got Infinity$/)
    assert.throws(() => TimeWindows.ofSizeWithNoGrace(10).advanceBy(NaN), /got NaN$/)
    assert.throws(() => SlidingWindows.ofTimeDifferenceWithNoGrace(NaN), /got NaN$/)
    assert.throws(() => SessionWindows.ofInactivityGapAndGrace(5, NaN), /got NaN$/)
    assert.throws(() => JoinWindows.ofTimeDifferenceWithNoGrace(NaN), /JoinWindows.ofTimeDifferenceWithNoGrace timeDifference: must be an integer >= 0, got NaN$/)
    assert.throws(() => JoinWindows.ofTimeDifferenceWithNoGrace(5).before(-Infinity), /got -Infinity$/)
  })

  it('hopping windows: a record counts in every window containing it; output ts is the largest input ts', () => {
    const b = new StreamsBuilder()
    const out = collect(b.stream('in').groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(10, 100).advanceBy(5)).count().toStream(), win)
    const { pipe } = drive(b)
    pipe('k', 'v', 7)
    pipe('k', 'v', 3)
    assert.deepEqual(out, ['k[0,10)=1@7', 'k[5,15)=1@7', 'k[0,10)=2@7'])
  })

  it('a record is late once end + grace <= stream time: dropped and counted', () => {
    const b = new StreamsBuilder()
    const out = collect(b.stream('in').groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(10, 5)).count().toStream(), win)
    const { pipe, driver } = drive(b)
    pipe('k', 'v', 14) // stream time 14: [0,10) closes at 15
    pipe('k', 'v', 9) // 10 + 5 > 14: still open
    pipe('k', 'v', 15) // stream time 15
    pipe('k', 'v', 9) // 10 + 5 <= 15: late
    assert.deepEqual(out, ['k[10,20)=1@14', 'k[0,10)=1@9', 'k[10,20)=2@15'])
    assert.equal(driver.metrics().droppedRecords.late, 1)
  })

  it('final results with untilWindowCloses: one result per window, when it closes', () => {
    const b = new StreamsBuilder()
    const out = collect(
      b
        .stream('in')
        .groupByKey()
        .windowedBy(TimeWindows.ofSizeAndGrace(10, 5))
        .count()
        .suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()))
        .toStream(),
      win,
    )
    const { pipe } = drive(b)
    pipe('a', 'v', 1)
    pipe('b', 'v', 2)
    pipe('a', 'v', 8)
    pipe('a', 'v', 14)
    assert.deepEqual(out, [])
    pipe('c', 'v', 15)
    assert.deepEqual(out, ['a[0,10)=2@8', 'b[0,10)=1@2'])
  })
})

describe('windowed keys', () => {
  it('are plain { key, window } objects: equal, printed and serialized as such (their id stamp is private)', () => {
    const b = new StreamsBuilder()
    const keys: Array<Windowed<string>> = []
    b.stream('in')
      .groupByKey()
      .windowedBy(TimeWindows.ofSizeAndGrace(10, 5))
      .count()
      .suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()))
      .toStream()
      .addStatelessNode(undefined, 'KEYS', (r) => keys.push(r.key))
    const { pipe } = drive(b)
    pipe('a', 'v', 1)
    pipe('a', 'v', 30)
    assert.equal(keys.length, 1)
    const k = keys[0]!
    assert.deepStrictEqual(k, { key: 'a', window: { start: 0, end: 10 } })
    assert.equal(Object.getPrototypeOf(k), Object.prototype)
    assert.deepEqual(Reflect.ownKeys(k), ['key', 'window'])
    assert.equal(inspect(k), "{ key: 'a', window: { start: 0, end: 10 } }")
    assert.equal(JSON.stringify(k), '{"key":"a","window":{"start":0,"end":10}}')
  })
})

describe('session windows', () => {
  // Both cases give the same output in Kafka Streams 4.4's TopologyTestDriver (conformance/kafka-streams).
  it('merge records within the gap, retracting merged sessions with tombstones', () => {
    const b = new StreamsBuilder()
    const out = collect(b.stream('in').groupByKey().windowedBy(SessionWindows.ofInactivityGapAndGrace(5, 10)).count().toStream(), (k) => `${k.key}[${k.window.start},${k.window.end}]`)
    const { pipe } = drive(b)
    pipe('k', 'v', 0)
    pipe('k', 'v', 10)
    pipe('k', 'v', 5) // bridges both sessions
    assert.deepEqual(out, ['k[0,0]=1@0', 'k[10,10]=1@10', 'k[0,0]=null@0', 'k[10,10]=null@10', 'k[0,10]=3@10'])
  })

  it('a session closes gap + grace after its end: later records in reach are late, or start a new session', () => {
    const b = new StreamsBuilder()
    const out = collect(b.stream('in').groupByKey().windowedBy(SessionWindows.ofInactivityGapAndGrace(5, 2)).count().toStream(), (k) => `${k.key}[${k.window.start},${k.window.end}]`)
    const { pipe, driver } = drive(b)
    pipe('k', 'v', 20) // close time: 20 - 2 - 5 = 13
    pipe('j', 'v', 13) // ends at 13: accepted
    pipe('j', 'v', 13) // [13,13] ended at the close time: gone, so a new session [13,13], not a merge
    pipe('i', 'v', 12) // ends at 12 < 13: late
    assert.deepEqual(out, ['k[20,20]=1@20', 'j[13,13]=1@13', 'j[13,13]=1@13'])
    assert.equal(driver.metrics().droppedRecords.late, 1)
  })

  it('a closed session is not reopened by a record within its gap', () => {
    const b = new StreamsBuilder()
    const out = collect(b.stream('in').groupByKey().windowedBy(SessionWindows.ofInactivityGapAndGrace(5, 0)).count().toStream(), (k) => `${k.key}[${k.window.start},${k.window.end}]`)
    const { pipe } = drive(b)
    pipe('k', 'v', 0)
    pipe('k', 'v', 10)
    pipe('k', 'v', 5) // [0,0] is gone (0 <= 10 - 5 - 0): merges with [10,10] only
    assert.deepEqual(out, ['k[0,0]=1@0', 'k[10,10]=1@10', 'k[10,10]=null@10', 'k[5,10]=2@10'])
  })
})

describe('sliding windows (KIP-450)', () => {
  const sliding = (grace = 100) => {
    const b = new StreamsBuilder()
    const out = collect(b.stream('in').groupByKey().windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(10, grace)).count().toStream(), (k) => `[${k.window.start},${k.window.end}]`)
    return { out, ...drive(b) }
  }

  it('in order: each record gets its left window, the previous record its right window when in reach', () => {
    const { out, pipe } = sliding()
    pipe('k', 'v', 10)
    pipe('k', 'v', 15)
    pipe('k', 'v', 30)
    assert.deepEqual(out, ['[0,10]=1@10', '[11,21]=1@15', '[5,15]=2@15', '[20,30]=1@30'])
  })

  it('out of order: windows containing the record are updated, and its right window holds the later records', () => {
    const { out, pipe } = sliding()
    pipe('k', 'v', 10)
    pipe('k', 'v', 30)
    pipe('k', 'v', 25)
    assert.deepEqual(out, ['[0,10]=1@10', '[20,30]=1@30', '[20,30]=2@30', '[15,25]=1@25', '[26,36]=1@30'])
  })

  it("a left window that is also the previous record's right window is one window (replaced, as a store put)", () => {
    const { out, pipe } = sliding()
    for (const t of [13, 23, 34, 34, 24]) pipe('k', 'v', t)
    // 34's left window [24,34] is 23's right window too: created twice, kept once, then counted on.
    assert.deepEqual(out.slice(3, 5), ['[24,34]=1@34', '[24,34]=1@34'])
    assert.ok(out.includes('[24,34]=3@34'))
  })

  it("windows starting before the largest start stored - 2D - grace are gone (Kafka Streams' retention), whatever the key", () => {
    // Found by the differential fuzzer; Kafka Streams 4.4 gives the same output.
    const b = new StreamsBuilder()
    const out = collect(b.stream('in').groupByKey().windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(4, 3)).count().toStream(), (k) => `${k.key}[${k.window.start},${k.window.end}]`)
    const { pipe } = drive(b)
    pipe('C', 'v', 22)
    pipe('B', 'v', 29)
    pipe('B', 'v', 28) // stores B's right window [29,33]: C's [18,22] (18 <= 29 - 8 - 3) is gone
    pipe('C', 'v', 23) // no previous C record to make a right window for; its own left window is closed
    assert.deepEqual(out, ['C[18,22]=1@22', 'B[25,29]=1@29', 'B[25,29]=2@29', 'B[24,28]=1@28', 'B[29,33]=1@29'])
  })

  it('records before the time difference share the window [0, D]', () => {
    const { out, pipe } = sliding()
    pipe('k', 'v', 3)
    pipe('k', 'v', 7)
    assert.deepEqual(out, ['[0,10]=1@3', '[4,14]=1@7', '[0,10]=2@7'])
  })

  it('a record whose right window is closed too is late: dropped and counted', () => {
    const { out, pipe, driver } = sliding(0)
    pipe('k', 'v', 100)
    pipe('k', 'v', 80) // 80 + 1 + 10 <= 100
    assert.deepEqual(out, ['[90,100]=1@100'])
    assert.equal(driver.metrics().droppedRecords.late, 1)
  })

  it('agrees with counting the records of every window directly (property)', async () => {
    const fc = (await import('fast-check')).default
    fc.assert(
      fc.property(fc.array(fc.nat(60), { minLength: 1, maxLength: 25 }), (times) => {
        const { out, pipe } = sliding(1000)
        for (const t of times) pipe('k', 'v', t)
        // The latest count of every window must equal the number of records inside it, and every
        // window that was ever sent must contain a record.
        const latest = new Map<string, number>()
        for (const line of out) {
          const [w, rest] = line.split('=') as [string, string]
          latest.set(w, Number(rest.split('@')[0]))
        }
        for (const [w, n] of latest) {
          const [start, end] = w.slice(1, -1).split(',').map(Number) as [number, number]
          assert.equal(n, times.filter((t) => t >= start && t <= end).length, `window ${w} of ${JSON.stringify(times)}`)
        }
        // Every record has a window ending at it (or [0, 10] when it is earlier than 10).
        for (const t of times) assert.ok(latest.has(t < 10 ? '[0,10]' : `[${t - 10},${t}]`), `left window of ${t}`)
      }),
      { numRuns: Number(process.env.SLIDING_RUNS ?? 500) },
    )
  })
})

describe('DSL on the embedded runtime', () => {
  it('windowed final results over several partitions', async () => {
    const b = new StreamsBuilder()
    const results: string[] = []
    b.stream('in')
      .groupByKey()
      .windowedBy(TimeWindows.ofSizeWithNoGrace(10))
      .count()
      .suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()))
      .toStream()
      .addStatelessNode(undefined, 'OUT', (r) => results.push(`${win(r.key)}=${r.value}`))
    const rt = new EmbeddedRuntime(b.build(), { applicationId: 'dsl', topics: { in: { partitions: 3 } }, logger: silentLogger })
    await rt.start()
    const p = rt.producer('in')
    for (let i = 0; i < 30; i++) p.send(`k${i % 3}`, 'v', i)
    // Each key is in one partition; its windows close once that task's stream time passes them.
    await rt.stop()
    assert.deepEqual(results.sort(), ['k0[0,10)=4', 'k0[10,20)=3', 'k1[0,10)=3', 'k1[10,20)=4', 'k2[0,10)=3', 'k2[10,20)=3'].sort())
  })
})

describe('windowed keys', () => {
  it('are plain { key, window } objects to users (deep-equal, JSON)', () => {
    const b = new StreamsBuilder()
    const keys: unknown[] = []
    b.stream('in').groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(10)).count().toStream().addStatelessNode(undefined, 'OUT', (r) => keys.push(r.key))
    const { pipe } = drive(b)
    pipe('k', 'v', 3)
    assert.deepStrictEqual(keys, [{ key: 'k', window: { start: 0, end: 10 } }])
    assert.equal(JSON.stringify(keys[0]), '{"key":"k","window":{"start":0,"end":10}}')
  })
})

describe('the DSL as a value', () => {
  it('a KStream is no thenable: an async function may return one', async () => {
    const builder = new StreamsBuilder()
    const make = async (): Promise<KStream<string, string>> => builder.stream<string, string>('in')
    const stream = await make()
    assert.ok(stream instanceof KStream)
  })
})
