import { Serdes, Topology } from '../../src/index.js'
import type { KeyedProcessor, KeyedProcessorContext, StoreKey } from '../../src/index.js'
import { TopologyTestDriver } from '../../src/testing/index.js'
import type { TestDriverOptions } from '../../src/testing/index.js'

/**
 * A driver around one keyed processor built by `make(ctx)`; records are piped with string keys and
 * values. Returns the driver, a `pipe` helper and the events the processor pushed.
 */
export function keyedDriver<E>(
  make: (ctx: KeyedProcessorContext<string, string, string>, events: E[]) => Omit<KeyedProcessor<string, string, string, string>, 'init'>,
  options: TestDriverOptions = {},
) {
  const events: E[] = []
  const topology = new Topology().addSource('in', 'input').addKeyedProcessor<string, string, string, string>(
    'keyed',
    () => {
      let inner: Omit<KeyedProcessor<string, string, string, string>, 'init'> | undefined
      return {
        init(ctx) {
          inner = make(ctx, events)
        },
        process: (r) => inner!.process(r),
        onTimer: (t) => inner!.onTimer?.(t),
        onExpire: (e) => inner!.onExpire?.(e),
      }
    },
    'in',
  )
  const driver = new TopologyTestDriver(topology, { errorHandler: () => 'fail', ...options })
  const input = driver.createInputTopic('input', Serdes.String(), Serdes.String())
  return { driver, events, pipe: (key: string, value: string, ts: number) => input.pipeInput(key, value, ts) }
}

export type Key = StoreKey
