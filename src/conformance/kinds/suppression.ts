import { StreamsBuilder } from '../../dsl/builder.js'
import type { KStream } from '../../dsl/kstream.js'
import type { KTable } from '../../dsl/ktable.js'
import { PunctualError } from '../../errors.js'
import { BufferConfig, Suppressed } from '../../suppress/config.js'
import type { StrictBufferConfig } from '../../suppress/config.js'
import { SessionWindows, SlidingWindows, TimeWindows } from '../../windows/windows.js'
import type { Windowed } from '../../windows/windows.js'
import { malformed } from '../scenario.js'
import type { Scenario } from '../scenario.js'
import type { KindInstance, OutputSink, ScenarioKind } from './kind.js'

type Obj = Record<string, unknown>

const num = (o: Obj, field: string, where: string, min = 0): number | undefined => {
  const v = o[field]
  if (v === undefined) return undefined
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) throw malformed(`${where}.${field}`, `must be an integer >= ${min}`)
  return v
}

const valueBytes = (_k: unknown, v: unknown): number => (v === null ? 0 : Buffer.byteLength(String(v), 'utf8'))

/** Kind `suppress-table`: a table from the input, suppressed `untilTimeLimit(waitMs, bufferConfig)`. */
export const suppressTableKind: ScenarioKind = {
  build(scenario: Scenario, out: OutputSink): KindInstance {
    const s = scenario.topology.suppress as Obj | undefined
    if (typeof s !== 'object' || s === null) throw malformed('topology.suppress', 'must be an object')
    if (s.until !== 'timeLimit') throw malformed('topology.suppress.until', 'must be "timeLimit" for kind suppress-table')
    const waitMs = num(s, 'waitMs', 'topology.suppress')
    if (waitMs === undefined) throw malformed('topology.suppress.waitMs', 'is required')
    const maxRecords = num(s, 'maxRecords', 'topology.suppress', 1)
    const maxBytes = num(s, 'maxBytes', 'topology.suppress', 1)
    const whenFull = s.whenFull ?? 'emitEarly'
    if (whenFull !== 'emitEarly' && whenFull !== 'shutDown' && whenFull !== 'spillToDisk') throw malformed('topology.suppress.whenFull', 'must be "emitEarly", "shutDown" or "spillToDisk"')
    const waitFrom = s.waitFrom ?? 'latest'
    if (waitFrom !== 'latest' && waitFrom !== 'first') throw malformed('topology.suppress.waitFrom', 'must be "latest" or "first"')
    const sizer = s.sizer ?? 'default'
    if (sizer !== 'value' && sizer !== 'default') throw malformed('topology.suppress.sizer', 'must be "value" or "default"')

    let config
    if (maxRecords === undefined && maxBytes === undefined) config = BufferConfig.unbounded()
    else {
      let eager = maxRecords !== undefined ? BufferConfig.maxRecords(maxRecords) : BufferConfig.maxBytes(maxBytes as number)
      if (maxRecords !== undefined && maxBytes !== undefined) eager = eager.withMaxBytes(maxBytes)
      config = whenFull === 'emitEarly' ? eager : whenFull === 'shutDown' ? eager.shutDownWhenFull() : eager.spillToDiskWhenFull()
    }
    let suppressed = Suppressed.untilTimeLimit<string, string>(waitMs, config).withWaitFrom(waitFrom)
    if (sizer === 'value') suppressed = suppressed.withSizer(valueBytes)
    const builder = new StreamsBuilder()
    const stream = builder.table<string, string>('input').suppress(suppressed).toStream()
    tap(stream, out, (k) => k)
    return { topology: builder.build(), inputTopic: 'input', errorOutput }
  },
}

