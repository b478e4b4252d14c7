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

  it(`three instances, one standby replica, at least once: the owner of the task holding ${KEYS.toLocaleString('en')} keys is killed (SIGKILL); its standby takes the task over, restores only the changelog's tail, and every count goes on from where it was`, async () => {
    const app = `${run}-sb`
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
    await broker.cluster.produce(input, 2, [...big, ...small].map(at))
    const ends = (await broker.cluster.offsets(input)).map((o) => o.high)

    for (const name of ['a', 'b', 'c']) instances.push(new Instance(name, [`${app}-app`, input, output, 'at_least_once'], 'counts', { groupProtocol: 'streams', commitIntervalMs: 1000, stateDir: join(dir, name) }))
    const describe = (): string => instances.map((i) => `${i.describe()}, standbys ${i.standbys.map((s) => `${s.taskId}:${s.applied}`).join(' ') || '-'}`).join(' | ')
    await until('every record is processed', async () => processedTo(instances, input, ends), 600_000, describe)
    // The records in the task's changelog partitions.
    const changelogEnds = async (): Promise<number> => {
      let sum = 0
      for (const topic of [`${app}-app-counts-changelog`, `${app}-app-punctual-0-changelog`]) sum += ((await broker.cluster.offsets(topic))[0] as { high: number }).high
      return sum
    }
    let written = 0
    await until('the owner committed a changelog record per key', async () => (written = await changelogEnds()) >= KEYS, 120_000, () => `${written} records; ${describe()}`)
    await until('the standby of task 0_0 applied the whole changelog', async () => instances.some((i) => i.standbys.some((s) => s.taskId === '0_0' && s.applied >= written)), 600_000, describe)
    const owner = instances.find((i) => i.tasks.includes('0_0')) as Instance
    const standby = instances.find((i) => i.standbys.some((s) => s.taskId === '0_0')) as Instance
    assert.notEqual(owner, standby)
    const r = kafkaTool('org.apache.kafka.tools.streams.StreamsGroupCommand', ['--bootstrap-server', bootstrapServers(), '--describe', '--group', `${app}-app`, '--members'])
    assert.equal(r.status, 0, r.stderr)
    assert.equal(r.stdout.split('\n').filter((l) => l.startsWith(`${app}-app`)).length, 3, `kafka-streams-groups.sh lists the three instances:\n${r.stdout}`)
    assert.match(r.stdout, /STANDBY: 0:\[0\]/, 'and the standby of task 0_0')

    owner.kill('SIGKILL')
    const killed = Date.now()
    await until('the standby runs task 0_0', async () => standby.tasks.includes('0_0') && !standby.restoring.some((t) => t.startsWith('0_0:')), 300_000, describe)
    const restored = /task 0_0 restored from its local state \((\d+) records\) and the changelog's tail \((\d+) records\)/.exec(standby.log())
    assert.ok(restored !== null, `task 0_0 restored from the standby's local state:\n${standby.log().split('\n').filter((l) => l.includes('0_0')).join('\n')}`)
    const [local, tail] = [Number(restored[1]), Number(restored[2])]
    process.stdout.write(`# task 0_0 (${KEYS} keys) moved to its standby in ${Date.now() - killed} ms (kill to running): ${local} records from local state, ${tail} from the changelog's tail\n`)
    assert.ok(tail < KEYS / 100, `${tail} changelog records restored: only the tail`)

    // Every count goes on from the one the dead owner committed.
    const again = [big[0], big[Math.floor(KEYS / 2)], big[KEYS - 1], small[0]] as string[]
    const before = (await broker.cluster.offsets(output)).map((o) => o.high)
    await broker.cluster.produce(input, 2, again.map((k, i) => at(k, KEYS + i)))
    const outputNow = async (): Promise<Map<string, string>> => {
      const out = new Map<string, string>()
      for (const [p, records] of (await broker.cluster.readAll(output, 2)).entries()) for (const rec of records) if (rec.offset >= (before[p] as number)) out.set(rec.key as string, String(rec.value))
      return out
    }
    await until('the second counts are written', async () => (await broker.cluster.offsets(output)).reduce((n, o, p) => n + o.high - (before[p] as number), 0) >= again.length, 120_000, describe)
    const counts = await outputNow()
    assert.deepEqual(Object.fromEntries(again.map((k) => [k, counts.get(k)])), Object.fromEntries(again.map((k) => [k, '2'])))
  })
})
