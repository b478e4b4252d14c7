import { StateDescriptors } from '../../keyed/api.js'
import type { KeyedProcessorContext, TimeDomain, TtlConfig, ValueState } from '../../keyed/api.js'
import { Topology } from '../../processor/topology.js'
import { malformed } from '../scenario.js'
import type { Scenario } from '../scenario.js'
import type { KindInstance, OutputSink, ScenarioKind } from './kind.js'

/**
 * Kind `keyed-timers`: a keyed processor with one value state (optionally with TTL). Each record's
 * value is a command for its key; timers and TTL cleanups produce outputs.
 */
export const keyedTimersKind: ScenarioKind = {
  build(scenario: Scenario, out: OutputSink): KindInstance {
    const ttl = parseTtl(scenario.topology.ttl)
    const onExpire = scenario.topology.onExpire ?? false
    if (typeof onExpire !== 'boolean') throw malformed('topology.onExpire', 'must be a boolean')
    const descriptor = StateDescriptors.value<string>('state', ttl === undefined ? {} : { ttl })
    const topology = new Topology().addSource('input', 'input').addKeyedProcessor<string, string | null>(
      'keyed',
      () => {
        let ctx: KeyedProcessorContext<string>
        let state: ValueState<string>
        return {
          init(c) {
            ctx = c
            state = c.getState(descriptor)
          },
          process(record) {
            const command = record.value ?? ''
            if (command.startsWith('set:')) state.update(command.slice(4))
            else if (command === 'get') out.emit({ key: record.key, value: state.value() ?? null, ts: record.timestamp })
            else if (command === 'clear') state.clear()
            else {
              const m = /^(timer|deltimer):(event|processing):(-?\d+)$/.exec(command)
              if (m === null) throw new Error(`unknown command ${JSON.stringify(command)}`)
              const t = Number(m[3])
              const domain = m[2] as TimeDomain
              const timers = ctx.timers
              if (m[1] === 'timer') {
                if (domain === 'event') timers.registerEventTimeTimer(t)
                else timers.registerProcessingTimeTimer(t)
              } else if (domain === 'event') timers.deleteEventTimeTimer(t)
              else timers.deleteProcessingTimeTimer(t)
            }
          },
          onTimer(timer) {
            out.emit({ timer: timer.domain, key: timer.key, at: timer.timestamp, state: state.value() ?? null })
          },
          onExpire(entry) {
            if (onExpire) out.emit({ expired: entry.key, at: entry.now })
          },
        }
      },
      'input',
    )
    return { topology, inputTopic: 'input' }
  },
}

function parseTtl(raw: unknown): TtlConfig | undefined {
  if (raw === undefined) return undefined
  if (typeof raw !== 'object' || raw === null) throw malformed('topology.ttl', 'must be an object')
  const t = raw as Record<string, unknown>
  if (typeof t.ttlMs !== 'number') throw malformed('topology.ttl.ttlMs', 'must be a number')
  for (const [field, allowed] of [
    ['update', ['onCreateAndWrite', 'onReadAndWrite']],
    ['visibility', ['neverReturnExpired', 'returnExpiredIfNotCleanedUp']],
    ['timeDomain', ['processing', 'event']],
  ] as const) {
    if (t[field] !== undefined && !(allowed as readonly unknown[]).includes(t[field])) {
      throw malformed(`topology.ttl.${field}`, `must be one of ${allowed.map((a) => JSON.stringify(a)).join(', ')}`)
    }
  }
  return t as unknown as TtlConfig
}
