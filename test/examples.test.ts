// The examples are user code: they import the built package ('punctual', as a user's app does) and
// so does this test. Each also runs as a program, with the output it prints checked.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { EmbeddedRuntime, Serdes, silentLogger } from 'punctual'
import type { PunctualApp } from 'punctual'
import { TopologyTestDriver } from 'punctual/testing'
import { sensorTopology } from '../examples/heartbeat.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** Runs an example as a program (through tsx, as the README says) and returns what it printed. */
function runExample(file: string, ...args: string[]): string[] {
  const out = execFileSync(process.execPath, ['--import', 'tsx', file, ...args], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
  return out.trimEnd().split('\n')
}

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

describe('examples/order-totals.ts: a serde of its own, event time from the payload', () => {
  it('sums orders per customer and hour of their placedAtMs; a line the serde cannot read is skipped', async () => {
    const { orderTotals, orderSerde } = await import('../examples/order-totals.js')
    const driver = new TopologyTestDriver(orderTotals(), { errorHandler: (ctx) => (ctx.reason === 'deserialization' ? 'continue' : 'fail') })
    const orders = driver.createInputTopic('orders', Serdes.String(), Serdes.String())
    const HOUR = 3_600_000
    // Written as text, as another client would: the record timestamps (0) play no part.
    orders.pipeInput('o1', `o1;ann;1250;${10 * 60_000}`, 0)
    orders.pipeInput('o2', `o2;bob;300;${20 * 60_000}`, 0)
    orders.pipeInput('o3', 'o3;ann;not-cents;0', 0) // not an order line: skipped
    orders.pipeInput('o4', 'o4;ann;50;later', 0) // no time: the partition's, 20 min
    orders.pipeInput('o5', `o5;ann;700;${HOUR + 5 * 60_000}`, 0) // closes the first hour
    assert.deepEqual(driver.createOutputTopic('hourly-totals', Serdes.String(), Serdes.Long()).readKeyValuesToList(), [
      { key: 'ann 00:00', value: 1300 },
      { key: 'bob 00:00', value: 300 },
    ])
    assert.equal(driver.metrics().droppedRecords.deserialization, 1)
    const order = { id: 'o9', customer: 'cy', cents: 1, placedAtMs: 2 }
    assert.deepEqual(orderSerde.deserialize(orderSerde.serialize(order, 'orders'), 'orders'), order)
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

describe('the examples run as programs', () => {
  it('heartbeat.ts prints the counts and the silent sensors', () => {
    assert.deepEqual(runExample('examples/heartbeat.ts'), ['10000\ts1\t2 readings', '10000\ts2\t1 readings', '30000\ts1\tsilent', '30000\ts2\tsilent'])
  })

  it('abandoned-carts.ts prints the abandoned carts and the forgotten customers', () => {
    assert.deepEqual(runExample('examples/abandoned-carts.ts'), ['90 min\tann\tcart abandoned', '150 min\tbob\tcart abandoned', '1470 min\tann\tforgotten', '1530 min\tbob\tforgotten'])
  })

  it('views-per-minute.ts prints one final count per user and minute', () => {
    assert.deepEqual(runExample('examples/views-per-minute.ts'), ['ann\t[0, 60000)\t2'])
  })

  it('word-count-app.ts runs under punctual run, and resumes from its state directory', () => {
    const stateDir = join(mkdtempSync(join(tmpdir(), 'punctual-example-')), 'state')
    const first = runExample('bin/punctual.js', 'run', 'examples/word-count-app.ts', '--state-dir', stateDir)
    assert.deepEqual(first.sort(), ['minute 0: brown x1', 'minute 0: dog x2', 'minute 0: fox x1', 'minute 0: jumps x1', 'minute 0: lazy x1', 'minute 0: over x1', 'minute 0: quick x1', 'minute 0: sleeps x1', 'minute 0: the x3'])
    assert.deepEqual(runExample('bin/punctual.js', 'run', 'examples/word-count-app.ts', '--state-dir', stateDir), [''], 'the second run resumes: nothing new to count')
  })

  it('word-count-app.ts feeds, after a restart, the lines an earlier run had not committed', async () => {
    const { default: app } = (await import('../examples/word-count-app.js')) as { default: PunctualApp }
    const stateDir = join(mkdtempSync(join(tmpdir(), 'punctual-example-')), 'state')
    // A first run that committed only the first two lines before it ended.
    const first = new EmbeddedRuntime(app.topology(), { ...app.config, applicationId: app.applicationId, stateDir, logger: silentLogger })
    await first.start()
    first.producer<string, string>('lines').send(null, 'the quick brown fox', 0)
    first.producer<string, string>('lines').send(null, 'jumps over the lazy dog', 25_000)
    await first.stop({ drain: true })
    const second = new EmbeddedRuntime(app.topology(), { ...app.config, applicationId: app.applicationId, stateDir, logger: silentLogger })
    await second.start()
    assert.equal(second.resumed, true)
    const printed: string[] = []
    const log = console.log
    console.log = (line: string) => printed.push(line)
    try {
      await app.start?.(second, { resumed: true, signal: new AbortController().signal })
      await second.stop({ drain: true })
    } finally {
      console.log = log
    }
    // The third line's words reach the counts of minute 0, which the fourth line (minute 1) closes.
    assert.ok(printed.includes('minute 0: sleeps x1'), printed.join('\n'))
    assert.ok(printed.includes('minute 0: the x3'), printed.join('\n'))
  })
})
