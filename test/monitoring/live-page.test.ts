import assert from 'node:assert/strict'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { chromium } from 'playwright-core'
import { EmbeddedRuntime, Serdes, silentLogger } from '../../src/index.js'
import { loadFlights } from '../../demo/flights/data.js'
import { flightsTopology } from '../../demo/flights/topology.js'
import type { FlightValue } from '../../demo/flights/topology.js'

/**
 * The live page in a real browser: Debian's Chromium, headless, driven by playwright-core (nothing
 * downloaded). The flights demo runs on the embedded runtime while a feed keeps adding flights; the test
 * checks the page draws the topology and that its live values change. Screenshots go to
 * PUNCTUAL_SCREENSHOTS (docs/images for the README: `npm run docs:screenshots`), else a temporary folder.
 */
/** The page's DOM as the functions run in the browser use it (the tests compile without the DOM library). */
interface PageElement {
  readonly textContent: string | null
  getAttribute(name: string): string | null
}
declare const document: {
  querySelectorAll(selector: string): ArrayLike<PageElement>
  querySelector(selector: string): PageElement | null
  getElementById(id: string): PageElement | null
}

const CHROMIUM = process.env.PUNCTUAL_CHROMIUM ?? '/usr/bin/chromium'
const missing = !existsSync(CHROMIUM)
// CI installs Chromium: there, a missing browser is a failure, not a skip.
const skip = missing && process.env.CI === undefined ? `no Chromium at ${CHROMIUM} (apt-get install chromium, or set PUNCTUAL_CHROMIUM)` : false

describe('the live page in headless Chromium', { skip }, () => {
  it('draws the topology, and the tasks’ clocks and counts change as records arrive', async () => {
    assert.ok(!missing, `no Chromium at ${CHROMIUM}`)
    const partitions = 4
    const topology = flightsTopology({ progressStartMs: 0 })
    const runtime = new EmbeddedRuntime(topology, {
      applicationId: 'flights-live',
      logger: silentLogger,
      metrics: { port: 0 },
      topics: { flights: { partitions }, 'daily-reports': { partitions: 1 }, progress: { partitions: 1 }, 'hourly-delays': { partitions: 1 } },
    })
    const flights = await loadFlights(200_000)
    const screenshots = process.env.PUNCTUAL_SCREENSHOTS ?? mkdtempSync(join(tmpdir(), 'punctual-screens-'))
    mkdirSync(screenshots, { recursive: true })
    await runtime.start()
    // A feed: 2,000 flights every 100 ms, in order of actual departure, as the demo replays them.
    const producer = runtime.producer<string, FlightValue>('flights', { valueSerde: Serdes.JSON<FlightValue>() })
    let fed = 0
    const feed = setInterval(() => {
      const end = Math.min(flights.count, fed + 2000)
      for (; fed < end; fed++) {
        const i = flights.replayOrder[fed] as number
        producer.send(flights.origin[i] as string, { delay: flights.delay[i] as number, distance: flights.distance[i] as number, destination: flights.destination[i] as string }, flights.scheduled[i] as number)
      }
    }, 100)
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      // Without the network flags, Chromium keeps trying hosts this machine cannot reach.
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    })
    try {
      const address = await runtime.metricsAddress()
      assert.ok(address !== undefined)
      const page = await browser.newPage({ viewport: { width: 1500, height: 1100 } })
      const errors: string[] = []
      page.on('pageerror', (err) => errors.push(err.message))
      await page.goto(address.pageUrl)

      // The topology: one box per node of describe(), in one frame per sub-topology.
      const nodes = topology.subtopologies().flatMap((s) => s.nodes.map((n) => n.name))
      await page.waitForSelector('#topology svg')
      const drawn = await page.$$eval('#topology g.node', (gs) => gs.map((g) => g.getAttribute('data-node')))
      assert.deepEqual([...drawn].sort(), [...nodes].sort())

      // One row per task, with the application's name and state.
      await page.waitForFunction((n) => document.querySelectorAll('#tasks tbody tr').length === n, partitions)
      assert.equal(await page.textContent('#app'), 'flights-live')
      assert.equal(await page.textContent('#state'), 'RUNNING')
      const rows = await page.$$eval('#tasks tbody tr', (trs) => trs.map((tr) => tr.getAttribute('data-task')))
      assert.deepEqual(rows, ['0_0', '0_1', '0_2', '0_3'])

      // Live: the counts and a task's stream time move on, and the chart draws a line per task.
      const processed = await page.textContent('#processed')
      const streamTime = await page.textContent('tr[data-task="0_0"] td[data-field="streamTime"]')
      await page.waitForFunction((before) => document.getElementById('processed')?.textContent !== before, processed, { timeout: 30_000 })
      await page.waitForFunction(
        (before) => document.querySelector('tr[data-task="0_0"] td[data-field="streamTime"]')?.textContent !== before,
        streamTime,
        { timeout: 30_000 },
      )
      await page.waitForFunction(() => document.querySelectorAll('#chart polyline').length === 4 && (document.querySelector('#chart polyline')?.getAttribute('points') ?? '').split(' ').length >= 3, undefined, { timeout: 30_000 })
      const shown = Number((await page.textContent('#processed'))?.replace(/,/g, ''))
      assert.ok(shown > 0 && shown <= runtime.metrics().processedRecords, `the page shows ${shown} processed, the runtime ${runtime.metrics().processedRecords}`)
      // Each box of the graph shows the records its node was given: the source's, every flight so far.
      const atSource = Number((await page.textContent('#topology g.node[data-node="flights"] text.count'))?.replace(/,/g, ''))
      assert.ok(atSource > 0, `the source's box shows ${atSource} records`)
      const timers = await page.textContent('tr[data-task="0_0"] td[data-field="pendingTimers"]')
      assert.match(timers ?? '', /^[\d,]+ · [\d,]+$/)
      assert.deepEqual(errors, [], 'no script errors on the page')

      await page.screenshot({ path: join(screenshots, 'live-page.png'), fullPage: true })
      assert.ok(readFileSync(join(screenshots, 'live-page.png')).subarray(1, 4).toString() === 'PNG')
    } finally {
      clearInterval(feed)
      await browser.close()
      await runtime.stop()
      if (process.env.PUNCTUAL_SCREENSHOTS === undefined) rmSync(screenshots, { recursive: true, force: true })
    }
  })
})