/** Kind `windowed-count`: `groupByKey().windowedBy(W).count()`, then `.suppress(untilWindowCloses(...))` if given. */
export const windowedCountKind: ScenarioKind = {
  build(scenario: Scenario, out: OutputSink): KindInstance {
    const w = scenario.topology.windows as Obj | undefined
    if (typeof w !== 'object' || w === null) throw malformed('topology.windows', 'must be an object')
    const grace = num(w, 'graceMs', 'topology.windows') ?? 0
    const builder = new StreamsBuilder()
    const stream = builder.stream<string, string>('input').groupByKey()
    let table: KTable<Windowed<string>, number>
    if (w.type === 'tumbling' || w.type === 'hopping') {
      const size = num(w, 'sizeMs', 'topology.windows', 1)
      if (size === undefined) throw malformed('topology.windows.sizeMs', 'is required')
      let windows = TimeWindows.ofSizeAndGrace(size, grace)
      if (w.type === 'hopping') {
        const advance = num(w, 'advanceMs', 'topology.windows', 1)
        if (advance === undefined) throw malformed('topology.windows.advanceMs', 'is required for hopping windows')
        windows = windows.advanceBy(advance)
      }
      table = stream.windowedBy(windows).count()
    } else if (w.type === 'session') {
      const gap = num(w, 'gapMs', 'topology.windows', 1)
      if (gap === undefined) throw malformed('topology.windows.gapMs', 'is required')
      table = stream.windowedBy(SessionWindows.ofInactivityGapAndGrace(gap, grace)).count()
    } else if (w.type === 'sliding') {
      const diff = num(w, 'timeDifferenceMs', 'topology.windows', 1)
      if (diff === undefined) throw malformed('topology.windows.timeDifferenceMs', 'is required')
      table = stream.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(diff, grace)).count()
    } else {
      throw malformed('topology.windows.type', 'must be "tumbling", "hopping", "sliding" or "session"')
    }
    const s = scenario.topology.suppress
    if (s !== null && s !== undefined) {
      if (typeof s !== 'object') throw malformed('topology.suppress', 'must be an object or null')
      const so = s as Obj
      if (so.until !== 'windowCloses') throw malformed('topology.suppress.until', 'must be "windowCloses" for kind windowed-count')
      let config: StrictBufferConfig = BufferConfig.unbounded()
      const maxRecords = num(so, 'maxRecords', 'topology.suppress', 1)
      const maxBytes = num(so, 'maxBytes', 'topology.suppress', 1)
      if (maxRecords !== undefined) config = config.withMaxRecords(maxRecords)
      if (maxBytes !== undefined) config = config.withMaxBytes(maxBytes)
      const whenFull = so.whenFull ?? 'shutDown'
      if (whenFull === 'spillToDisk') config = config.spillToDiskWhenFull()
      else if (whenFull === 'shutDown') config = config.shutDownWhenFull()
      else throw malformed('topology.suppress.whenFull', 'must be "shutDown" or "spillToDisk"')
      let suppressed = Suppressed.untilWindowCloses<Windowed<string>, number>(config)
      const limit = num(so, 'wallClockLimitMs', 'topology.suppress')
      if (limit !== undefined) suppressed = suppressed.withWallClockLimit(limit)
      table = table.suppress(suppressed)
    }
    tap(table.toStream(), out, (k) => `${k.key}@${k.window.start}/${k.window.end}`)
    return { topology: builder.build(), inputTopic: 'input', errorOutput }
  },
}

/** Ends a scenario topology: every record reaching it is an output, in emission order. */
function tap<K, V>(stream: KStream<K, V>, out: OutputSink, key: (k: K) => string): void {
  stream.addStatelessNode<K, V>(undefined, 'SCENARIO-OUTPUT', (r) => out.emit({ key: key(r.key), value: r.value, ts: r.timestamp }))
}

/** Maps a stopping error to its output code (FORMAT.md), or undefined for other errors. */
function errorOutput(err: unknown): string | undefined {
  return err instanceof PunctualError && err.code === 'BUFFER_FULL' ? 'buffer-full' : undefined
}
