import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { BufferConfig, PunctualError, QueryableStoreTypes, Serdes, SessionWindows, StreamsBuilder, Suppressed, TimeWindows } from '../../src/index.js'
import type { Topology, Windowed } from '../../src/index.js'
import { TopologyTestDriver } from '../../src/testing/index.js'
import type { DriverCheckpoint } from '../../src/testing/index.js'

/** Counts per key in tumbling windows of 10 ms, no grace; `finals`: final results only. */
function counts(retentionMs: number | undefined, finals = false): Topology {
  const b = new StreamsBuilder()
  const table = b
    .stream<string, string>('clicks')
    .groupByKey()
    .windowedBy(TimeWindows.ofSizeWithNoGrace(10))
    .count({ name: 'counts', ...(retentionMs === undefined ? {} : { retentionMs }) })
  const out = finals ? table.suppress(Suppressed.untilWindowCloses<Windowed<string>, number>(BufferConfig.unbounded())) : table
  out
    .toStream()
    .map((w: Windowed<string>, n: number | null) => ({ key: `${w.key}@${w.window.start}`, value: n }))
    .to('out', { keySerde: Serdes.String(), valueSerde: Serdes.Long() })
  return b.build()
}

/** The aggregation's window store: `counts`, as Kafka Streams names a store after `Materialized.as`. */
function windows(driver: TopologyTestDriver) {
  return driver.store('counts', QueryableStoreTypes.windowStore<string, number>())
}

describe('window store retention (Materialized.withRetention)', () => {
  it('a closed window stays readable by interactive queries until its retention, then leaves', () => {
    const driver = new TopologyTestDriver(counts(30))
    const clicks = driver.createInputTopic('clicks', Serdes.String(), Serdes.String())
    clicks.pipeInput('a', 'x', 1)
    clicks.pipeInput('a', 'x', 5)
    clicks.pipeInput('a', 'x', 25) // stream time 25: [0,10) and [10,20) closed
    clicks.pipeInput('a', 'x', 3) // late for the closed window: dropped, not counted
    assert.equal(windows(driver).fetch('a', 0), 2)
    assert.deepEqual([...windows(driver).fetch('a', 0, 30)], [
      [0, 2],
      [20, 1],
    ])
    assert.deepEqual(
      [...windows(driver).all()].map(([w, n]) => `${w.key}@${w.window.start}=${n}`),
      ['a@0=2', 'a@20=1'],
    )
    clicks.pipeInput('b', 'x', 29) // 29 < 0 + 30: still there
    assert.equal(windows(driver).fetch('a', 0), 2)
    clicks.pipeInput('b', 'x', 30) // stream time 30 reaches the retention of [0,10)
    assert.equal(windows(driver).fetch('a', 0), undefined)
    assert.deepEqual([...windows(driver).fetch('a', 0, 30)], [[20, 1]])
    assert.equal(driver.metrics().droppedRecords.late, 1)
    driver.close()
  })

  it('by default (size plus grace) a window leaves the store when it closes', () => {
    const driver = new TopologyTestDriver(counts(undefined))
    const clicks = driver.createInputTopic('clicks', Serdes.String(), Serdes.String())
    clicks.pipeInput('a', 'x', 1)
    clicks.pipeInput('a', 'x', 9)
    assert.equal(windows(driver).fetch('a', 0), 2)
    clicks.pipeInput('a', 'x', 10)
    assert.equal(windows(driver).fetch('a', 0), undefined)
    driver.close()
  })

  it('final results: each window is emitted once when it closes, and stays queryable after', () => {
    const driver = new TopologyTestDriver(counts(100, true))
    const clicks = driver.createInputTopic('clicks', Serdes.String(), Serdes.String())
    const out = driver.createOutputTopic('out', Serdes.String(), Serdes.Long())
    clicks.pipeInput('a', 'x', 1)
    clicks.pipeInput('a', 'x', 2)
    clicks.pipeInput('a', 'x', 12)
    assert.deepEqual(out.readKeyValuesToList(), [{ key: 'a@0', value: 2 }])
    clicks.pipeInput('a', 'x', 15)
    clicks.pipeInput('a', 'x', 31)
    assert.deepEqual(out.readKeyValuesToList(), [{ key: 'a@10', value: 2 }])
    assert.equal(windows(driver).fetch('a', 0), 2)
    assert.equal(windows(driver).fetch('a', 10), 2)
    driver.close()
  })

  it('a restart keeps the closed windows and their retention, and emits no final result twice', () => {
    const first = new TopologyTestDriver(counts(100, true))
    const clicks = first.createInputTopic('clicks', Serdes.String(), Serdes.String())
    clicks.pipeInput('a', 'x', 1)
    clicks.pipeInput('a', 'x', 12)
    assert.deepEqual(first.createOutputTopic('out', Serdes.String(), Serdes.Long()).readKeyValuesToList(), [{ key: 'a@0', value: 1 }])
    const checkpoint: DriverCheckpoint = first.checkpoint()
    first.close()
    const second = new TopologyTestDriver(counts(100, true), { checkpoint })
    assert.equal(windows(second).fetch('a', 0), 1)
    const again = second.createInputTopic('clicks', Serdes.String(), Serdes.String())
    again.pipeInput('a', 'x', 25)
    assert.deepEqual(second.createOutputTopic('out', Serdes.String(), Serdes.Long()).readKeyValuesToList(), [{ key: 'a@10', value: 1 }])
    again.pipeInput('a', 'x', 100) // 0 + 100: the first window's retention ends
    assert.equal(windows(second).fetch('a', 0), undefined)
    assert.equal(windows(second).fetch('a', 10), 1)
    second.close()
  })

  it('a retention shorter than size plus grace, or on session windows, is refused naming the operation', () => {
    assert.throws(
      () => counts(9),
      (err: unknown) => err instanceof PunctualError && err.code === 'INVALID_TOPOLOGY' && /windowed aggregation "counts": retentionMs 9 is shorter than the window size plus grace \(10 \+ 0\)/.test(err.message),
    )
    assert.throws(
      () =>
        new StreamsBuilder()
          .stream<string, string>('in')
          .groupByKey()
          .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(5))
          .count({ name: 'sessions', retentionMs: 100 }),
      (err: unknown) => err instanceof PunctualError && err.code === 'UNSUPPORTED' && /windowed aggregation "sessions": retentionMs applies to TimeWindows; session windows leave the store when they close/.test(err.message),
    )
  })
})
