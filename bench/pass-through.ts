import { EmbeddedRuntime, silentLogger, Topology } from '../src/index.js'
import { sleep } from './stats.js'

export interface ThroughputResult {
  readonly records: number
  readonly partitions: number
  readonly seconds: number
  readonly recordsPerSecond: number
}

/**
 * Records per second through source -> sink on the embedded runtime: string keys and values,
 * deserialized and serialized again, with the records written before the clock starts.
 */
export async function passThrough(records = 2_000_000, partitions = 1): Promise<ThroughputResult> {
  const topology = new Topology().addSource('src', 'in').addSink('sink', 'out', {}, 'src')
  const rt = new EmbeddedRuntime(topology, {
    applicationId: 'bench-pass-through',
    topics: { in: { partitions }, out: { partitions } },
    logger: silentLogger,
  })
  const producer = rt.producer('in')
  for (let i = 0; i < records; i++) producer.send('key-' + (i % 10_000), 'value-' + i, i)
  const t0 = performance.now()
  await rt.start()
  while (rt.metrics().processedRecords < records) await sleep(1)
  const seconds = (performance.now() - t0) / 1000
  await rt.stop()
  return { records, partitions, seconds, recordsPerSecond: records / seconds }
}
