import { EmbeddedRuntime, PunctuationType, silentLogger, Topology } from '../src/index.js'
import type { ProcessorContext } from '../src/index.js'
import { percentiles, preciseClock, sleep } from './stats.js'

export interface LatenessResult {
  readonly mode: 'idle' | 'load'
  readonly p50Ms: number
  readonly p99Ms: number
  readonly maxMs: number
  readonly fires: number
  readonly expectedFires: number
  readonly recordsProcessed: number
}

/**
 * Lateness of a 10 ms wall-clock punctuation: for each call, `now` minus the due time it was due at
 * (the first grid point after the previous call), so a late call that collapsed points counts fully.
 */
export async function punctuationLateness(mode: 'idle' | 'load', durationMs = 10_000, intervalMs = 10): Promise<LatenessResult> {
  const lateness: number[] = []
  const start = Math.ceil(preciseClock.now()) + 50
  let nextDue = start
  const topology = new Topology()
    .addSource('src', 'in')
    .addProcessor(
      'tick',
      () => ({
        init(ctx: ProcessorContext) {
          ctx.schedule({ type: PunctuationType.WALL_CLOCK_TIME, intervalMs, startTime: start }, (now) => {
            lateness.push(now - nextDue)
            nextDue += (Math.floor((now - nextDue) / intervalMs) + 1) * intervalMs
          })
        },
        process() {},
      }),
      'src',
    )
    .addSink('sink', 'out', {}, 'src')
  const rt = new EmbeddedRuntime(topology, { applicationId: 'bench-lateness', clock: preciseClock, logger: silentLogger })
  await rt.start()
  const end = start + durationMs
  if (mode === 'idle') {
    await sleep(end - preciseClock.now())
  } else {
    // Keep the input topped up so the runtime always has records to process.
    const producer = rt.producer('in')
    const out = rt.subscribe('out', () => {})
    let sent = 0
    while (preciseClock.now() < end) {
      const backlog = sent - rt.metrics().processedRecords
      // Small batches: the producer shares the event loop with the runtime it measures.
      if (backlog < 100_000) for (let i = 0; i < 2_000; i++) producer.send('key-' + (i & 1023), 'value', sent++)
      await new Promise((r) => setImmediate(r))
    }
    out()
  }
  const recordsProcessed = rt.metrics().processedRecords
  await rt.stop({ drain: false })
  const p = percentiles(lateness)
  return { mode, p50Ms: p.p50, p99Ms: p.p99, maxMs: p.max, fires: p.count, expectedFires: Math.floor(durationMs / intervalMs) + 1, recordsProcessed }
}
