import { StreamsBuilder } from '../../dsl/builder.js'
import { Serdes } from '../../processor/serdes.js'
import { malformed } from '../scenario.js'
import type { Scenario } from '../scenario.js'
import type { KindInstance, OutputSink, ScenarioKind } from './kind.js'

/** A value `group:number` as its group and number (the kind's inputs are all of that form). */
function split(value: string): { key: string; value: string } {
  const at = value.indexOf(':')
  if (at < 0) throw new Error(`table-aggregate: the value ${JSON.stringify(value)} is not "group:number"`)
  return { key: value.slice(0, at), value: value.slice(at + 1) }
}

/**
 * Kind `table-aggregate`: the table of topic "in" (values `group:number`) grouped by the group with
 * `KTable.groupBy`, then `count`, `sum` (an `aggregate` of the numbers) or `reduce` (the numbers' sum,
 * as strings); the results as strings. With `derive`, the table is filtered (group z dropped), mapped
 * (numbers times 10), or both, before it is grouped.
 */
export const tableAggregateKind: ScenarioKind = {
  build(scenario: Scenario, out: OutputSink): KindInstance {
    const aggregate = (scenario.topology as Record<string, unknown>).aggregate
    if (aggregate !== 'count' && aggregate !== 'sum' && aggregate !== 'reduce') throw malformed('topology.aggregate', 'must be "count", "sum" or "reduce"')
    const derive = (scenario.topology as Record<string, unknown>).derive
    if (derive !== undefined && derive !== 'filter' && derive !== 'mapValues' && derive !== 'filterMapValues') throw malformed('topology.derive', 'must be "filter", "mapValues" or "filterMapValues"')
    const builder = new StreamsBuilder()
    let table = builder.table<string, string>('in')
    // Derived first: filter drops group z, mapValues multiplies the number by 10.
    if (derive === 'filter' || derive === 'filterMapValues') table = table.filter((_k, v) => !v.startsWith('z'))
    if (derive === 'mapValues' || derive === 'filterMapValues') table = table.mapValues((v) => `${v}0`)
    const grouped = table.groupBy((_k, v) => split(v), { keySerde: Serdes.String(), valueSerde: Serdes.String() })
    const result =
      aggregate === 'count'
        ? grouped.count().mapValues((n) => String(n))
        : aggregate === 'sum'
          ? grouped
              .aggregate(
                () => 0,
                (_g, v, sum) => sum + Number(v),
                (_g, v, sum) => sum - Number(v),
              )
              .mapValues((n) => String(n))
          : grouped.reduce(
              (a, v) => String(Number(a) + Number(v)),
              (a, v) => String(Number(a) - Number(v)),
            )
    result.toStream().addStatelessNode<string, string | null>(undefined, 'SCENARIO-OUTPUT', (r) => out.emit({ key: r.key, value: r.value, ts: r.timestamp }))
    return { topology: builder.build(), inputTopic: 'in' }
  },
}
