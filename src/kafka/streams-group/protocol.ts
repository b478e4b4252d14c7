/**
 * Kafka's StreamsGroupHeartbeat (API key 88, KIP-1071), version 0: the request a member of a streams
 * group sends and the response the group coordinator gives, as Kafka 4.2 to 4.4 define them
 * (`StreamsGroupHeartbeatRequest.json`, `StreamsGroupHeartbeatResponse.json`). Version 0 is the one every
 * broker with streams groups takes; it is flexible (compact strings and arrays, tagged fields after
 * each struct). Written and read with `@platformatic/kafka`'s writer and reader, which no Node client
 * uses for this API: none speaks it.
 */

export const STREAMS_GROUP_HEARTBEAT = 88
export const HEARTBEAT_VERSION = 0

/** Member epochs with a meaning of their own. */
export const JOIN_EPOCH = 0
export const LEAVE_EPOCH = -1

/** A topic the coordinator creates for the group (a repartition or changelog topic). */
export interface TopicInfo {
  readonly name: string
  /** 0: no number enforced (always so for changelog topics: the coordinator derives it). */
  readonly partitions: number
  /** 0 or -1: the broker's default. */
  readonly replicationFactor: number
  readonly configs: ReadonlyArray<readonly [key: string, value: string]>
}

/** A sub-topology as the coordinator sees it: what it reads, writes back and keeps. */
export interface SubtopologyInfo {
  /** "0", "1", ...: the sub-topology's number, as Kafka Streams sends it. */
  readonly id: string
  readonly sourceTopics: readonly string[]
  readonly repartitionSinkTopics: readonly string[]
  readonly stateChangelogTopics: readonly TopicInfo[]
  readonly repartitionSourceTopics: readonly TopicInfo[]
  /** Groups of topics that must be co-partitioned: indexes into `sourceTopics` and into `repartitionSourceTopics`. */
  readonly copartitionGroups: ReadonlyArray<{ readonly sourceTopics: readonly number[]; readonly repartitionSourceTopics: readonly number[] }>
}

/** Tasks of one sub-topology: the partitions of its inputs. */
export interface TaskIds {
  readonly subtopologyId: string
  readonly partitions: readonly number[]
}

/** A task's changelog offsets, summed over its changelog partitions (Kafka Streams' offset sums). */
export interface TaskOffset {
  readonly subtopologyId: string
  readonly partition: number
  readonly offset: number
}

export interface HeartbeatRequest {
  readonly groupId: string
  readonly memberId: string
  readonly memberEpoch: number
  readonly endpointInformationEpoch: number
  /** -1: unchanged since the last heartbeat; sent at a join. */
  readonly rebalanceTimeoutMs: number
  /** Only at a join (epoch 0). */
  readonly topology?: { readonly epoch: number; readonly subtopologies: readonly SubtopologyInfo[] }
  /** The tasks the member owns, all three or none (unchanged since the last heartbeat). */
  readonly owned?: { readonly active: readonly TaskIds[]; readonly standby: readonly TaskIds[]; readonly warmup: readonly TaskIds[] }
  /** At a join: the instance's id, shared by its members. */
  readonly processId?: string
  /** At a join: where this instance answers interactive queries. */
  readonly userEndpoint?: { readonly host: string; readonly port: number }
  /** At a join: tags for rack-aware standby placement (possibly none). */
  readonly clientTags?: ReadonlyArray<readonly [key: string, value: string]>
  /** Per task with local state here but not running active here: how far into its changelogs the state reaches (Kafka 4.4 and later take them). */
  readonly taskOffsets?: readonly TaskOffset[]
  /** Per such task whose changelogs' ends are known: their ends. */
  readonly taskEndOffsets?: readonly TaskOffset[]
  readonly shutdownApplication?: boolean
}

/** A group status (code: STATUS_* below) with its detail. */
export interface GroupStatus {
  readonly code: number
  readonly detail: string
}

export const STATUS_STALE_TOPOLOGY = 0
export const STATUS_MISSING_SOURCE_TOPICS = 1
export const STATUS_INCORRECTLY_PARTITIONED_TOPICS = 2
export const STATUS_MISSING_INTERNAL_TOPICS = 3
export const STATUS_SHUTDOWN_APPLICATION = 4
export const STATUS_ASSIGNMENT_DELAYED = 5

