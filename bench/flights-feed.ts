import { Serdes } from '../src/index.js'
import type { EmbeddedRuntime } from '../src/index.js'
import type { Flights } from '../demo/flights/data.js'

/** Records sent per batch; the producer waits while the runtime is more than one batch behind. */
const BATCH = 50_000

/**
 * Feeds the flights to topic `flights` in replay order (origin -> delay, at the scheduled time), keeping
 * at most two batches ahead of what the runtime processed; `afterBatch` runs after each batch is sent.
 */
export async function feedFlights(rt: EmbeddedRuntime, f: Flights, afterBatch?: () => void): Promise<void> {
  const producer = rt.producer<string, number>('flights', { valueSerde: Serdes.Double() })
  for (let start = 0; start < f.count; start += BATCH) {
    const end = Math.min(f.count, start + BATCH)
    for (let j = start; j < end; j++) {
      const i = f.replayOrder[j] as number
      producer.send(f.origin[i] as string, f.delay[i] as number, f.scheduled[i] as number)
    }
    while (rt.metrics().processedRecords < end - BATCH) await new Promise((r) => setImmediate(r))
    afterBatch?.()
  }
}
