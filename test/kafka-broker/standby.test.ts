import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, afterEach, describe, it } from 'node:test'
import { kafkaTool } from '../../scripts/kafka-broker.mjs'
import { partitionForStringKey } from '../../src/processor/murmur2.js'
import { bootstrapServers } from './cluster.js'
import { Instance, processedTo } from './processes.js'
import { onSharedBroker } from './shared-broker.js'
import { until } from './workload.js'

/** Keys of the big task (partition 0 of the input); PUNCTUAL_KAFKA_STANDBY_KEYS sets another size. */
const KEYS = Number(process.env.PUNCTUAL_KAFKA_STANDBY_KEYS ?? 1_000_000)
const SMALL_KEYS = 1000

// Standby tasks (KIP-1071 streams groups): the broker places a standby of each task on another
// instance, which keeps the task's local state up with its changelog; when the owner dies, the task
// moves to its standby and restores only the changelog's tail.

describe('standby tasks in a streams group', () => {
  const broker = onSharedBroker('sb')
  const { run } = broker
  const dir = mkdtempSync(join(tmpdir(), 'punctual-standby-'))
  const instances: Instance[] = []
  afterEach(() => {
    for (const i of instances.splice(0)) i.kill('SIGKILL')
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  for (const guarantee of ['exactly_once_v2', 'at_least_once'] as const) {
    const exactlyOnce = guarantee === 'exactly_once_v2'
    it(`${guarantee}, three instances, one standby replica: the owner of the task holding ${KEYS.toLocaleString('en')} keys is killed (SIGKILL) mid-run; its standby takes the task over, restores only the changelog's tail, and ${exactlyOnce ? 'the committed output equals an uninterrupted run' : 'nothing of an uninterrupted run is missing'}`, async () => {
      const app = `${run}-${exactlyOnce ? 'eos' : 'alos'}`
      const input = `${app}-in`
      const output = `${app}-out`
      await broker.cluster.createTopic(input, 2)
      await broker.cluster.createTopic(output, 2)
      const set = kafkaTool('org.apache.kafka.tools.ConfigCommand', ['--bootstrap-server', bootstrapServers(), '--entity-type', 'groups', '--entity-name', `${app}-app`, '--alter', '--add-config', 'streams.num.standby.replicas=1'])
      assert.equal(set.status, 0, set.stderr)
      const keysOf = (partition: number, n: number): string[] => {
        const out: string[] = []
        for (let i = 0; out.length < n; i++) if (partitionForStringKey(`key-${i}`, 2) === partition) out.push(`key-${i}`)
        return out
      }
      const big = keysOf(0, KEYS)
      const small = keysOf(1, SMALL_KEYS)
      const at = (key: string, i: number) => ({ key, value: 'v', timestamp: 1_700_000_000_000 + i })
      const half = KEYS / 2
      await broker.cluster.produce(input, 2, [...big.slice(0, half), ...small].map(at))
      const first = (await broker.cluster.offsets(input)).map((o) => o.high)

      const start = (name: string): Instance => {
        const i = new Instance(name, [`${app}-app`, input, output, guarantee], 'counts', { groupProtocol: 'streams', commitIntervalMs: 1000, stateDir: join(dir, `${app}-${name}`) })
        instances.push(i)
        return i
      }
      const describe = (): string => instances.map((i) => `${i.describe()}, standbys ${i.standbys.map((s) => `${s.taskId}:${s.applied}`).join(' ') || '-'}`).join(' | ')
      // One instance processes the first half alone; then two more join. The broker moves a dead owner's
      // task to a member without an active task: that is where the standby must be, and joining so puts it there.
      const a = start('a')
      await until('the first instance processed the first half', async () => processedTo([a], input, first), 600_000, describe)
      start('b')
      start('c')
      const ownerOf = (): Instance | undefined => instances.find((i) => i.exit === undefined && i.tasks.includes('0_0') && i.restoring.length === 0)
      const standbyOf = (): Instance | undefined => instances.find((i) => i.standbys.some((s) => s.taskId === '0_0' && s.applied > 0))
      await until('task 0_0 runs, and its standby follows on the instance without an active task', async () => ownerOf() !== undefined && standbyOf()?.tasks.length === 0, 300_000, describe)
      // Mid-run: the second half comes, and the owner is killed a third of the way through it.
      const feeding = broker.cluster.produce(input, 2, big.slice(half).map((k, i) => at(k, half + i)))
      await until('the owner of task 0_0 counted a third of the second half', async () => (ownerOf()?.positions[`${input}-0`] ?? 0) >= (first[0] as number) + KEYS / 6, 600_000, describe)
      const owner = ownerOf() as Instance
      const standby = standbyOf() as Instance
      assert.notEqual(owner, standby)
      const r = kafkaTool('org.apache.kafka.tools.streams.StreamsGroupCommand', ['--bootstrap-server', bootstrapServers(), '--describe', '--group', `${app}-app`, '--members'])
      assert.equal(r.status, 0, r.stderr)
      assert.equal(r.stdout.split('\n').filter((l) => l.startsWith(`${app}-app`)).length, 3, `kafka-streams-groups.sh lists the three instances:\n${r.stdout}`)
      assert.match(r.stdout, /STANDBY: 0:\[0\]/, 'and the standby of task 0_0')

      const killedAt = owner.positions[`${input}-0`] ?? 0
      owner.kill('SIGKILL')
      const killed = Date.now()
      await until('the standby runs task 0_0', async () => standby.tasks.includes('0_0') && standby.restoring.length === 0, 300_000, describe)
      const restored = /task 0_0 restored from its local state \((\d+) records\) and the changelog's tail \((\d+) records\)/.exec(standby.log())
      assert.ok(restored !== null, `task 0_0 restored from the standby's local state:\n${standby.log().split('\n').filter((l) => l.includes('0_0')).join('\n')}`)
      const [local, tail] = [Number(restored[1]), Number(restored[2])]
      process.stdout.write(`# ${guarantee}: task 0_0 (${KEYS} keys, its owner killed at input offset ${killedAt}) moved to its standby in ${Date.now() - killed} ms (kill to running): ${local} records from local state, ${tail} from the changelog's tail\n`)
      assert.ok(tail < KEYS / 100, `${tail} changelog records restored: only the tail`)

      // The rest of the input, then a key of each task again: its count goes on from the committed one.
      await feeding
      const ends = (await broker.cluster.offsets(input)).map((o) => o.high)
      await until('every record is processed', async () => processedTo(instances.filter((i) => i !== owner), input, ends), 600_000, describe)
      const again = [big[0], big[Math.floor(KEYS / 2)], big[KEYS - 1], small[0]] as string[]
      await broker.cluster.produce(input, 2, again.map((k, i) => at(k, KEYS + i)))
      const total = (await broker.cluster.offsets(input)).map((o) => o.high)
      await until('the keys seen again are processed', async () => processedTo(instances.filter((i) => i !== owner), input, total), 120_000, describe)
      for (const i of instances.filter((i) => i !== owner)) i.kill('SIGTERM')
      for (const i of instances.filter((i) => i !== owner)) assert.equal(await i.exitWithin(60_000), 0, `${i.name} stops cleanly: ${i.failure ?? ''}`)

      // An uninterrupted run writes each key's count once (1), and 2 for the keys seen again.
      const written = new Map<string, string[]>()
      for (const records of await broker.cluster.readAll(output, 2)) for (const rec of records) written.set(rec.key as string, [...(written.get(rec.key as string) ?? []), String(rec.value)])
      const expected = (key: string): string[] => (again.includes(key) ? ['1', '2'] : ['1'])
      const keys = [...big, ...small]
      if (exactlyOnce) {
        const wrong = keys.filter((k) => (written.get(k) ?? []).join() !== expected(k).join())
        assert.deepEqual(wrong.slice(0, 5).map((k) => `${k}: ${(written.get(k) ?? []).join()}`), [], `${wrong.length} keys whose output differs from an uninterrupted run`)
        assert.equal(written.size, keys.length)
      } else {
        const missing = keys.filter((k) => !expected(k).every((v) => (written.get(k) ?? []).includes(v)) || (written.get(k) ?? []).some((v) => !expected(k).includes(v)))
        assert.deepEqual(missing.slice(0, 5).map((k) => `${k}: ${(written.get(k) ?? []).join()}`), [], `${missing.length} keys whose counts are missing or wrong`)
      }
    })
  }
})
