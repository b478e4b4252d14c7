// StreamsGroupHeartbeat v0 as Kafka's StreamsGroupHeartbeatRequest.json / Response.json lay it out,
// written and read field by field here with @platformatic/kafka's own writer and reader.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Reader, Writer } from '@platformatic/kafka'
import { readHeartbeat, writeHeartbeat } from '../../src/kafka/streams-group/protocol.js'
import type { ProtocolReader, ProtocolWriter } from '../../src/kafka/streams-group/protocol.js'
import { JoinWindows, StreamsBuilder } from '../../src/index.js'
import { describeTopology } from '../../src/kafka/streams-group/topology-description.js'
import { planTopics } from '../../src/kafka/topics.js'

type R = ProtocolReader & { readUnsignedInt16(): number }
const bytes = (w: unknown): Buffer => (w as { buffer: Buffer }).buffer
const reader = (b: Buffer): R => Reader.from(b) as unknown as R
const strings = (r: R): string[] => r.readArray((x) => x.readString(), true, false)
const int16s = (r: R): number[] => r.readArray((x) => x.readInt16(), true, false)
const taskIds = (r: R): Array<[string, number[]]> | null => r.readNullableArray((x) => [x.readString(), x.readArray((y) => y.readInt32(), true, false)] as [string, number[]])
const keyValues = (r: R): Array<[string, string]> | null => r.readNullableArray((x) => [x.readString(), x.readString()] as [string, string])
const topicInfos = (r: R): unknown[] => r.readArray((x) => ({ name: x.readString(), partitions: x.readInt32(), replicationFactor: x.readInt16(), configs: keyValues(x as R) }))

