import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { BufferConfig, EmbeddedRuntime, Serdes, silentLogger, StreamsBuilder, Suppressed, TimeWindows } from '../../src/index.js'
import type { Windowed } from '../../src/index.js'
import { ManualClock, TopologyTestDriver } from '../../src/testing/index.js'

function finalCounts(limitMs: number) {
  const out: string[] = []
  const b = new StreamsBuilder()
  b.stream('in')
    .groupByKey()
    .windowedBy(TimeWindows.ofSizeAndGrace(10, 5))
    .count()
    .suppress(Suppressed.untilWindowCloses<Windowed<string>, number>(BufferConfig.unbounded()).withWallClockLimit(limitMs))
    .toStream()
    .addStatelessNode(undefined, 'OUT', (r) => out.push(`${r.key.key}[${r.key.window.start},${r.key.window.end})=${r.value}`))
  return { b, out }
}

describe('wall-clock close for untilWindowCloses (SEMANTICS 6, beyond)', () => {
  it('emits a window once the wall clock reaches windowEnd + grace + limit, with no further input', () => {
    const { b, out } = finalCounts(100)
    const d = new TopologyTestDriver(b.build(), { wallClockStartMs: 0 })
    const input = d.createInputTopic('in', Serdes.String(), Serdes.String())
    input.pipeInput('a', 'v', 1)
    input.pipeInput('a', 'v', 2)
    d.advanceWallClockTime(114) // 10 + 5 + 100 = 115
    assert.deepEqual(out, [])
    d.advanceWallClockTime(1)
    assert.deepEqual(out, ['a[0,10)=2'])
  })

  it('drops a later record for a window it already emitted, as late, and counts it', () => {
    const { b, out } = finalCounts(0)
    const d = new TopologyTestDriver(b.build(), { wallClockStartMs: 0 })
    const input = d.createInputTopic('in', Serdes.String(), Serdes.String())
    input.pipeInput('a', 'v', 1)
    d.advanceWallClockTime(15)
    assert.deepEqual(out, ['a[0,10)=1'])
    input.pipeInput('a', 'v', 3) // stream time 3: the aggregate accepts it, the suppression does not
    assert.equal(d.metrics().droppedRecords.late, 1)
    input.pipeInput('a', 'v', 30) // stream time closes [0,10) and [30,40) opens
    assert.deepEqual(out, ['a[0,10)=1'], 'emitted once, never twice')
  })

  it('remembers across a restart which windows the wall clock closed: a late update is still dropped', () => {
    const { b, out } = finalCounts(0)
    const first = new TopologyTestDriver(b.build(), { wallClockStartMs: 0 })
    first.createInputTopic('in', Serdes.String(), Serdes.String()).pipeInput('a', 'v', 1)
    first.advanceWallClockTime(15)
    assert.deepEqual(out, ['a[0,10)=1'])
    const checkpoint = first.checkpoint()
    first.close()
    const again = finalCounts(0)
    const second = new TopologyTestDriver(again.b.build(), { wallClockStartMs: 15, checkpoint })
    const input = second.createInputTopic('in', Serdes.String(), Serdes.String())
    input.pipeInput('a', 'v', 3)
    assert.equal(second.metrics().droppedRecords.late, 1, 'the update for the emitted window is late')
    input.pipeInput('a', 'v', 30)
    assert.deepEqual(again.out, [], 'the window is not emitted a second time')
  })

  it('stream time still closes windows first when it gets there first', () => {
    const { b, out } = finalCounts(1_000_000)
    const d = new TopologyTestDriver(b.build(), { wallClockStartMs: 0 })
    const input = d.createInputTopic('in', Serdes.String(), Serdes.String())
    input.pipeInput('a', 'v', 1)
    input.pipeInput('b', 'v', 15)
    assert.deepEqual(out, ['a[0,10)=1'])
  })

  it('fires on the embedded runtime through its armed timer', async () => {
    const { b, out } = finalCounts(30)
    const clock = new ManualClock(0)
    const rt = new EmbeddedRuntime(b.build(), { applicationId: 'wallclose', clock, logger: silentLogger })
    await rt.start()
    rt.producer('in').send('a', 'v', 1)
    await new Promise((r) => setImmediate(r)) // processed: the window [0, 10) closes on the wall clock at end 10 + grace 5 + limit 30
    clock.advance(44)
    assert.deepEqual(out, [])
    clock.advance(1)
    assert.deepEqual(out, ['a[0,10)=1'])
    await rt.stop()
    assert.deepEqual(out, ['a[0,10)=1'])
  })
})
