import type { ProcessorContext, ScheduleSpec, StreamRecord } from '../../src/index.js'
import { Topology } from '../../src/index.js'

export interface Fire {
  readonly id: string
  readonly ts: number
}

/**
 * A topology whose one processor registers the given schedules in init and records every firing (and
 * every record it sees) in arrays the test can assert on.
 */
export function punctuationTopology(schedules: ReadonlyArray<{ id: string; spec: ScheduleSpec }>): {
  topology: Topology
  fires: Fire[]
  seen: Array<StreamRecord<string, string>>
  context: () => ProcessorContext<string, string>
} {
  const fires: Fire[] = []
  const seen: Array<StreamRecord<string, string>> = []
  let ctx: ProcessorContext<string, string> | undefined
  const topology = new Topology().addSource('in', 'input').addProcessor<string, string, string, string>(
    'p',
    () => ({
      init(context) {
        ctx = context
        for (const s of schedules) context.schedule(s.spec, (ts) => fires.push({ id: s.id, ts }))
      },
      process(record) {
        seen.push(record)
      },
    }),
    'in',
  )
  return {
    topology,
    fires,
    seen,
    context: () => {
      if (ctx === undefined) throw new Error('processor not initialized')
      return ctx
    },
  }
}
