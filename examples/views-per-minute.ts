// The README's DSL example, compiled and tested (test/examples.test.ts).
import { BufferConfig, Serdes, StreamsBuilder, Suppressed, TimeWindows } from '../src/index.js'
import type { Topology, Windowed } from '../src/index.js'

export function viewsPerMinute(): Topology {
  const builder = new StreamsBuilder()
  builder
    .stream<string, string>('page-views') // key: user, value: page
    .filter((_user, page) => !page.startsWith('/health'))
    .groupByKey()
    .windowedBy(TimeWindows.ofSizeAndGrace(60_000, 10_000)) // 1-minute windows, 10 s grace
    .count()
    .suppress(Suppressed.untilWindowCloses<Windowed<string>, number>(BufferConfig.unbounded()))
    .toStream()
    .to('views-per-minute', { keySerde: Serdes.JSON<Windowed<string>>(), valueSerde: Serdes.Long() })
  return builder.build()
}