export interface HeartbeatResponse {
  readonly errorCode: number
  readonly errorMessage: string | null
  readonly memberId: string
  readonly memberEpoch: number
  readonly heartbeatIntervalMs: number
  readonly acceptableRecoveryLag: number
  readonly taskOffsetIntervalMs: number
  readonly status: readonly GroupStatus[]
  /** The tasks assigned, all three or none (unchanged since the last heartbeat). */
  readonly assigned: { readonly active: readonly TaskIds[]; readonly standby: readonly TaskIds[]; readonly warmup: readonly TaskIds[] } | undefined
  readonly endpointInformationEpoch: number
  /** Per member endpoint, the input partitions of its active and standby tasks; undefined when unchanged. */
  readonly partitionsByUserEndpoint: UserEndpoints | undefined
}

/** Per member endpoint (`applicationServer`), the input partitions of its active and standby tasks. */
export type UserEndpoints = ReadonlyArray<{ readonly host: string; readonly port: number; readonly active: readonly TopicPartitions[]; readonly standby: readonly TopicPartitions[] }>

export interface TopicPartitions {
  readonly topic: string
  readonly partitions: readonly number[]
}

/** What the codec needs of `@platformatic/kafka`'s Writer (each call returns the writer). */
export interface ProtocolWriter {
  appendInt8(value: number): ProtocolWriter
  appendInt16(value: number): ProtocolWriter
  appendInt32(value: number): ProtocolWriter
  appendInt64(value: bigint): ProtocolWriter
  appendUnsignedInt16(value: number): ProtocolWriter
  appendBoolean(value: boolean): ProtocolWriter
  appendString(value: string | null | undefined, compact?: boolean): ProtocolWriter
  appendArray<T>(value: readonly T[] | null | undefined, entry: (w: ProtocolWriter, item: T) => unknown, compact?: boolean, taggedFields?: boolean): ProtocolWriter
  appendTaggedFields(): ProtocolWriter
}

/** What the codec needs of `@platformatic/kafka`'s Reader. */
export interface ProtocolReader {
  readInt8(): number
  readInt16(): number
  readInt32(): number
  readUnsignedInt16(): number
  readBoolean(): boolean
  readString(compact?: boolean): string
  readNullableString(compact?: boolean): string | null
  readArray<T>(entry: (r: ProtocolReader) => T, compact?: boolean, taggedFields?: boolean): T[]
  readNullableArray<T>(entry: (r: ProtocolReader) => T, compact?: boolean, taggedFields?: boolean): T[] | null
  readUnsignedVarInt(): number
  readTaggedFields(): void
}

const writeTaskIds = (w: ProtocolWriter, t: TaskIds): unknown => w.appendString(t.subtopologyId).appendArray(t.partitions, (x, p) => x.appendInt32(p), true, false)
const writeTaskOffset = (w: ProtocolWriter, t: TaskOffset): unknown => w.appendString(t.subtopologyId).appendInt32(t.partition).appendInt64(BigInt(t.offset))
const writeKeyValue = (w: ProtocolWriter, [k, v]: readonly [string, string]): unknown => w.appendString(k).appendString(v)
const writeTopicInfo = (w: ProtocolWriter, t: TopicInfo): unknown => w.appendString(t.name).appendInt32(t.partitions).appendInt16(t.replicationFactor).appendArray(t.configs, writeKeyValue)
const writeStrings = (w: ProtocolWriter, xs: readonly string[]): ProtocolWriter => w.appendArray(xs, (x, t) => x.appendString(t), true, false)
const writeInt16s = (w: ProtocolWriter, xs: readonly number[]): ProtocolWriter => w.appendArray(xs, (x, i) => x.appendInt16(i), true, false)