describe('StreamsGroupHeartbeat v0', () => {
  it('a join request: every field in the schema order, the topology with its sub-topologies, empty task lists, no static membership', () => {
    const b = new StreamsBuilder()
    b.stream<string, string>('orders').groupByKey().count().toStream().to('counts')
    const topology = b.build()
    const subtopologies = describeTopology(topology, 'app', planTopics(topology, 'app', new Map([['orders', 4], ['counts', 4]])))
    const w = writeHeartbeat(Writer.create() as unknown as ProtocolWriter, {
      groupId: 'app',
      memberId: 'm1',
      memberEpoch: 0,
      endpointInformationEpoch: -1,
      rebalanceTimeoutMs: 300_000,
      topology: { epoch: 0, subtopologies },
      owned: { active: [], standby: [], warmup: [] },
      processId: 'p1',
      userEndpoint: { host: 'host-1', port: 8080 },
      clientTags: [['zone', 'a']],
    })
    const r = reader(bytes(w))
    assert.equal(r.readString(), 'app')
    assert.equal(r.readString(), 'm1')
    assert.equal(r.readInt32(), 0)
    assert.equal(r.readInt32(), -1)
    assert.equal(r.readNullableString(), null, 'InstanceId')
    assert.equal(r.readNullableString(), null, 'RackId')
    assert.equal(r.readInt32(), 300_000)
    assert.equal(r.readInt8(), 1, 'Topology present')
    assert.equal(r.readInt32(), 0, 'Topology.Epoch')
    const subs = r.readArray((x) => {
      const s = x as R
      return { id: s.readString(), sources: strings(s), regex: strings(s), changelogs: topicInfos(s), sinks: strings(s), repartitionSources: topicInfos(s), copartition: s.readArray((g) => [int16s(g as R), int16s(g as R), int16s(g as R)]) }
    })
    r.readTaggedFields()
    assert.deepEqual(subs, [
      {
        id: '0',
        sources: ['orders'],
        regex: [],
        changelogs: [
          { name: 'app-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog', partitions: 0, replicationFactor: 0, configs: [['cleanup.policy', 'compact']] },
          { name: 'app-punctual-0-changelog', partitions: 0, replicationFactor: 0, configs: [['cleanup.policy', 'compact']] },
        ],
        sinks: [],
        repartitionSources: [],
        copartition: [],
      },
    ])
    assert.deepEqual(taskIds(r), [], 'ActiveTasks')
    assert.deepEqual(taskIds(r), [], 'StandbyTasks')
    assert.deepEqual(taskIds(r), [], 'WarmupTasks')
    assert.equal(r.readNullableString(), 'p1')
    assert.equal(r.readInt8(), 1, 'UserEndpoint present')
    assert.deepEqual([r.readString(), r.readUnsignedInt16()], ['host-1', 8080])
    r.readTaggedFields()
    assert.deepEqual(keyValues(r), [['zone', 'a']])
    assert.equal(r.readNullableArray(() => 0), null, 'TaskOffsets')
    assert.equal(r.readNullableArray(() => 0), null, 'TaskEndOffsets')
    assert.equal(r.readBoolean(), false, 'ShutdownApplication')
    r.readTaggedFields()
    assert.equal((r as unknown as { position: number }).position, bytes(w).length, 'nothing after the last field')
  })

  it('a heartbeat with nothing new: null topology, null task lists, -1 rebalance timeout', () => {
    const w = writeHeartbeat(Writer.create() as unknown as ProtocolWriter, { groupId: 'g', memberId: 'm', memberEpoch: 7, endpointInformationEpoch: 2, rebalanceTimeoutMs: -1 })
    const r = reader(bytes(w))
    assert.deepEqual([r.readString(), r.readString(), r.readInt32(), r.readInt32(), r.readNullableString(), r.readNullableString(), r.readInt32(), r.readInt8()], ['g', 'm', 7, 2, null, null, -1, -1])
    assert.deepEqual([taskIds(r), taskIds(r), taskIds(r), r.readNullableString(), r.readInt8(), keyValues(r)], [null, null, null, null, -1, null])
  })

  it('task offsets and end offsets: each a sub-topology, a partition and an int64 offset, with its tagged fields', () => {
    const w = writeHeartbeat(Writer.create() as unknown as ProtocolWriter, {
      groupId: 'g',
      memberId: 'm',
      memberEpoch: 7,
      endpointInformationEpoch: 2,
      rebalanceTimeoutMs: -1,
      taskOffsets: [{ subtopologyId: '0', partition: 3, offset: 5_000_000_000 }],
      taskEndOffsets: [{ subtopologyId: '1', partition: 0, offset: 12 }, { subtopologyId: '0', partition: 3, offset: 5_000_000_100 }],
    })
    const r = reader(bytes(w))
    assert.deepEqual([r.readString(), r.readString(), r.readInt32(), r.readInt32(), r.readNullableString(), r.readNullableString(), r.readInt32(), r.readInt8()], ['g', 'm', 7, 2, null, null, -1, -1])
    assert.deepEqual([taskIds(r), taskIds(r), taskIds(r), r.readNullableString(), r.readInt8(), keyValues(r)], [null, null, null, null, -1, null])
    const offsets = (x: R): Array<[string, number, bigint]> | null => x.readNullableArray((y) => [y.readString(), y.readInt32(), (y as unknown as { readInt64(): bigint }).readInt64()] as [string, number, bigint])
    assert.deepEqual(offsets(r), [['0', 3, 5_000_000_000n]], 'TaskOffsets')
    assert.deepEqual(offsets(r), [['1', 0, 12n], ['0', 3, 5_000_000_100n]], 'TaskEndOffsets')
    assert.equal(r.readBoolean(), false, 'ShutdownApplication')
    r.readTaggedFields()
    assert.equal((r as unknown as { position: number }).position, bytes(w).length, 'nothing after the last field')
  })

  it('a response: the error, epoch, interval, statuses, the three task lists and the endpoints, as the coordinator writes them', () => {
    const w = Writer.create()
      .appendInt32(0)
      .appendInt16(0)
      .appendString(null)
      .appendString('m1')
      .appendInt32(5)
      .appendInt32(500)
      .appendInt32(10_000)
      .appendInt32(60_000)
      .appendArray([[3, 'Internal topics are missing: x']], (x, [code, detail]) => x.appendInt8(code as number).appendString(detail as string))
      .appendArray([['0', [0, 2]]], (x, [s, ps]) => x.appendString(s as string).appendArray(ps as number[], (y, p) => y.appendInt32(p), true, false))
      .appendArray([['0', [1]]], (x, [s, ps]) => x.appendString(s as string).appendArray(ps as number[], (y, p) => y.appendInt32(p), true, false))
      .appendArray([], () => undefined)
      .appendInt32(3)
      .appendArray([0], (x) =>
        x
          .appendString('host-1')
          .appendUnsignedInt16(8080)
          .appendTaggedFields()
          .appendArray([['in', [0, 2]]], (y, [t, ps]) => y.appendString(t as string).appendArray(ps as number[], (z, p) => z.appendInt32(p), true, false))
          .appendArray([], () => undefined),
      )
      .appendTaggedFields()
    const r = readHeartbeat(reader(bytes(w)))
    assert.deepEqual(r, {
      errorCode: 0,
      errorMessage: null,
      memberId: 'm1',
      memberEpoch: 5,
      heartbeatIntervalMs: 500,
      acceptableRecoveryLag: 10_000,
      taskOffsetIntervalMs: 60_000,
      status: [{ code: 3, detail: 'Internal topics are missing: x' }],
      assigned: { active: [{ subtopologyId: '0', partitions: [0, 2] }], standby: [{ subtopologyId: '0', partitions: [1] }], warmup: [] },
      endpointInformationEpoch: 3,
      partitionsByUserEndpoint: [{ host: 'host-1', port: 8080, active: [{ topic: 'in', partitions: [0, 2] }], standby: [] }],
    })
  })
})

