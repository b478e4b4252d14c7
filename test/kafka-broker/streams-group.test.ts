import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { kafkaProgram, kafkaTool } from '../../scripts/kafka-broker.mjs'
import { QueryableStoreTypes, silentLogger as quiet, StreamsBuilder } from '../../src/index.js'
import { KafkaRuntime } from '../../src/kafka/kafka-runtime.js'
import { connectGroupWire } from '../../src/kafka/streams-group/group-wire.js'
import type { GroupWire } from '../../src/kafka/streams-group/group-wire.js'
import { StreamsGroupMember } from '../../src/kafka/streams-group/member.js'
import type { StreamsAssignment, TaskOffsetSums } from '../../src/kafka/streams-group/member.js'
import type { HeartbeatRequest, HeartbeatResponse } from '../../src/kafka/streams-group/protocol.js'
import { describeTopology } from '../../src/kafka/streams-group/topology-description.js'
import { planTopics } from '../../src/kafka/topics.js'
import { systemClock } from '../../src/time/clock.js'
import { timerScheduler } from '../../src/time/scheduler.js'
import { silentLogger } from '../../src/util/logger.js'
import { bootstrapServers } from './cluster.js'
import { onSharedBroker } from './shared-broker.js'
import { counts, countsOf, embedded, lines, PARTITIONS as INPUT_PARTITIONS, records, until, windowedFinal } from './workload.js'
import { partitionForStringKey } from '../../src/processor/murmur2.js'

// Members of a Kafka streams group (KIP-1071), speaking StreamsGroupHeartbeat to the broker's group
// coordinator: the broker places the tasks, active and standby, and creates the internal topics from
// the topology the members send. The first cases drive members alone (they run no tasks); one runs the
// runtime with groupProtocol 'streams'.

const PARTITIONS = 4
const scheduler = timerScheduler(systemClock)

interface Joined {
  readonly name: string
  readonly member: StreamsGroupMember
  readonly wire: GroupWire
  readonly events: string[]
  /** While set, heartbeats wait (a paused process). */
  paused?: Promise<void>
}

