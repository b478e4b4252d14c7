import { BufferConfig, EmbeddedRuntime, PunctuationType, Serdes, silentLogger, StreamsBuilder, Suppressed, TimeWindows, Topology } from '../../src/index.js'
import type { Windowed } from '../../src/index.js'
import type { TextRecord } from './cluster.js'

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

/** A topology (`windowedFinal` by default) in one embedded process: the output every Kafka run must match. */
export async function embedded(input: readonly TextRecord[], topology: (input: string, output: string) => Topology = windowedFinal): Promise<string[]> {
  const out: string[] = []
  const rt = new EmbeddedRuntime(topology('in', 'out'), { applicationId: 'reference', logger: silentLogger, topics: { in: { partitions: PARTITIONS }, out: { partitions: PARTITIONS } } })
  rt.subscribe<string, string>('out', (r) => out.push(`${r.key}=${r.value}`))
  rt.start()
  const producer = rt.producer<string, string>('in')
  for (const r of input) producer.send(r.key, r.value, r.timestamp)
  await rt.stop()
  return out.sort()
}


export function lines(partitions: readonly TextRecord[][]): string[] {
  return partitions.flat().map((r) => `${r.key}=${r.value}`).sort()
}

/** Waits until `condition` holds; on a timeout the error says what was awaited and, from `explain`, what was seen. */
export async function until(what: string, condition: () => boolean | Promise<boolean>, timeoutMs = 60_000, explain?: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}${explain === undefined ? '' : ` (${explain()})`}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

