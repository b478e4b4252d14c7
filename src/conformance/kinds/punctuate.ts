import type { MissedTriggerPolicy, ProcessorContext, ScheduleSpec } from '../../processor/api.js'
import { PunctuationType } from '../../processor/api.js'
import type { Cancellable } from '../../processor/api.js'
import { Topology } from '../../processor/topology.js'
import { malformed } from '../scenario.js'
import type { Scenario, Step } from '../scenario.js'
import type { KindInstance, OutputSink, ScenarioKind } from './kind.js'

interface ScheduleDef {
  readonly id: string
  readonly spec: ScheduleSpec
}

/** Kind `punctuate`: a processor that swallows its input and emits one output per punctuation. */
export const punctuateKind: ScenarioKind = {
  build(scenario: Scenario, out: OutputSink): KindInstance {
    const raw = scenario.topology.schedules
    if (!Array.isArray(raw)) throw malformed('topology.schedules', 'must be an array')
    const initial = raw.map((s, i) => parseSchedule(s, `topology.schedules[${i}]`))
    let context: ProcessorContext | undefined
    const active = new Map<string, Cancellable>()
    const register = (def: ScheduleDef): void => {
      const ctx = context as ProcessorContext
      active.set(def.id, ctx.schedule(def.spec, (ts) => out.emit({ punctuation: def.id, ts })))
    }
    const topology = new Topology()
      .addSource('input', 'input')
      .addProcessor(
        'punctuate',
        () => ({
          init(ctx: ProcessorContext) {
            context = ctx
            for (const def of initial) register(def)
          },
          process() {},
        }),
        'input',
      )
    return {
      topology,
      inputTopic: 'input',
      handleStep(step: Step, where: string): boolean {
        if ('schedule' in step) {
          register(parseSchedule(step.schedule, `${where}.schedule`))
          return true
        }
        if ('cancel' in step) {
          const c = active.get(step.cancel)
          if (c === undefined) throw malformed(`${where}.cancel`, `names no registered schedule: ${JSON.stringify(step.cancel)}`)
          c.cancel()
          return true
        }
        return false
      },
    }
  },
}

function parseSchedule(s: unknown, where: string): ScheduleDef {
  if (typeof s !== 'object' || s === null) throw malformed(where, 'must be an object')
  const o = s as Record<string, unknown>
  if (typeof o.id !== 'string') throw malformed(`${where}.id`, 'must be a string')
  if (o.type !== 'stream' && o.type !== 'wall') throw malformed(`${where}.type`, 'must be "stream" or "wall"')
  const type = o.type === 'stream' ? PunctuationType.STREAM_TIME : PunctuationType.WALL_CLOCK_TIME
  if (o.onMissed !== undefined && o.onMissed !== 'skip' && o.onMissed !== 'fireOnce') throw malformed(`${where}.onMissed`, 'must be "skip" or "fireOnce"')
  const common = { name: o.id, ...(o.onMissed === undefined ? {} : { onMissed: o.onMissed as MissedTriggerPolicy }) }
  if (o.cron !== undefined) {
    if (typeof o.cron !== 'string') throw malformed(`${where}.cron`, 'must be a string')
    if (o.timeZone !== undefined && typeof o.timeZone !== 'string') throw malformed(`${where}.timeZone`, 'must be a string')
    if (type !== PunctuationType.WALL_CLOCK_TIME) throw malformed(`${where}.cron`, 'is allowed for type "wall" only')
    return { id: o.id, spec: { ...common, type, cron: o.cron, ...(o.timeZone === undefined ? {} : { timeZone: o.timeZone }) } }
  }
  if (typeof o.intervalMs !== 'number') throw malformed(`${where}.intervalMs`, 'must be a number (or give cron)')
  if (o.startMs !== undefined && typeof o.startMs !== 'number') throw malformed(`${where}.startMs`, 'must be a number')
  return { id: o.id, spec: { ...common, type, intervalMs: o.intervalMs, ...(o.startMs === undefined ? {} : { startTime: o.startMs }) } }
}