describe('a streams group (KIP-1071) on the broker', () => {
  const broker = onSharedBroker('sg')
  const { run } = broker
  const joined: Joined[] = []

  afterEach(async () => {
    for (const j of joined.splice(0)) {
      await j.member.leave().catch(() => {})
      j.wire.close()
    }
  })

  /** A count per key of `${app}-in`, described for the coordinator. */
  function topologyOf(app: string) {
    const b = new StreamsBuilder()
    b.stream<string, string>(`${app}-in`).groupByKey().count().toStream().to(`${app}-out`)
    const topology = b.build()
    return describeTopology(topology, app, planTopics(topology, app, new Map([[`${app}-in`, PARTITIONS], [`${app}-out`, PARTITIONS]])))
  }

  async function join(app: string, name: string, taskOffsets?: () => TaskOffsetSums): Promise<Joined> {
    const wire = await connectGroupWire(bootstrapServers(), `${app}-${name}`, app, undefined)
    const events: string[] = []
    const j: Joined = { name, wire, events, member: undefined as unknown as StreamsGroupMember }
    const send = async (r: HeartbeatRequest): Promise<HeartbeatResponse> => {
      await j.paused
      return wire.send(r)
    }
    const member = new StreamsGroupMember(
      { groupId: app, memberId: `${app}-member-${name}`, processId: `${app}-process-${name}`, topology: topologyOf(app), rebalanceTimeoutMs: 10_000, ...(taskOffsets === undefined ? {} : { taskOffsets }) },
      send,
      {
        revoke: async (tasks) => void events.push(`revoke ${[...tasks].sort().join(',')}`),
        assign: async (a: StreamsAssignment) => void events.push(`assign ${[...a.active].sort().join(',')} / ${[...a.standby].sort().join(',')}`),
        lost: () => void events.push('lost'),
        status: () => {},
        fatal: (err) => void events.push(`fatal ${err.message}`),
      },
      systemClock,
      scheduler,
      silentLogger,
    )
    Object.assign(j, { member })
    member.start()
    joined.push(j)
    return j
  }

  const actives = (js: readonly Joined[]): string[] => js.flatMap((j) => [...j.member.assignment.active]).sort()
  const describeMembers = (app: string): string => {
    const r = kafkaTool('org.apache.kafka.tools.streams.StreamsGroupCommand', ['--bootstrap-server', bootstrapServers(), '--describe', '--group', app, '--members'])
    assert.equal(r.status, 0, r.stderr)
    return r.stdout
  }

  it('three members with one standby replica: the broker creates the internal topics, gives each task one active owner and a standby on another process, and kafka-streams-groups.sh lists the members and their tasks', async () => {
    const app = `${run}-three`
    await broker.cluster.createTopic(`${app}-in`, PARTITIONS)
    await broker.cluster.createTopic(`${app}-out`, PARTITIONS)
    const set = kafkaTool('org.apache.kafka.tools.ConfigCommand', ['--bootstrap-server', bootstrapServers(), '--entity-type', 'groups', '--entity-name', app, '--alter', '--add-config', 'streams.num.standby.replicas=1'])
    assert.equal(set.status, 0, set.stderr)
    const members = [await join(app, 'a'), await join(app, 'b'), await join(app, 'c')]
    const all = ['0_0', '0_1', '0_2', '0_3']
    await until('every task has one active owner and one standby, on another member', async () => {
      const standbys = members.flatMap((j) => [...j.member.assignment.standby]).sort()
      return JSON.stringify(actives(members)) === JSON.stringify(all) && JSON.stringify(standbys) === JSON.stringify(all)
    }, 60_000, () => members.map((j) => `${j.name}: ${j.events.join('; ')}`).join(' | '))
    for (const j of members) for (const t of j.member.assignment.standby) assert.ok(!j.member.assignment.active.has(t), `${j.name} holds ${t} both active and standby`)
    // The coordinator created the changelog topics from the topology.
    const topics = await broker.cluster.topics()
    assert.ok(topics.includes(`${app}-punctual-0-changelog`), 'the task changelog topic exists')
    // Kafka's own tool sees the group as the members hold it.
    await until('the tool shows every member', async () => describeMembers(app).split('\n').filter((l) => l.startsWith(app)).length === 3, 30_000)
    const lines = describeMembers(app).split('\n').filter((l) => l.startsWith(app))
    for (const j of members) {
      const line = lines.find((l) => l.includes(`${app}-member-${j.name}`))
      assert.ok(line !== undefined, `the tool lists member ${j.name}`)
      assert.ok(line.includes(`${app}-process-${j.name}`))
      const active = [...j.member.assignment.active].map((t) => t.split('_')[1]).sort().join(',')
      assert.ok(line.includes(`ACTIVE: 0:[${active}]`), `${line} shows ACTIVE: 0:[${active}]`)
      assert.ok(line.includes('STANDBY: 0:['), `${line} shows standby tasks`)
    }
  })

  it('a member that leaves: its tasks move to the others; a member whose heartbeats stop past the session timeout is fenced, loses its tasks and joins again', async () => {
    const app = `${run}-moves`
    await broker.cluster.createTopic(`${app}-in`, PARTITIONS)
    await broker.cluster.createTopic(`${app}-out`, PARTITIONS)
    const a = await join(app, 'a')
    const b = await join(app, 'b')
    await until('the tasks are split between the two', async () => a.member.assignment.active.size === 2 && b.member.assignment.active.size === 2, 60_000)
    const c = await join(app, 'c')
    await until('three members share the tasks', async () => actives([a, b, c]).length === PARTITIONS && [a, b, c].every((j) => j.member.assignment.active.size > 0), 60_000)
    assert.ok([a, b].some((j) => j.events.some((e) => e.startsWith('revoke'))), 'a task moved to the third member only after its owner revoked it')
    // c leaves: the others take its tasks.
    await c.member.leave()
    joined.splice(joined.indexOf(c), 1)
    c.wire.close()
    await until('two members hold every task again', async () => actives([a, b]).length === PARTITIONS, 30_000)
    // b's heartbeats stop for longer than the session timeout (6 s here).
    let resume: () => void = () => {}
    b.paused = new Promise((resolve) => (resume = resolve))
    await until('a holds every task', async () => a.member.assignment.active.size === PARTITIONS, 30_000)
    resume()
    b.paused = undefined
    await until('b was fenced, and joined again', async () => b.events.includes('lost') && b.member.assignment.active.size > 0, 30_000, () => b.events.join('; '))
    await until('the tasks are shared again', async () => actives([a, b]).length === PARTITIONS && a.member.assignment.active.size < PARTITIONS, 30_000)
    await sleep(0)
  })

  it("the runtime with groupProtocol 'streams', at least once: two instances share the tasks the coordinator places, every final window of a single embedded run is written, and one stopping hands its tasks to the other", async () => {
    const app = `${run}-runtime`
    await broker.cluster.createTopic(`${app}-in`, INPUT_PARTITIONS)
    await broker.cluster.createTopic(`${app}-out`, INPUT_PARTITIONS)
    const input = records(6000)
    const expected = await embedded(input, windowedFinal)
    const runtime = (): KafkaRuntime => broker.track(new KafkaRuntime(windowedFinal(`${app}-in`, `${app}-out`), { applicationId: `${app}-app`, bootstrapServers: bootstrapServers(), processingGuarantee: 'at_least_once', groupProtocol: 'streams', commitIntervalMs: 100, logger: quiet }))
    const a = runtime()
    const b = runtime()
    await a.start()
    await b.start()
    await until('the two instances share the tasks', async () => a.taskIds().length > 0 && b.taskIds().length > 0 && a.taskIds().length + b.taskIds().length === INPUT_PARTITIONS, 60_000, () => `a: ${a.taskIds().join(',')} b: ${b.taskIds().join(',')}`)
    await broker.cluster.produce(`${app}-in`, INPUT_PARTITIONS, input.slice(0, 3000))
    await until('the first half is processed', async () => a.metrics().processedRecords + b.metrics().processedRecords >= 3000, 60_000)
    const members = describeMembers(`${app}-app`).split('\n').filter((l) => l.startsWith(`${app}-app`))
    assert.equal(members.length, 2, 'kafka-streams-groups.sh lists the two instances')
    await b.stop()
    await until('a runs every task', async () => a.taskIds().length === INPUT_PARTITIONS, 60_000, () => a.taskIds().join(','))
    await broker.cluster.produce(`${app}-in`, INPUT_PARTITIONS, input.slice(3000))
    await until('every final window is written', async () => {
      const have = new Set(lines(await broker.cluster.readAll(`${app}-out`, INPUT_PARTITIONS)))
      return expected.every((l) => have.has(l))
    }, 90_000)
    await a.stop()
    // Its last commit went to the group as the member's: the group's offsets are the input's ends.
    const ends = (await broker.cluster.offsets(`${app}-in`)).map((e) => e.high)
    assert.deepEqual(await broker.cluster.committed(`${app}-app`, `${app}-in`), ends)
  })

  it('without groupProtocol: a new application joins a streams group, and one whose group is a consumer group stays a consumer group; the start log says which and why', async () => {
    const infos: string[] = []
    const logger = { ...quiet, info: (_f: unknown, message?: string) => void infos.push(message ?? ''), child: () => logger }
    const started = (): string | undefined => infos.find((m) => m.startsWith('started: '))
    const input = records(400)
    for (const [name, before] of [['fresh', undefined], ['legacy', 'consumer']] as const) {
      const app = `${run}-default-${name}`
      await broker.cluster.createTopic(`${app}-in`, INPUT_PARTITIONS)
      await broker.cluster.createTopic(`${app}-out`, INPUT_PARTITIONS)
      await broker.cluster.produce(`${app}-in`, INPUT_PARTITIONS, input)
      const runtime = (groupProtocol: 'consumer' | undefined): KafkaRuntime =>
        broker.track(new KafkaRuntime(counts(`${app}-in`, `${app}-out`), { applicationId: `${app}-app`, bootstrapServers: bootstrapServers(), commitIntervalMs: 100, logger, ...(groupProtocol === undefined ? {} : { groupProtocol }) }))
      if (before !== undefined) {
        const first = runtime(before)
        await first.start()
        await until('the first run processes the input', () => first.metrics().processedRecords >= input.length)
        await first.stop()
      }
      infos.length = 0
      const rt = runtime(undefined)
      await rt.start()
      await broker.cluster.produce(`${app}-in`, INPUT_PARTITIONS, input)
      // The second batch, and the first too when no run before processed it.
      await until('the input is processed', () => rt.metrics().processedRecords >= (before === undefined ? 2 : 1) * input.length)
      await rt.stop()
      if (name === 'fresh') {
        assert.equal(started(), `started: joining a streams group (KIP-1071: the broker places tasks and standbys); the cluster has streams groups (KIP-1071) and group ${app}-app is new`)
      } else {
        assert.equal(started(), `started: joining a consumer group (KIP-848); not a streams group, as group ${app}-app is a consumer group already, and a group does not change protocol in place`)
      }
      // Each key's count ends at twice its records: the second run counted on from the first's.
      const highest = new Map<string, number>()
      for (const l of lines(await broker.cluster.readAll(`${app}-out`, INPUT_PARTITIONS))) {
        const [key, n] = l.split('=') as [string, string]
        highest.set(key, Math.max(highest.get(key) ?? 0, Number(n)))
      }
      for (const [key, n] of countsOf(input)) assert.equal(highest.get(key), 2 * n, `the count of ${key}`)
    }
  })

  it('queryMetadataForKey in a streams group names the instance running the key’s task and the one keeping its standby, from the endpoints the coordinator sends', async () => {
    const app = `${run}-query`
    await broker.cluster.createTopic(`${app}-in`, INPUT_PARTITIONS)
    await broker.cluster.createTopic(`${app}-out`, INPUT_PARTITIONS)
    const set = kafkaTool('org.apache.kafka.tools.ConfigCommand', ['--bootstrap-server', bootstrapServers(), '--entity-type', 'groups', '--entity-name', `${app}-app`, '--alter', '--add-config', 'streams.num.standby.replicas=1'])
    assert.equal(set.status, 0, set.stderr)
    const runtime = (port: number): KafkaRuntime =>
      broker.track(new KafkaRuntime(counts(`${app}-in`, `${app}-out`), { applicationId: `${app}-app`, bootstrapServers: bootstrapServers(), processingGuarantee: 'at_least_once', groupProtocol: 'streams', applicationServer: `localhost:${port}`, commitIntervalMs: 500, logger: quiet }))
    const a = runtime(7001)
    const b = runtime(7002)
    await a.start()
    await b.start()
    const ports = new Map([[a, 7001], [b, 7002]])
    const key = 'some-key'
    const partition = partitionForStringKey(key, INPUT_PARTITIONS)
    const owner = (): KafkaRuntime | undefined => [a, b].find((r) => r.taskIds().includes(`0_${partition}`))
    await until('the task of the key runs on one instance and its standby on the other', async () => {
      const o = owner()
      const other = o === a ? b : a
      return o !== undefined && other.standbyProgress().some((s) => s.taskId === `0_${partition}`)
    }, 60_000, () => `a: ${a.taskIds().join(',')} / ${a.standbyProgress().map((s) => s.taskId).join(',')}; b: ${b.taskIds().join(',')} / ${b.standbyProgress().map((s) => s.taskId).join(',')}`)
    const o = owner() as KafkaRuntime
    const expected = { activeHost: { host: 'localhost', port: ports.get(o) }, standbyHosts: [{ host: 'localhost', port: ports.get(o === a ? b : a) }], partition }
    let answers = ''
    await until(
      'both instances answer with the owner and the standby',
      async () => (answers = JSON.stringify([await a.queryMetadataForKey('counts', key), await b.queryMetadataForKey('counts', key)])) === JSON.stringify([expected, expected]),
      30_000,
      () => answers,
    )
    const all = await a.metadataForAllStreamsClients()
    assert.deepEqual(all.map((m) => m.hostInfo.port).sort(), [7001, 7002])
    assert.deepEqual(all.flatMap((m) => m.topicPartitions.map((tp) => tp.partition)).sort(), Array.from({ length: INPUT_PARTITIONS }, (_, p) => p))
    assert.ok(all.every((m) => m.stateStoreNames.includes('counts')))

    // The standby's instance answers the key's count from the standby with enableStaleStores, once the owner committed it.
    await broker.cluster.produce(`${app}-in`, INPUT_PARTITIONS, Array.from({ length: 3 }, (_, i) => ({ key, value: 'v', timestamp: 1_700_000_000_000 + i })))
    const other = o === a ? b : a
    const type = QueryableStoreTypes.keyValueStore<string, number>()
    await until('the owner counted the key', async () => o.store('counts', type).get(key) === 3, 30_000)
    assert.equal(other.store('counts', type).get(key), undefined, 'without stale stores: not this instance’s key')
    await until('the standby has the count', async () => other.store('counts', type, { enableStaleStores: true }).get(key) === 3, 30_000, () => String(other.store('counts', type, { enableStaleStores: true }).get(key)))
  })

  it('task offsets: the coordinator (Kafka 4.4) takes the ones a member reports, as Kafka’s Admin client describes them', async () => {
    const app = `${run}-task-offsets`
    await broker.cluster.createTopic(`${app}-in`, PARTITIONS)
    await broker.cluster.createTopic(`${app}-out`, PARTITIONS)
    const wire = await connectGroupWire(bootstrapServers(), `${app}-probe`, app, undefined)
    assert.equal(await wire.takesTaskOffsets(), true, 'the broker speaks StreamsGroupHeartbeat v1')
    wire.close()
    const a = await join(app, 'a', () => ({ offsets: new Map([['0_1', 42], ['0_3', 7]]), endOffsets: new Map([['0_1', 50]]) }))
    await until('a has its tasks', async () => a.member.assignment.active.size === PARTITIONS, 30_000, () => a.events.join('; '))
    const described = kafkaProgram(new URL('fixtures/DescribeStreamsGroup.java', import.meta.url).pathname, [bootstrapServers(), app])
    assert.equal(described.status, 0, described.stderr)
    assert.equal(described.stdout.trim(), `${app}-member-a offsets=0_1:42,0_3:7 ends=0_1:50`)
  })

  it("offsets committed as a member: taken at the member's epoch for its tasks' partitions, refused at an epoch ahead of it (STALE_MEMBER_EPOCH) and once the group dropped the member (UNKNOWN_MEMBER_ID)", async () => {
    const app = `${run}-offsets`
    await broker.cluster.createTopic(`${app}-in`, PARTITIONS)
    await broker.cluster.createTopic(`${app}-out`, PARTITIONS)
    const a = await join(app, 'a')
    await until('a holds every task', async () => a.member.assignment.active.size === PARTITIONS, 60_000)
    const offsets = [...a.member.assignment.active].map((t) => ({ topic: `${app}-in`, partition: Number(t.split('_')[1]), offset: 10 + Number(t.split('_')[1]), metadata: 'punctual.commit=1' }))
    const memberId = `${app}-member-a`
    const epoch = a.member.memberEpoch
    assert.ok(epoch > 0)
    const taken = await a.wire.commit(memberId, epoch, offsets)
    assert.deepEqual([...taken.values()], [0, 0, 0, 0])
    const read = await a.wire.committed(offsets, true)
    assert.deepEqual(
      offsets.map((o) => read.get(`${o.topic}:${o.partition}`)),
      offsets.map((o) => ({ offset: o.offset, metadata: 'punctual.commit=1' })),
    )
    const ahead = await a.wire.commit(memberId, epoch + 1, offsets)
    assert.deepEqual([...ahead.values()], [113, 113, 113, 113], 'an epoch the member does not have yet')
    // The member leaves: a zombie's commit under its id is refused, and the offsets stay.
    await a.member.leave()
    const zombie = await a.wire.commit(memberId, epoch, offsets.map((o) => ({ ...o, offset: o.offset + 100 })))
    assert.deepEqual([...zombie.values()], [25, 25, 25, 25])
    const after = await a.wire.committed(offsets, true)
    assert.deepEqual(offsets.map((o) => (after.get(`${o.topic}:${o.partition}`) as { offset: number }).offset), offsets.map((o) => o.offset))
  })
})