describe('describeTopology: the topology as a streams group coordinator takes it', () => {
  it('a repartition: the first sub-topology writes the repartition topic, the second reads it with its partition count and config; each keeps its changelogs; a join of two topics makes one co-partition group', () => {
    const b = new StreamsBuilder()
    const clicks = b.stream<string, string>('clicks')
    clicks.groupBy((_k, v) => v).count().toStream().to('per-page')
    const views = b.stream<string, string>('views')
    views.join(b.stream<string, string>('buys'), (v, w) => `${v}${w}`, JoinWindows.ofTimeDifferenceWithNoGrace(1000)).to('joined')
    const topology = b.build()
    const subs = describeTopology(topology, 'app', planTopics(topology, 'app', new Map([['clicks', 4], ['per-page', 4], ['views', 3], ['buys', 3], ['joined', 3]])))
    const repartitioned = subs.find((s) => s.repartitionSourceTopics.length > 0)
    const writer = subs.find((s) => s.repartitionSinkTopics.length > 0)
    const joining = subs.find((s) => s.sourceTopics.includes('views'))
    assert.ok(repartitioned !== undefined && writer !== undefined && joining !== undefined)
    assert.deepEqual(writer.sourceTopics, ['clicks'])
    assert.deepEqual(writer.repartitionSinkTopics, [repartitioned.repartitionSourceTopics[0]?.name])
    assert.match(repartitioned.repartitionSourceTopics[0]?.name ?? '', /^app-.*-repartition$/)
    assert.equal(repartitioned.repartitionSourceTopics[0]?.partitions, 4)
    assert.deepEqual(repartitioned.repartitionSourceTopics[0]?.configs, [['cleanup.policy', 'delete'], ['retention.ms', '-1'], ['segment.bytes', '52428800']])
    assert.ok(repartitioned.stateChangelogTopics.every((t) => t.partitions === 0 && t.name.endsWith('-changelog')))
    assert.deepEqual(joining.sourceTopics, ['buys', 'views'])
    assert.deepEqual(joining.copartitionGroups, [{ sourceTopics: [0, 1], repartitionSourceTopics: [] }])
    assert.deepEqual(subs.map((s) => s.id), [...subs.map((s) => s.id)].sort((x, y) => Number(x) - Number(y)))
    // Every list is in Java's order, so that members send byte-identical topologies.
    for (const s of subs) assert.deepEqual(s.stateChangelogTopics.map((t) => t.name), [...s.stateChangelogTopics.map((t) => t.name)].sort())
  })
})
