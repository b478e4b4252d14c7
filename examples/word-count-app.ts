// A complete application for `punctual run`: counts words per minute of event time and prints each
// minute's final counts. Its state lives in the --state-dir; stop it and run it again and it resumes.
// Run it: npx punctual run examples/word-count-app.ts --state-dir .punctual/word-count
import { BufferConfig, Serdes, StreamsBuilder, Suppressed, TimeWindows } from 'punctual'
import type { PunctualApp, Windowed } from 'punctual'

const MINUTE = 60_000

function topology() {
  const builder = new StreamsBuilder()
  builder
    .stream<string, string>('lines')
    .flatMapValues((line) => line.toLowerCase().split(/\W+/).filter((w) => w.length > 0))
    .selectKey((_key, word) => word)
    .groupByKey()
    .windowedBy(TimeWindows.ofSizeWithNoGrace(MINUTE))
    .count()
    .suppress(Suppressed.untilWindowCloses<Windowed<string>, number>(BufferConfig.unbounded()))
    .toStream()
    .to('word-counts', { keySerde: Serdes.JSON<Windowed<string>>(), valueSerde: Serdes.Long() })
  return builder.build()
}

const lines = ['the quick brown fox', 'jumps over the lazy dog', 'the dog sleeps', 'a new minute begins']

const app: PunctualApp = {
  applicationId: 'word-count',
  topology,
  config: { topics: { lines: { partitions: 2 } } },
  async start(runtime) {
    runtime.subscribe<Windowed<string>, number>('word-counts', (r) => console.log(`minute ${r.key!.window.start / MINUTE}: ${r.key!.key} x${r.value}`), { from: 'latest' })
    // The topic is durable: the lines an earlier run sent and committed are in it already. Feed the
    // others (all of them on a fresh start, and those a run that failed before its commit had sent).
    const fed = runtime.committedEndOffsets('lines').reduce((sum, n) => sum + n, 0)
    const producer = runtime.producer<string, string>('lines')
    for (let i = fed; i < lines.length; i++) producer.send(null, lines[i]!, i * 25_000)
  },
}
export default app
