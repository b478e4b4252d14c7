import { StreamsBuilder } from '../../dsl/builder.js'
import { SessionWindows, SlidingWindows, TimeWindows } from '../../windows/windows.js'
import { malformed } from '../scenario.js'
import type { Scenario } from '../scenario.js'
import type { KindInstance, OutputSink, ScenarioKind } from './kind.js'

/**
 * Kind `stream-aggregate`: non-windowed aggregations of streams grouped by key. `count` and `reduce`
 * (the values joined with "+") read topic "in"; `cogroup` reads topics "left" and "right", cogrouped into
 * one aggregate from "" that appends "L<value>" or "R<value>", per key or, with `windows`, per key and
 * window (keys `k@start/end`): time windows (`sizeMs`, `advanceMs`, `graceMs`), sliding windows
 * (`timeDifferenceMs`, `graceMs`) or session windows (`gapMs`, `graceMs`; merged sessions' aggregates
 * concatenated). Results are strings.
 */
export const streamAggregateKind: ScenarioKind = {
  build(scenario: Scenario, out: OutputSink): KindInstance {
    const aggregate = (scenario.topology as Record<string, unknown>).aggregate
    if (aggregate !== 'count' && aggregate !== 'reduce' && aggregate !== 'cogroup') throw malformed('topology.aggregate', 'must be "count", "reduce" or "cogroup"')
    const builder = new StreamsBuilder()
    const w = (scenario.topology as Record<string, unknown>).windows as Record<string, unknown> | undefined
    // Topics "left" and "right" cogrouped, appending "L<value>" / "R<value>".
    const cogrouped = () =>
      builder
        .stream<string, string>('left')
        .groupByKey()
        .cogroup<string>((_k, v, agg) => `${agg}L${v}`)
        .cogroup(builder.stream<string, string>('right').groupByKey(), (_k, v, agg) => `${agg}R${v}`)
    if (w !== undefined) {
      // Windowed: sessions (gapMs), sliding (timeDifferenceMs) or time windows (sizeMs, advanceMs), with graceMs; keys "k@start/end".
      if (aggregate !== 'cogroup') throw malformed('topology.windows', 'applies to aggregate "cogroup" only')
      const shape = w.gapMs !== undefined ? 'gapMs' : w.timeDifferenceMs !== undefined ? 'timeDifferenceMs' : 'sizeMs'
      const fields: Array<[string, unknown, number]> = [[shape, w[shape], 1], ['graceMs', w.graceMs ?? 0, 0]]
      if (shape === 'sizeMs') fields.push(['advanceMs', w.advanceMs ?? w.sizeMs, 1])
      for (const [field, v, min] of fields) {
        if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) throw malformed(`topology.windows.${field}`, 'must be a positive integer')
      }
      const n = (field: string): number => (w[field] ?? (field === 'advanceMs' ? w.sizeMs : 0)) as number
      const table =
        shape === 'gapMs'
          ? cogrouped()
              .windowedBy(SessionWindows.ofInactivityGapAndGrace(n('gapMs'), n('graceMs')))
              .aggregate(
                () => '',
                (_k, a, b) => a + b,
              )
          : cogrouped()
              .windowedBy(shape === 'timeDifferenceMs' ? SlidingWindows.ofTimeDifferenceAndGrace(n('timeDifferenceMs'), n('graceMs')) : TimeWindows.ofSizeAndGrace(n('sizeMs'), n('graceMs')).advanceBy(n('advanceMs')))
              .aggregate(() => '')
      table.toStream().addStatelessNode<string, string | null>(undefined, 'SCENARIO-OUTPUT', (r) => out.emit({ key: `${r.key.key}@${r.key.window.start}/${r.key.window.end}`, value: r.value, ts: r.timestamp }))
      return { topology: builder.build(), inputTopic: 'left', inputTopics: ['left', 'right'] }
    }
    const result =
      aggregate === 'cogroup'
        ? cogrouped().aggregate(() => '')
        : aggregate === 'count'
          ? builder
              .stream<string, string>('in')
              .groupByKey()
              .count()
              .mapValues((n) => String(n))
          : builder
              .stream<string, string>('in')
              .groupByKey()
              .reduce((a, v) => `${a}+${v}`)
    result.toStream().addStatelessNode<string, string | null>(undefined, 'SCENARIO-OUTPUT', (r) => out.emit({ key: r.key, value: r.value, ts: r.timestamp }))
    return aggregate === 'cogroup' ? { topology: builder.build(), inputTopic: 'left', inputTopics: ['left', 'right'] } : { topology: builder.build(), inputTopic: 'in' }
  },
}