/** A Subtopology struct (its tagged fields are written by the array). No source topic regex: brokers refuse one. */
function writeSubtopology(w: ProtocolWriter, s: SubtopologyInfo): void {
  writeStrings(w.appendString(s.id), s.sourceTopics)
  writeStrings(w, [])
  w.appendArray(s.stateChangelogTopics, writeTopicInfo)
  writeStrings(w, s.repartitionSinkTopics)
  w.appendArray(s.repartitionSourceTopics, writeTopicInfo)
  w.appendArray(s.copartitionGroups, (x, g) => writeInt16s(writeInt16s(writeInt16s(x, g.sourceTopics), []), g.repartitionSourceTopics))
}

/** Writes the request's body (the connection writes the header). */
export function writeHeartbeat(w: ProtocolWriter, r: HeartbeatRequest): ProtocolWriter {
  w.appendString(r.groupId).appendString(r.memberId).appendInt32(r.memberEpoch).appendInt32(r.endpointInformationEpoch)
  // InstanceId, RackId: no static membership (brokers before 4.4 refuse it), no rack.
  w.appendString(null).appendString(null)
  w.appendInt32(r.rebalanceTimeoutMs)
  // Topology: a nullable struct, its presence a signed byte (-1 null, 1 present).
  if (r.topology === undefined) w.appendInt8(-1)
  else {
    w.appendInt8(1).appendInt32(r.topology.epoch)
    w.appendArray(r.topology.subtopologies, writeSubtopology)
    w.appendTaggedFields()
  }
  w.appendArray(r.owned?.active ?? null, writeTaskIds)
  w.appendArray(r.owned?.standby ?? null, writeTaskIds)
  w.appendArray(r.owned?.warmup ?? null, writeTaskIds)
  w.appendString(r.processId ?? null)
  if (r.userEndpoint === undefined) w.appendInt8(-1)
  else w.appendInt8(1).appendString(r.userEndpoint.host).appendUnsignedInt16(r.userEndpoint.port).appendTaggedFields()
  w.appendArray(r.clientTags ?? null, writeKeyValue)
  // Null unless given: brokers before 4.4 refuse them.
  w.appendArray(r.taskOffsets ?? null, writeTaskOffset)
  w.appendArray(r.taskEndOffsets ?? null, writeTaskOffset)
  return w.appendBoolean(r.shutdownApplication === true).appendTaggedFields()
}

const readTaskIds = (r: ProtocolReader): TaskIds => ({ subtopologyId: r.readString(), partitions: r.readArray((x) => x.readInt32(), true, false) })
const readTopicPartitions = (r: ProtocolReader): TopicPartitions => ({ topic: r.readString(), partitions: r.readArray((x) => x.readInt32(), true, false) })

/** Reads the response's body (version 0). A non-zero error code is in the result, not thrown. */
export function readHeartbeat(r: ProtocolReader): HeartbeatResponse {
  r.readInt32()
  const errorCode = r.readInt16()
  const errorMessage = r.readNullableString()
  const memberId = r.readString()
  const memberEpoch = r.readInt32()
  const heartbeatIntervalMs = r.readInt32()
  const acceptableRecoveryLag = r.readInt32()
  const taskOffsetIntervalMs = r.readInt32()
  const status = r.readNullableArray((x) => ({ code: x.readInt8(), detail: x.readString() })) ?? []
  const active = r.readNullableArray(readTaskIds)
  const standby = r.readNullableArray(readTaskIds)
  const warmup = r.readNullableArray(readTaskIds)
  const endpointInformationEpoch = r.readInt32()
  const byEndpoint = r.readNullableArray((x) => {
    // UserEndpoint: a struct that is not nullable here (no presence byte), with its tagged fields.
    const host = x.readString()
    const port = x.readUnsignedInt16()
    x.readTaggedFields()
    return { host, port, active: x.readArray(readTopicPartitions), standby: x.readArray(readTopicPartitions) }
  })
  r.readTaggedFields()
  return {
    errorCode,
    errorMessage,
    memberId,
    memberEpoch,
    heartbeatIntervalMs,
    acceptableRecoveryLag,
    taskOffsetIntervalMs,
    status,
    assigned: active === null || standby === null || warmup === null ? undefined : { active, standby, warmup },
    endpointInformationEpoch,
    partitionsByUserEndpoint: byEndpoint ?? undefined,
  }
}
