import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Serdes } from '../src/index.js'
import { TopologyTestDriver } from '../src/testing/index.js'
import { sensorTopology } from '../examples/heartbeat.js'

describe('README example (examples/heartbeat.ts)', () => {
  it('reports counts on the stream-time grid and silent sensors on the wall clock', () => {
    const driver = new TopologyTestDriver(sensorTopology(), { wallClockStartMs: 0 })
    const readings = driver.createInputTopic('sensor-readings', Serdes.String(), Serdes.Double())
    const alerts = driver.createOutputTopic('sensor-alerts', Serdes.String(), Serdes.String())

    readings.pipeInput('s1', 20.5, 1_000)
    readings.pipeInput('s2', 19.0, 4_000)
    readings.pipeInput('s1', 21.0, 10_000) // stream time reaches 10 000: the grid point fires
    assert.deepEqual(alerts.readKeyValuesToList(), [
      { key: 's1', value: '2 readings' },
      { key: 's2', value: '1 readings' },
    ])

    driver.advanceWallClockTime(30_000) // no input at all: both sensors went silent
    assert.deepEqual(alerts.readKeyValuesToList(), [
      { key: 's1', value: 'silent' },
      { key: 's2', value: 'silent' },
    ])
    driver.close()
  })
})

describe('README example (examples/abandoned-carts.ts)', () => {
  it('alerts an hour after the last order and forgets the customer after a day', async () => {
    const { cartsTopology } = await import('../examples/abandoned-carts.js')
    const driver = new TopologyTestDriver(cartsTopology())
    const orders = driver.createInputTopic('orders', Serdes.String(), Serdes.String())
    const out = driver.createOutputTopic('cart-alerts', Serdes.String(), Serdes.String())
    const HOUR = 3_600_000
    orders.pipeInput('ann', 'order', 0)
    orders.pipeInput('ann', 'order', 30 * 60_000) // moves the timer to 1:30
    orders.pipeInput('bob', 'order', HOUR)
    assert.deepEqual(out.readKeyValuesToList(), [])
    orders.pipeInput('bob', 'order', 90 * 60_000) // stream time 1:30: ann's cart is abandoned
    assert.deepEqual(out.readRecordsToList().map((r) => [r.key, r.value, r.timestamp]), [['ann', 'cart abandoned', 90 * 60_000]])
    orders.pipeInput('cid', 'order', 26 * HOUR)
    assert.deepEqual(out.readKeyValuesToList(), [
      { key: 'bob', value: 'cart abandoned' },
      { key: 'ann', value: 'forgotten' },
      { key: 'bob', value: 'forgotten' },
    ])
  })
})

describe('README example (examples/views-per-minute.ts)', () => {
  it('emits one final count per user and minute once the window and its grace have passed', async () => {
    const { viewsPerMinute } = await import('../examples/views-per-minute.js')
    const driver = new TopologyTestDriver(viewsPerMinute())
    const views = driver.createInputTopic('page-views', Serdes.String(), Serdes.String())
    const out = driver.createOutputTopic('views-per-minute', Serdes.JSON<{ key: string; window: { start: number; end: number } }>(), Serdes.Long())
    views.pipeInput('ann', '/home', 1_000)
    views.pipeInput('ann', '/health', 2_000)
    views.pipeInput('ann', '/cart', 59_000)
    views.pipeInput('bob', '/home', 69_999) // the window [0, 60 000) closes at 70 000
    assert.equal(out.getQueueSize(), 0)
    views.pipeInput('bob', '/home', 70_000)
    assert.deepEqual(out.readKeyValuesToList(), [{ key: { key: 'ann', window: { start: 0, end: 60_000 } }, value: 2 }])
  })
})
