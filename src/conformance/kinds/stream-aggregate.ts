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
    if (w !== undefined && w.gapMs !== undefined) {
      // A session-windowed cogroup: gapMs and graceMs; keys "k@start/end".
      if (aggregate !== 'cogroup') throw malformed('topology.windows', 'applies to aggregate "cogroup" only')
      const gap = w.gapMs
      const grace = w.graceMs ?? 0
      for (const [field, v] of [['gapMs', gap], ['graceMs', grace]] as const) {
        if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < (field === 'graceMs' ? 0 : 1)) throw malformed(`topology.windows.${field}`, 'must be a positive integer')
      }
      builder
        .stream<string, string>('left')
        .groupByKey()
        .cogroup<string>((_k, v, agg) => `${agg}L${v}`)
        .cogroup(builder.stream<string, string>('right').groupByKey(), (_k, v, agg) => `${agg}R${v}`)
        .windowedBy(SessionWindows.ofInactivityGapAndGrace(gap as number, grace as number))
        .aggregate(
          () => '',
          (_k, a, b) => a + b,
        )
        .toStream()
        .addStatelessNode<string, string | null>(undefined, 'SCENARIO-OUTPUT', (r) => out.emit({ key: `${r.key.key}@${r.key.window.start}/${r.key.window.end}`, value: r.value, ts: r.timestamp }))
      return { topology: builder.build(), inputTopic: 'left', inputTopics: ['left', 'right'] }
    }
    if (w !== undefined && w.timeDifferenceMs !== undefined) {
      // A sliding-window cogroup: timeDifferenceMs and graceMs; keys "k@start/end".
      if (aggregate !== 'cogroup') throw malformed('topology.windows', 'applies to aggregate "cogroup" only')
      const diff = w.timeDifferenceMs
      const grace = w.graceMs ?? 0
      for (const [field, v] of [['timeDifferenceMs', diff], ['graceMs', grace]] as const) {
        if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < (field === 'graceMs' ? 0 : 1)) throw malformed(`topology.windows.${field}`, 'must be a positive integer')
      }
      builder
        .stream<string, string>('left')
        .groupByKey()
        .cogroup<string>((_k, v, agg) => `${agg}L${v}`)
        .cogroup(builder.stream<string, string>('right').groupByKey(), (_k, v, agg) => `${agg}R${v}`)
        .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(diff as number, grace as number))
        .aggregate(() => '')
        .toStream()
        .addStatelessNode<string, string | null>(undefined, 'SCENARIO-OUTPUT', (r) => out.emit({ key: `${r.key.key}@${r.key.window.start}/${r.key.window.end}`, value: r.value, ts: r.timestamp }))
      return { topology: builder.build(), inputTopic: 'left', inputTopics: ['left', 'right'] }
    }
    if (w !== undefined) {
      // A windowed cogroup: tumbling (sizeMs) or hopping (advanceMs) windows with graceMs; keys "k@start/end".
      if (aggregate !== 'cogroup') throw malformed('topology.windows', 'applies to aggregate "cogroup" only')
      const size = w.sizeMs
      const grace = w.graceMs ?? 0
      const advance = w.advanceMs ?? size
      for (const [field, v] of [['sizeMs', size], ['graceMs', grace], ['advanceMs', advance]] as const) {
        if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < (field === 'graceMs' ? 0 : 1)) throw malformed(`topology.windows.${field}`, 'must be a positive integer')
      }
      const windows = TimeWindows.ofSizeAndGrace(size as number, grace as number).advanceBy(advance as number)
      builder
        .stream<string, string>('left')
        .groupByKey()
        .cogroup<string>((_k, v, agg) => `${agg}L${v}`)
        .cogroup(builder.stream<string, string>('right').groupByKey(), (_k, v, agg) => `${agg}R${v}`)
        .windowedBy(windows)
        .aggregate(() => '')
        .toStream()
        .addStatelessNode<string, string | null>(undefined, 'SCENARIO-OUTPUT', (r) => out.emit({ key: `${r.key.key}@${r.key.window.start}/${r.key.window.end}`, value: r.value, ts: r.timestamp }))
      return { topology: builder.build(), inputTopic: 'left', inputTopics: ['left', 'right'] }
    }
    const result =
      aggregate === 'cogroup'
        ? builder
            .stream<string, string>('left')
            .groupByKey()
            .cogroup<string>((_k, v, agg) => `${agg}L${v}`)
            .cogroup(builder.stream<string, string>('right').groupByKey(), (_k, v, agg) => `${agg}R${v}`)
            .aggregate(() => '')
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
