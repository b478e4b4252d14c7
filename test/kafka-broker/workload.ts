import { BufferConfig, EmbeddedRuntime, PunctuationType, Serdes, silentLogger, StreamsBuilder, Suppressed, TimeWindows, Topology } from '../../src/index.js'
import type { Windowed } from '../../src/index.js'
import { loadFlights } from '../../demo/flights/data.js'
import { flightsTopology } from '../../demo/flights/topology.js'
import type { ReadRecord, TextRecord } from './cluster.js'

// The workload of the Kafka runtime's tests, shared by the test files and the instances they start as
// processes of their own.

export const MINUTE = 60_000
export const PARTITIONS = 4

/** Counts per key in 10-minute windows with 5 minutes of grace, final results only, as "key@start" -> count. */
export function windowedFinal(input: string, output: string): Topology {
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

/**
 * Counts per key in a key-value store with a changelog ("key" -> count), every update written: a task
 * restored from a changelog that lost updates, or applied stale ones, counts on from a wrong number.
 */
export function counts(input: string, output: string): Topology {
  const b = new StreamsBuilder()
  b.stream<string, string>(input, { keySerde: Serdes.String(), valueSerde: Serdes.String() })
    .groupByKey()
    .count({ name: 'counts' })
    .toStream()
    .mapValues((v) => String(v))
    .to(output, { keySerde: Serdes.String(), valueSerde: Serdes.String() })
  return b.build()
}

/** Characters of each `padded` value: its round (one digit), then its key's letter repeated. */
export const PADDED_VALUE_CHARS = 250

/**
 * Per key, its values joined in a table of strings ("padded", a persistent store): state grows with
 * the keys, PADDED_VALUE_CHARS characters per record. Once a key has two records the output gets a
 * summary of them, `<first round><second round><letter><length>`: "01" + the key's letter + "500" when
 * both came, in order, whole.
 */
export function padded(input: string, output: string): Topology {
  const str = { keySerde: Serdes.String(), valueSerde: Serdes.String() }
  const b = new StreamsBuilder()
  b.stream<string, string>(input, str)
    .groupByKey()
    .aggregate(
      () => '',
      (_key, value, joined: string) => joined + value,
      { name: 'padded', valueSerde: Serdes.String() },
    )
    .toStream()
    .filter((_key, joined) => joined !== null && joined.length > PADDED_VALUE_CHARS)
    .mapValues((joined) => (joined === null ? '' : `${joined[0]}${joined[PADDED_VALUE_CHARS]}${joined[1]}${joined.length}`))
    .to(output, str)
  return b.build()
}

/** The `padded` input of one round over keys p0..p{keys-1}: each key's value, its letter from its number. */
export function paddedRound(round: number, keys: number): TextRecord[] {
  return Array.from({ length: keys }, (_, i) => ({ key: `p${i}`, value: `${round}${String.fromCharCode(97 + (i % 26)).repeat(PADDED_VALUE_CHARS - 1)}`, timestamp: 1_700_000_000_000 + round * 1000 }))
}

/** How many records of each key `input` holds: what `counts` must end with. */
export function countsOf(input: readonly TextRecord[]): Map<string, number> {
  const truth = new Map<string, number>()
  for (const r of input) truth.set(r.key, (truth.get(r.key) ?? 0) + 1)
  return truth
}

/** `n` records over 40 keys, a second apart, a tenth of them up to 8 minutes late. */
export function records(n: number, from = 0): TextRecord[] {
  let seed = 42 + from
  const random = (): number => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648)
  return Array.from({ length: n }, (_, j) => {
    const i = from + j
    const late = random() < 0.1 ? Math.floor(random() * 8 * MINUTE) : 0
    return { key: `k${Math.floor(random() * 40)}`, value: String(i), timestamp: 1_700_000_000_000 + i * 1000 - late }
  })
}

/**
 * Each task ticks on a stream-time punctuation every 5 minutes, anchored at whole 5 minutes, writing
 * "p<partition>" -> "<grid point>": a task that moves must neither tick a grid point twice nor skip one.
 */
export function ticks(input: string, output: string): Topology {
  return new Topology()
    .addSource<string, string>('in', input, { keySerde: Serdes.String(), valueSerde: Serdes.String() })
    .addProcessor<string, string, string, string>(
      'ticker',
      () => ({
        init(ctx) {
          ctx.schedule({ type: PunctuationType.STREAM_TIME, intervalMs: 5 * MINUTE, startTime: 0 }, (at) => {
            ctx.forward({ key: `p${ctx.taskId.partition}`, value: String(at), timestamp: at, headers: [] })
          })
        },
        process() {},
      }),
      'in',
    )
    .addSink('out', output, { keySerde: Serdes.String(), valueSerde: Serdes.String() }, 'ticker')
}

