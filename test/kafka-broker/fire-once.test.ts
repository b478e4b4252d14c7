import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { createConsoleLogger, PunctuationType, Serdes, silentLogger, Topology } from '../../src/index.js'
import type { ProcessorContext } from '../../src/index.js'
import { KafkaRuntime } from '../../src/kafka/kafka-runtime.js'
import { ManualClock } from '../../src/testing/index.js'
import { bootstrapServers } from './cluster.js'
import { onSharedBroker } from './shared-broker.js'
import { until } from './workload.js'

// Near the real time: the broker refuses record timestamps more than an hour ahead of its clock.
const T0 = Math.floor(Date.now() / 1000) * 1000
const str = { keySerde: Serdes.String(), valueSerde: Serdes.String() }

/** A wall-clock punctuation every second from T0, `fireOnce` on missed triggers, writing "tick" -> when it ran. */
function ticking(input: string, output: string): Topology {
  return new Topology()
    .addSource('in', input, str)
    .addProcessor(
      'ticker',
      () => ({
        init(ctx: ProcessorContext<string, string>) {
          ctx.schedule({ type: PunctuationType.WALL_CLOCK_TIME, intervalMs: 1000, startTime: T0, onMissed: 'fireOnce', name: 'tick' }, (now) => {
            ctx.forward({ key: 'tick', value: String(now - T0), timestamp: now, headers: [] })
          })
        },
        process() {},
      }),
      'in',
    )
    .addSink('out', output, str, 'ticker')
}

const turns = async (n = 20): Promise<void> => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r))
}

describe('KafkaRuntime: a missed-trigger policy across instances', () => {
  const broker = onSharedBroker('fo1')
  const { run } = broker

  it("onMissed 'fireOnce': the instance that takes a task over after grid points went by with no owner makes one catch-up call, then keeps the grid", async () => {
    await broker.cluster.createTopic(`${run}-in`, 1)
    await broker.cluster.createTopic(`${run}-out`, 1)
    const clock = new ManualClock(T0 - 500)
    const runtime = (): KafkaRuntime => {
      const rt = new KafkaRuntime(ticking(`${run}-in`, `${run}-out`), { applicationId: `${run}-app`, bootstrapServers: bootstrapServers(), groupProtocol: 'consumer', processingGuarantee: 'exactly_once_v2', clock, scheduler: clock, logger: process.env.PUNCTUAL_KAFKA_TEST_DEBUG === '1' ? createConsoleLogger({ level: 'debug', write: (line) => process.stderr.write(`${line}\n`) }) : silentLogger })
      broker.track(rt)
      return rt
    }
    // Each second of the clock makes one call due: it has run once the runtime counts it (a loaded machine
    // may take more than a few event-loop turns to get there).
    const tick = async (rt: KafkaRuntime): Promise<void> => {
      const before = rt.metrics().punctuations
      clock.advance(1000)
      await until(`the call due by ${clock.now() - T0} ran`, () => rt.metrics().punctuations > before)
      await turns()
    }

    const first = runtime()
    await first.start()
    await until('the first instance runs the task', () => first.taskIds().length === 1)
    // Due at 0, 1000 and 2000 (ms after T0).
    for (let i = 0; i < 3; i++) await tick(first)
    await first.stop()
    // 3000 to 6000 go by with no instance running the task.
    clock.advance(4000)
    const second = runtime()
    await second.start()
    await until('the second instance runs the task', () => second.taskIds().length === 1)
    await until('the catch-up call ran', () => second.metrics().punctuations >= 1)
    await turns()
    // Then 7000, on the grid.
    await tick(second)
    await second.stop()

    const out = (await broker.cluster.readAll(`${run}-out`, 1)).flat().map((r) => Number(r.value))
    assert.deepEqual(out, [0, 1000, 2000, 6500, 7000], 'one catch-up call (at the restore, 6500) for the four missed points, then the grid')
  })
})
