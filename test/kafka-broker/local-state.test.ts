import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, afterEach, before, describe, it } from 'node:test'
import { TestCluster } from './cluster.js'
import type { ReadRecord } from './cluster.js'
import { Instance } from './processes.js'
import { embeddedFlights, FLIGHT_OUTPUTS, FLIGHT_TOPICS, flightLines, flightRecords, outputDifference, PARTITIONS, until } from './workload.js'

const FLIGHTS = 48_000

/** Each `task T restored from ...` line of an instance's log: from local state (with its tail) or from the changelog. */
function restores(log: string): Array<{ taskId: string; local?: number; tail: number }> {
  const out: Array<{ taskId: string; local?: number; tail: number }> = []
  for (const line of log.split('\n')) {
    const both = /task (\S+) restored from its local state \((\d+) records\) and the changelog's tail \((\d+) records\)/.exec(line)
    if (both !== null) out.push({ taskId: both[1] as string, local: Number(both[2]), tail: Number(both[3]) })
    const changelog = /task (\S+) restored from its changelog topics \((\d+) records\)/.exec(line)
    if (changelog !== null) out.push({ taskId: changelog[1] as string, tail: Number(changelog[2]) })
  }
  return out
}

describe('KafkaRuntime local state: an instance killed with SIGKILL restarts on its own state directory', () => {
  let cluster: TestCluster
  const run = `ls${process.pid}x${Date.now()}`
  const instances: Instance[] = []
  const dir = mkdtempSync(join(tmpdir(), 'punctual-local-state-'))

  before(async () => {
    cluster = await TestCluster.connect()
  })

  afterEach(() => {
    for (const i of instances.splice(0)) i.kill('SIGKILL')
  })

  after(async () => {
    await cluster.deleteTopics(run)
    await cluster.close()
    rmSync(dir, { recursive: true, force: true })
  })

  for (const guarantee of ['exactly_once_v2', 'at_least_once'] as const) {
    const exactlyOnce = guarantee === 'exactly_once_v2'
    it(`the flights demo under ${guarantee}: every task comes back from its local state and the changelog's tail, and ${exactlyOnce ? 'the committed output equals a single embedded run' : 'nothing of a single embedded run is missing'}`, async () => {
      const prefix = `${run}-${guarantee}-`
      for (const topic of FLIGHT_TOPICS) await cluster.createTopic(`${prefix}${topic}`, PARTITIONS)
      const flights = await flightRecords(FLIGHTS)
      const half = Math.ceil(FLIGHTS / 2)
      const expected = await embeddedFlights(flights)
      const stateDir = join(dir, guarantee)
      const start = (name: string): Instance => {
        const i = new Instance(name, [`${prefix}app`, prefix, '-', guarantee], 'flights', { stateDir })
        instances.push(i)
        return i
      }
      const output = async (): Promise<string[]> => {
        const read = new Map<string, ReadRecord[]>()
        for (const topic of FLIGHT_OUTPUTS) read.set(`${prefix}${topic}`, (await cluster.readAll(`${prefix}${topic}`, PARTITIONS)).flat())
        return flightLines(prefix, read)
      }
      const identity = (line: string): string => line.slice(0, line.indexOf('|', line.indexOf('|') + 1)) + line.slice(line.lastIndexOf('|'))
      const flightsTopic = `${prefix}flights`

      const first = start('first')
      await until('the instance runs every task', () => first.tasks.length === PARTITIONS, 90_000, () => first.describe())
      // Fed in small batches, so that the instance is mid-work when it dies.
      const feeding = (async () => {
        for (let i = 0; i < half; i += 500) {
          await cluster.produce(flightsTopic, PARTITIONS, flights.slice(i, i + 500))
          await new Promise((r) => setTimeout(r, 50))
        }
      })()
      await until('a third of the flights are processed', () => first.processed >= FLIGHTS / 3, 90_000, () => first.describe())
      first.kill('SIGKILL')
      assert.equal(await first.exited, 'SIGKILL')
      instances.splice(0)
      await feeding
      await cluster.produce(flightsTopic, PARTITIONS, flights.slice(half))

      const back = start('back')
      await until('every task runs again', () => back.tasks.length === PARTITIONS && back.restoring.length === 0, 120_000, () => back.describe())
      const restored = restores(back.log())
      process.stdout.write(`# ${guarantee}: restored after SIGKILL: ${restored.map((r) => `${r.taskId} ${r.local ?? 0} local + ${r.tail} from the changelog`).join(', ')}\n`)
      assert.deepEqual(
        restored.map((r) => r.taskId).sort(),
        Array.from({ length: PARTITIONS }, (_, p) => `0_${p}`),
        'one restore per task',
      )
      assert.ok(
        restored.every((r) => r.local !== undefined && r.local > 0),
        'every task from its local state',
      )
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
        () => `${written} written, ${missing.length} of ${expected.length} missing (${missing.slice(0, 3).join(', ')}, ...); ${back.describe()}`,
      )
      back.kill('SIGTERM')
      assert.equal(await back.exited, 0, 'stopped cleanly')
      instances.splice(0)
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
