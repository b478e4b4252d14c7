import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { CheckpointStore } from '../../src/state/checkpoint-store.js'
import type { ReadRecord } from './cluster.js'
import { Instance } from './processes.js'
import { onSharedBroker } from './shared-broker.js'
import { embeddedFlights, FLIGHT_OUTPUTS, FLIGHT_TOPICS, flightLines, flightRecords, outputDifference, PARTITIONS, until } from './workload.js'

const FLIGHTS = 48_000
/** Restarts of the soak test per guarantee (30 for the figure: PUNCTUAL_KAFKA_LOCAL_STATE_KILLS=30). */
const KILLS = Number(process.env.PUNCTUAL_KAFKA_LOCAL_STATE_KILLS ?? 4)
/** The guarantees it runs under (PUNCTUAL_KAFKA_LOCAL_STATE_GUARANTEES=at_least_once: one; a long soak of both takes longer than a test file may). */
const GUARANTEES = (process.env.PUNCTUAL_KAFKA_LOCAL_STATE_GUARANTEES ?? 'exactly_once_v2,at_least_once').split(',') as Array<'exactly_once_v2' | 'at_least_once'>

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

describe('KafkaRuntime local state: an instance killed with SIGKILL again and again, restarted on its own state directory each time', () => {
  const broker = onSharedBroker('ls')
  const { run } = broker
  const dir = mkdtempSync(join(tmpdir(), 'punctual-local-state-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  for (const guarantee of GUARANTEES) {
    const exactlyOnce = guarantee === 'exactly_once_v2'
    it(`the flights demo under ${guarantee}, killed ${KILLS} times (every other time right after a commit is complete on Kafka, before its local half) and restarted on its own state directory: each restart reads only the changelog after its local state, and ${exactlyOnce ? 'the committed output equals a single embedded run' : 'nothing of a single embedded run is missing'}`, async () => {
      const prefix = `${run}-soak-${guarantee}-`
      for (const topic of FLIGHT_TOPICS) await broker.cluster.createTopic(`${prefix}${topic}`, PARTITIONS)
      const flights = await flightRecords(FLIGHTS)
      const expected = await embeddedFlights(flights)
      const stateDir = join(dir, `soak-${guarantee}`)
      const chunk = Math.ceil(FLIGHTS / (KILLS + 1))
      const flightsTopic = `${prefix}flights`
      const output = async (): Promise<string[]> => {
        const read = new Map<string, ReadRecord[]>()
        for (const topic of FLIGHT_OUTPUTS) read.set(`${prefix}${topic}`, (await broker.cluster.readAll(`${prefix}${topic}`, PARTITIONS)).flat())
        return flightLines(prefix, read)
      }
      const identity = (line: string): string => line.slice(0, line.indexOf('|', line.indexOf('|') + 1)) + line.slice(line.lastIndexOf('|'))
      /** Per task: changelog records past what its local state reaches (end offsets less its offsets), read while no instance runs. */
      /** Tasks with local state (a local commit) when the last run died: the others restore from the changelog. */
      const local = new Set<string>()
      const gaps = async (): Promise<Map<string, number>> => {
        const store = CheckpointStore.open(stateDir)
        const out = new Map<string, number>()
        local.clear()
        try {
          for (let p = 0; p < PARTITIONS; p++) {
            const position = store.load(`0_${p}`)?.changelog
            if (position !== undefined) local.add(`0_${p}`)
            const offsets = position?.offsets ?? {}
            let gap = 0
            for (const [topic, offset] of Object.entries(offsets)) gap += ((await broker.cluster.offsets(topic))[p] as { high: number }).high - offset
            out.set(`0_${p}`, gap)
          }
        } finally {
          await store.close()
        }
        return out
      }
      let injected = 0
      let tails = 0
      let gapsBefore: Map<string, number> | undefined
      let last: Instance | undefined
      for (let k = 0; k <= KILLS; k++) {
        const inject = k < KILLS && k % 2 === 0
        const i = broker.spawned(new Instance(`run${k}`, [`${prefix}app`, prefix, '-', guarantee], 'flights', { stateDir, ...(inject ? { killAfterCommit: 2 + (k % 4) } : {}) }))
        await until(`run ${k} restored every task`, () => i.exit !== undefined || restores(i.log()).length === PARTITIONS, 120_000, () => i.describe())
        const restored = restores(i.log())
        if (k > 0) {
          assert.equal(restored.length, PARTITIONS, `run ${k}: one restore per task (${i.describe()})`)
          for (const r of restored) {
            // A task the last run never committed locally (killed before its first commit took it) has nothing there.
            if (!local.has(r.taskId)) {
              assert.equal(r.local, undefined, `run ${k}: task ${r.taskId}, without local state, restored from the changelog`)
              continue
            }
            assert.ok(r.local !== undefined, `run ${k}: task ${r.taskId} restored from its local state (${JSON.stringify(restored)}; ${i.log().split('\n').filter((l) => / is not used /.test(l)).join('; ')})`)
            // The tail is at most what the changelog holds past the local state (markers and aborted records are not restored).
            assert.ok(r.tail <= (gapsBefore?.get(r.taskId) ?? 0), `run ${k}: task ${r.taskId} read ${r.tail} records from the changelog, more than the ${gapsBefore?.get(r.taskId)} past its local state`)
            tails += r.tail
          }
        }
        // This run's part of the input, fed in small batches while it runs (and dies).
        const part = flights.slice(k * chunk, (k + 1) * chunk)
        const feeding = (async () => {
          for (let at = 0; at < part.length; at += 400) {
            await broker.cluster.produce(flightsTopic, PARTITIONS, part.slice(at, at + 400))
            await new Promise((r) => setTimeout(r, 40))
          }
        })()
        if (k === KILLS) {
          await feeding
          last = i
          break
        }
        if (inject) {
          // It kills itself after its commit; should that commit not come (the chunk done in fewer commits), it is killed from here.
          const how = await i.exitWithin(20_000)
          if (how === undefined) i.kill('SIGKILL')
          else if (/killed after commit/.test(i.log())) injected++
        } else {
          await new Promise((r) => setTimeout(r, 100 + ((k * 397) % 900)))
          i.kill('SIGKILL')
        }
        assert.equal(await i.exited, 'SIGKILL', `run ${k} died by SIGKILL: ${i.failure ?? ''}`)
        await feeding
        gapsBefore = await gaps()
      }
      process.stdout.write(`# ${guarantee}: ${KILLS} kills, ${injected} right after a commit complete on Kafka; ${tails} changelog records restored in all\n`)
      assert.ok(injected > 0, 'at least one kill between the Kafka commit and the local one')
      const back = last as Instance
      let missing: string[] = []
      await until(
        'the output holds everything of the embedded run',
        async () => {
          const have = new Set((await output()).map(identity))
          missing = expected.filter((l) => !have.has(identity(l)))
          return missing.length === 0
        },
        120_000,
        () => `${missing.length} of ${expected.length} missing; ${back.describe()}`,
      )
      back.kill('SIGTERM')
      assert.equal(await back.exited, 0, 'stopped cleanly')
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
