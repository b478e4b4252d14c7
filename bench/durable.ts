import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { EmbeddedRuntime, silentLogger, StateDescriptors, Topology } from '../src/index.js'
import type { KeyedProcessorContext, ValueState } from '../src/index.js'

export interface RestoreResult {
  readonly keys: number
  readonly timers: number
  readonly firstRunSeconds: number
  readonly commitMeanMs: number
  readonly commitMaxMs: number
  readonly commits: number
  readonly restoreSeconds: number
}

/** A keyed processor keeping one value and one event-time timer per key. */
function topology(): Topology {
  return new Topology().addSource('in', 'input').addKeyedProcessor<string, string>(
    'k',
    () => {
      let ctx: KeyedProcessorContext<string>
      let state: ValueState<number>
      return {
        init(c) {
          ctx = c
          state = c.getState(StateDescriptors.value<number>('v'))
        },
        process(r) {
          state.update(r.timestamp)
          ctx.timers.registerEventTimeTimer(r.timestamp + 1_000_000_000)
        },
      }
    },
    'in',
  )
}

/**
 * Durable state at scale: one task with `keys` keys in value state and as many pending timers, written
 * by incremental commits; then the time a restart takes to restore them (start() of a new runtime).
 */
export async function restoreTime(keys = 1_000_000): Promise<RestoreResult> {
  const dir = join(mkdtempSync(join(tmpdir(), 'punctual-durable-')), 'state')
  let t0 = performance.now()
  const first = new EmbeddedRuntime(topology(), { applicationId: 'bench-durable', stateDir: dir, logger: silentLogger })
  first.start()
  const p = first.producer('input')
  const BATCH = 50_000
  for (let start = 0; start < keys; start += BATCH) {
    for (let i = start; i < Math.min(keys, start + BATCH); i++) p.send(`key-${i}`, 'v', i)
    while (first.metrics().processedRecords < Math.min(keys, start + BATCH) - BATCH) await new Promise((r) => setImmediate(r))
  }
  await first.stop()
  const firstRunSeconds = (performance.now() - t0) / 1000
  const stats = first.commitStats()
  t0 = performance.now()
  const second = new EmbeddedRuntime(topology(), { applicationId: 'bench-durable', stateDir: dir, logger: silentLogger })
  second.start()
  const restoreSeconds = (performance.now() - t0) / 1000
  await second.stop()
  rmSync(dir, { recursive: true, force: true })
  return { keys, timers: keys, firstRunSeconds, commitMeanMs: stats.meanMs, commitMaxMs: stats.maxMs, commits: stats.commits, restoreSeconds }
}
