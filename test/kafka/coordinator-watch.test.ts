import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { PunctualError } from '../../src/errors.js'
import { CoordinatorWatch } from '../../src/kafka/coordinator-watch.js'
import { ManualClock } from '../../src/time/clock.js'
import type { Logger } from '../../src/util/logger.js'

const LIMIT = 300_000
const BOOTSTRAP = '127.0.0.1:9092'

/** A statistics report as librdkafka writes it, with the consumer's brokers and group state (STATISTICS.md). */
function stats(coordinator: { state: string; nodename: string } | undefined, cgrp = 'up'): string {
  const brokers: Record<string, unknown> = {
    '127.0.0.1:9092/bootstrap': { name: '127.0.0.1:9092/bootstrap', nodeid: -1, nodename: '127.0.0.1:9092', source: 'configured', state: 'INIT' },
    '127.0.0.1:9092/1': { name: '127.0.0.1:9092/1', nodeid: 1, nodename: '127.0.0.1:9092', source: 'learned', state: 'UP' },
  }
  // The logical broker's nodeid is -1 whether it has an address or not (as librdkafka 2.15 reports it).
  if (coordinator !== undefined) brokers.GroupCoordinator = { name: 'GroupCoordinator', nodeid: -1, nodename: coordinator.nodename, source: 'logical', state: coordinator.state }
  return JSON.stringify({ name: 'consumer-1', type: 'consumer', brokers, cgrp: { state: cgrp, join_state: 'steady' } })
}

function watched() {
  const clock = new ManualClock(1_000_000)
  const lines: string[] = []
  const logger: Logger = { debug() {}, info: (_f, m) => lines.push(`info ${m}`), warn: (_f, m) => lines.push(`warn ${m}`), error() {}, child: () => logger }
  const lost: PunctualError[] = []
  const watch = new CoordinatorWatch(clock, LIMIT, BOOTSTRAP, logger, (err) => lost.push(err))
  /** One report every 5 s for `ms`. */
  const report = (ms: number, json: string): void => {
    for (let t = 0; t < ms; t += 5_000) {
      clock.advance(5_000)
      watch.observe(json)
    }
  }
  return { clock, watch, lines, lost, report }
}

describe('CoordinatorWatch: whether the group consumer reaches its group coordinator', () => {
  it('a coordinator connection that is up, or down for less than the limit, stops nothing', () => {
    const { lost, lines, report } = watched()
    report(600_000, stats({ state: 'UP', nodename: '127.0.0.1:9092' }))
    // A broker restart: down for 4 minutes, then up again.
    report(240_000, stats({ state: 'DOWN', nodename: '127.0.0.1:9092' }, 'wait-broker-transport'))
    report(60_000, stats({ state: 'UP', nodename: '127.0.0.1:9092' }))
    report(240_000, stats({ state: 'TRY_CONNECT', nodename: '' }, 'query-coord'))
    assert.deepEqual(lost, [])
    assert.equal(lines.filter((l) => l.startsWith('warn')).length, 2, 'a warning after a minute, each time')
    assert.match(lines[0] as string, /^warn the group consumer has had no connection to its group coordinator for 60 s \(coordinator connection DOWN, group state wait-broker-transport\/steady\)/)
    assert.equal(lines[1], 'info the group consumer reaches its group coordinator again')
  })

  it('no coordinator connection for the limit (a coordinator without an address, the group state up) stops the instance once, with an error naming the cluster', () => {
    const { lost, report } = watched()
    report(60_000, stats({ state: 'UP', nodename: '127.0.0.1:9092' }))
    report(295_000, stats({ state: 'INIT', nodename: '' }))
    assert.equal(lost.length, 0)
    report(60_000, stats({ state: 'INIT', nodename: '' }))
    assert.equal(lost.length, 1)
    const [err] = lost
    assert.ok(err instanceof PunctualError)
    assert.equal(err.code, 'ILLEGAL_STATE')
    assert.ok(err.message.includes(BOOTSTRAP), err.message)
    assert.match(err.message, /no connection to its group coordinator for 300 s \(coordinator connection INIT without an address, group state up\/steady\)/)
  })

  it('counts from its start when the coordinator was never up, and ignores reports without a coordinator or that do not parse', () => {
    const { lost, report, watch, clock } = watched()
    report(120_000, stats(undefined))
    watch.observe('{not json')
    assert.equal(lost.length, 0)
    clock.advance(180_000)
    watch.observe(stats({ state: 'CONNECT', nodename: '127.0.0.1:9092' }, 'wait-coord'))
    assert.equal(lost.length, 1)
  })
})
