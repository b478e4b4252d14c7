// Page views per user and minute with the DSL: 1-minute windows with 10 s of grace, and only each
// window's final count (suppression until the window closes).
// Run it: npx tsx examples/views-per-minute.ts (on the embedded runtime, in memory).
import { pathToFileURL } from 'node:url'
import { BufferConfig, EmbeddedRuntime, Serdes, StreamsBuilder, Suppressed, TimeWindows } from 'punctual'
import type { Topology, Windowed } from 'punctual'

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

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const runtime = new EmbeddedRuntime(viewsPerMinute(), { applicationId: 'views-per-minute' })
  runtime.subscribe<Windowed<string>, number>('views-per-minute', (r) => console.log(`${r.key!.key}\t[${r.key!.window.start}, ${r.key!.window.end})\t${r.value}`))
  await runtime.start()
  const views = runtime.producer<string, string>('page-views')
  views.send('ann', '/home', 1_000)
  views.send('ann', '/health', 2_000) // filtered out
  views.send('ann', '/cart', 59_000)
  views.send('bob', '/home', 70_000) // stream time 70 000: the window [0, 60 000) and its grace are over
  await runtime.stop()
}
