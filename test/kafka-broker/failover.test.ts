import assert from 'node:assert/strict'
import { after, afterEach, before, describe, it } from 'node:test'
import { TestCluster } from './cluster.js'
import type { ReadRecord } from './cluster.js'
import { guarantees, Instance } from './processes.js'
import { embeddedFlights, FLIGHT_OUTPUTS, FLIGHT_TOPICS, flightLines, flightRecords, outputDifference, PARTITIONS, until } from './workload.js'

/** Flights fed, in thirds: about three days of 2001, so that each task reports days before and after the kill. */
const FLIGHTS = 48_000

describe('KafkaRuntime failover: instances as processes, one killed with SIGKILL, one added', () => {
  let cluster: TestCluster
  const run = `fo${process.pid}x${Date.now()}`
  const instances: Instance[] = []

  before(async () => {
    cluster = await TestCluster.connect()
  })

  afterEach(() => {
    for (const i of instances.splice(0)) i.kill('SIGKILL')
  })

  after(async () => {
    await cluster.deleteTopics(run)
    await cluster.close()
  })

  for (const guarantee of guarantees()) {
    const exactlyOnce = guarantee === 'exactly_once_v2'
    it(`the flights demo (final windows, a stream-time punctuation, event-time timers, TTL) under ${guarantee} on 3 instances, one killed mid-run and one added later: ${exactlyOnce ? 'the committed output equals a single embedded run' : 'nothing of a single embedded run is missing'}`, async () => {
      const prefix = `${run}-${guarantee}-`
      for (const topic of FLIGHT_TOPICS) await cluster.createTopic(`${prefix}${topic}`, PARTITIONS)
      const flights = await flightRecords(FLIGHTS)
      const third = Math.ceil(FLIGHTS / 3)
      const thirds = [flights.slice(0, third), flights.slice(third, 2 * third), flights.slice(2 * third)] as const
      const expected = await embeddedFlights(flights)
      assert.ok(expected.some((l) => l.startsWith('daily-reports|')) && expected.some((l) => l.startsWith('airport-alerts|')), 'daily reports and alerts to compare')
      const args = [`${prefix}app`, prefix, '-', guarantee]
      const start = (name: string): Instance => {
        const i = new Instance(name, args, 'flights')
        instances.push(i)
        return i
      }
      const total = (): number => instances.reduce((n, i) => n + i.processed, 0)
      const seen = (): string => instances.map((i) => `${i.name}: ${i.processed} records, tasks ${i.tasks.join(' ')}${i.restoring.length === 0 ? '' : `, restoring ${i.restoring.join(' ')}`}`).join('; ')
      const output = async (): Promise<string[]> => {
        const read = new Map<string, ReadRecord[]>()
        for (const topic of FLIGHT_OUTPUTS) read.set(`${prefix}${topic}`, (await cluster.readAll(`${prefix}${topic}`, PARTITIONS)).flat())
        return flightLines(prefix, read)
      }
      // A record of the output without its value: under at-least-once a window or report may be written
      // again, and with counts that include records processed twice.
      const identity = (line: string): string => line.slice(0, line.indexOf('|', line.indexOf('|') + 1)) + line.slice(line.lastIndexOf('|'))

      const flightsTopic = `${prefix}flights`
      await cluster.produce(flightsTopic, PARTITIONS, thirds[0])
      const [a, b, c] = [start('a'), start('b'), start('c')]
      await until('three instances share the tasks', () => [a, b, c].every((i) => i.tasks.length > 0) && a.tasks.length + b.tasks.length + c.tasks.length === PARTITIONS, 90_000, seen)
      // The second third arrives in small batches, so that the instances are mid-work when one dies.
      const feeding = (async () => {
        for (let i = 0; i < thirds[1].length; i += 500) {
          await cluster.produce(flightsTopic, PARTITIONS, thirds[1].slice(i, i + 500))
          await new Promise((r) => setTimeout(r, 50))
        }
      })()
      await until('half of the flights are processed', () => total() >= FLIGHTS / 2, 90_000, seen)

      // The instance with the most tasks dies without a word: its open transaction is aborted, its tasks
      // go to the others, restored from what it last committed.
      const victim = [a, b, c].sort((x, y) => y.tasks.length - x.tasks.length)[0] as Instance
      victim.kill('SIGKILL')
      assert.equal(await victim.exited, 'SIGKILL')
      instances.splice(instances.indexOf(victim), 1)
      const d = start('d')
      await feeding
      await cluster.produce(flightsTopic, PARTITIONS, thirds[2])

      const survivors = instances.slice()
      await until('every task runs again, on the three live instances', () => survivors.reduce((n, i) => n + i.tasks.length, 0) === PARTITIONS && d.tasks.length > 0, 90_000, seen)
      let written = 0
      let missing: string[] = []
      await until(
        'the output holds everything of the embedded run',
        async () => {
          const out = await output()
          written = out.length
          const have = new Set(out.map(identity))
          missing = expected.filter((l) => !have.has(identity(l)))
          return missing.length === 0
        },
        90_000,
        () => `${written} written, ${missing.length} of ${expected.length} missing (${missing.slice(0, 3).join(', ')}, ...); ${seen()}`,
      )
      for (const i of survivors) i.kill('SIGTERM')
      for (const i of survivors) assert.equal(await i.exited, 0, `${i.name} stopped cleanly`)
      instances.length = 0
      const out = await output()
      if (exactlyOnce) {
        const { missing, extra } = outputDifference(expected, out)
        assert.deepEqual({ extra, missing }, { extra: [], missing: [] }, "the committed output is the embedded run's, each record once")
      } else {
        const have = new Set(out.map(identity))
        assert.deepEqual(expected.filter((l) => !have.has(identity(l))), [])
      }
    })
  }
})
