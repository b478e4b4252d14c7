import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { BufferConfig, StreamsBuilder, Suppressed, TimeWindows } from '../../src/index.js'
import type { StrictBufferConfig, Topology, Windowed } from '../../src/index.js'
import { oneRunAndThree } from '../helpers/durable.js'

// Final results on a windowed count run without a buffer when the suppression is unbounded (the
// aggregation emits them), and through the buffer when it is bounded. A restart may switch between the
// two with windows open: no final result may be lost or doubled either way.

function finalCounts(out: string[], buffer: StrictBufferConfig): Topology {
  const b = new StreamsBuilder()
  b.stream('in')
    .groupByKey()
    .windowedBy(TimeWindows.ofSizeAndGrace(10, 5))
    .count()
    .suppress(Suppressed.untilWindowCloses<Windowed<string>, number>(buffer).withName('final'))
    .toStream()
    .addStatelessNode(undefined, 'OUT', (r) => out.push(`${r.key.key}@${r.key.window.start}=${r.value}@${r.timestamp}`))
  return b.build()
}

const unbounded = BufferConfig.unbounded()
const bounded = BufferConfig.maxRecords(1_000_000).shutDownWhenFull()

/** Keys a-d over 200 ms with some disorder: windows stay open across every third of the input. */
const records: Array<[string, number]> = Array.from({ length: 120 }, (_, i) => [`k${'abcd'[(i * 7) % 4]}`, Math.max(0, i * 2 - ((i * 13) % 9))])

describe('final results across restarts that switch between the buffer-less path and the buffer', () => {
  for (const [name, configs] of [
    ['buffer-less, then buffered, then buffer-less', [unbounded, bounded, unbounded]],
    ['buffered, then buffer-less, then buffered', [bounded, unbounded, bounded]],
    ['buffer-less throughout', [unbounded, unbounded, unbounded]],
  ] as const) {
    it(`${name}: the output of one uninterrupted run`, async () => {
      const { once, resumed } = await oneRunAndThree('final-switch', (out, part) => finalCounts(out, part === 'whole' ? unbounded : configs[part]), records)
      assert.ok(once.length > 10, `enough windows closed (${once.length})`)
      assert.deepEqual(resumed, once)
    })
  }
})