/**
 * A topology (`windowedFinal` by default) in one embedded process: the output every Kafka run must
 * match. `inspect` sees the runtime once every record is processed, before it stops.
 */
export async function embedded(
  input: readonly TextRecord[],
  topology: (input: string, output: string) => Topology = windowedFinal,
  inspect?: (runtime: EmbeddedRuntime) => void,
): Promise<string[]> {
  const out: string[] = []
  const rt = new EmbeddedRuntime(topology('in', 'out'), { applicationId: 'reference', logger: silentLogger, topics: { in: { partitions: PARTITIONS }, out: { partitions: PARTITIONS } } })
  rt.subscribe<string, string>('out', (r) => out.push(`${r.key}=${r.value}`))
  await rt.start()
  const producer = rt.producer<string, string>('in')
  for (const r of input) producer.send(r.key, r.value, r.timestamp)
  if (inspect !== undefined) {
    await rt.idle()
    inspect(rt)
  }
  await rt.stop()
  return out.sort()
}


export function lines(partitions: readonly TextRecord[][]): string[] {
  return partitions.flat().map((r) => `${r.key}=${r.value}`).sort()
}

/** Compares two outputs as multisets of lines: what `expected` has more of (missing), and what `actual` has more of (extra). */
export function outputDifference(expected: readonly string[], actual: readonly string[]): { missing: string[]; extra: string[] } {
  const left = new Map<string, number>()
  for (const l of expected) left.set(l, (left.get(l) ?? 0) + 1)
  const extra: string[] = []
  for (const l of actual) {
    const n = left.get(l) ?? 0
    if (n === 0) extra.push(l)
    else left.set(l, n - 1)
  }
  const missing = [...left].filter(([, n]) => n > 0).map(([l]) => l)
  return { missing, extra }
}

/** Waits until `condition` holds; on a timeout the error says what was awaited and, from `explain`, what was seen. */
export async function until(what: string, condition: () => boolean | Promise<boolean>, timeoutMs = 60_000, explain?: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}${explain === undefined ? '' : ` (${explain()})`}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** The flights demo's topics, and those whose output is compared (progress comes from the wall clock). */
export const FLIGHT_TOPICS = ['flights', 'hourly-delays', 'daily-reports', 'progress', 'airport-alerts'] as const
export const FLIGHT_OUTPUTS = ['hourly-delays', 'daily-reports', 'airport-alerts'] as const

/** The first `n` flights in replay order, as the demo feeds them: origin -> JSON of delay, distance, destination. */
export async function flightRecords(n: number): Promise<TextRecord[]> {
  const f = await loadFlights(n)
  return Array.from(f.replayOrder, (i) => ({
    key: f.origin[i] as string,
    value: JSON.stringify({ delay: f.delay[i], distance: f.distance[i], destination: f.destination[i] }),
    timestamp: f.scheduled[i] as number,
  }))
}

/** An output record as compared across runs: topic, key and value bytes, timestamp. */
export function outputLine(topic: string, key: Uint8Array | null, value: Uint8Array | null, timestamp: number): string {
  const hex = (b: Uint8Array | null): string => (b === null ? '-' : Buffer.from(b).toString('hex'))
  return `${topic}|${hex(key)}|${hex(value)}|${timestamp}`
}

/** What the flights demo writes (hourly delays, daily reports, airport alerts) in one embedded run over `input`. */
export async function embeddedFlights(input: readonly TextRecord[]): Promise<string[]> {
  const out: string[] = []
  const topics = Object.fromEntries(FLIGHT_TOPICS.map((t) => [t, { partitions: PARTITIONS }]))
  const rt = new EmbeddedRuntime(flightsTopology({ progressStartMs: 0 }), { applicationId: 'reference-flights', logger: silentLogger, topics })
  for (const topic of FLIGHT_OUTPUTS) {
    rt.subscribe<Uint8Array, Uint8Array>(topic, (r) => out.push(outputLine(topic, r.key, r.value, r.timestamp)), { keySerde: Serdes.Bytes(), valueSerde: Serdes.Bytes() })
  }
  await rt.start()
  const producer = rt.producer<string, Uint8Array>('flights', { valueSerde: Serdes.Bytes() })
  for (const r of input) producer.send(r.key, Buffer.from(r.value), r.timestamp)
  await rt.stop()
  return out.sort()
}

/** The flights demo's compared output as read from the cluster, topics named `<prefix><topic>`. */
export function flightLines(prefix: string, read: ReadonlyMap<string, readonly ReadRecord[]>): string[] {
  const out: string[] = []
  for (const [topic, records] of read) for (const r of records) out.push(outputLine(topic.slice(prefix.length), Buffer.from(r.key), r.bytes, r.timestamp))
  return out.sort()
}
