import { loadWire, openLink, parseBootstrap, responseOf } from '../broker-wire.js'
import type { WireLink } from '../broker-wire.js'
import type { WireSecurity } from '../wire-security.js'
import type { CommittedOffset } from '../client-supplier.js'
import type { TopicPartitionRef } from '../fetcher.js'
import type { HeartbeatTransport } from './member.js'
import { COORDINATOR_NOT_READY, findCoordinator, heartbeatVersion } from './group-probe.js'
import { HEARTBEAT_VERSION, readHeartbeat, STREAMS_GROUP_HEARTBEAT, writeHeartbeat } from './protocol.js'
import type { HeartbeatRequest, HeartbeatResponse, ProtocolReader, ProtocolWriter } from './protocol.js'

/** Errors after which the coordinator is looked up again. */
const MOVED = COORDINATOR_NOT_READY

/**
 * Requests to a group's coordinator, over `@platformatic/kafka`'s connections: a streams group member's
 * heartbeats and commits, and the committed offsets of any group (a consumer group's too: read as the
 * group's, not as a member's, they do not depend on librdkafka's view of its coordinator).
 */
export interface GroupWire {
  readonly send: HeartbeatTransport
  /**
   * Commits offsets as member `memberId` at `memberEpoch` (OffsetCommit v9): the coordinator takes them
   * at the member's current epoch, or an older one for partitions of active tasks the member still
   * holds. The error code per `topic:partition` (0: committed; 113 STALE_MEMBER_EPOCH, 25
   * UNKNOWN_MEMBER_ID: the member no longer owns them).
   */
  commit(memberId: string, memberEpoch: number, offsets: ReadonlyArray<{ readonly topic: string; readonly partition: number; readonly offset: number; readonly metadata?: string }>): Promise<Map<string, number>>
  /** The group's committed offsets (OffsetFetch v9), stable ones with `requireStable`; per `topic:partition`, or its error code. */
  committed(partitions: ReadonlyArray<{ readonly topic: string; readonly partition: number }>, requireStable: boolean): Promise<Map<string, { offset: number; metadata: string | null } | { errorCode: number }>>
  /** Whether the coordinator takes task offsets in heartbeats: it speaks StreamsGroupHeartbeat v1 (Kafka 4.4 and later). */
  takesTaskOffsets(): Promise<boolean>
  close(): void
}

/**
 * Connects to the cluster at `bootstrapServers` for group `groupId`, secured by `security`: the coordinator is found with
 * FindCoordinator (v6) through a bootstrap server, and found again after a connection failure or an
 * answer saying it moved (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS).
 */
export async function connectGroupWire(bootstrapServers: string, clientId: string, groupId: string, security: WireSecurity | undefined): Promise<GroupWire> {
  const lib = await loadWire()
  const heartbeatApi = lib.createAPI(STREAMS_GROUP_HEARTBEAT, HEARTBEAT_VERSION, ((r: HeartbeatRequest) => writeHeartbeat(lib.Writer.create() as ProtocolWriter, r)) as never, (_c, _k, _v, reader) => readHeartbeat(reader as unknown as ProtocolReader))
  const bootstrap = parseBootstrap(bootstrapServers)
  let next = 0
  let closed = false

  const open = (host: string, port: number): WireLink => openLink(lib, clientId, host, port, security)
  const drop = (link: WireLink | undefined): void => {
    if (link !== undefined) void link.connection.close().catch(() => {})
  }
  const gone = (connection: WireLink['connection']): boolean => connection.status === 'closed' || connection.status === 'error'
  const find = async (): Promise<{ host: string; port: number }> => {
    const address = bootstrap[next++ % bootstrap.length] as { host: string; port: number }
    const link = open(address.host, address.port)
    try {
      await link.ready
      const found = await findCoordinator(lib, link, groupId)
      if (found === undefined || found.errorCode !== 0) throw Object.assign(new Error(`no coordinator for group ${groupId} yet: ${found?.errorMessage ?? `error ${found?.errorCode ?? '?'}`}`), { code: found?.errorCode })
      return { host: found.host, port: found.port }
    } finally {
      drop(link)
    }
  }

  /** The coordinator's connection, found once for every caller waiting meanwhile. */
  let current: Promise<WireLink> | undefined
  const linked = (): Promise<WireLink> => {
    if (current === undefined) {
      const made = (async () => {
        const at = await find()
        const link = open(at.host, at.port)
        try {
          await link.ready
        } catch (err) {
          drop(link)
          throw err
        }
        return link
      })()
      current = made
      made.catch(() => forget(made))
    }
    return current
  }
  /** Drops the connection `link` is (if it is still the current one): the next call finds the coordinator again. */
  const forget = (link: Promise<WireLink>): void => {
    if (current !== link) return
    current = undefined
    link.then(drop, () => {})
  }
  /** Runs `call` on the coordinator's connection; a failure, or an answer that it moved, makes the next call find it again. */
  const onCoordinator = async <T>(call: (link: WireLink) => Promise<T>, moved: (result: T) => boolean): Promise<T> => {
    if (closed) throw new Error(`the connection to the coordinator of group ${groupId} is closed`)
    let link = linked()
    if (gone((await link).connection)) {
      forget(link)
      link = linked()
    }
    try {
      const result = await call(await link)
      if (moved(result)) forget(link)
      return result
    } catch (err) {
      forget(link)
      throw err
    }
  }

  return {
    send: (request) => onCoordinator(async (link) => (await heartbeatApi.async(link.connection, request)) as HeartbeatResponse, (r) => MOVED.has(r.errorCode)),
    commit: (memberId, memberEpoch, offsets) =>
      onCoordinator(
        async (link) => {
          const topics = byTopic(offsets).map(([name, parts]) => ({ name, partitions: parts.map((p) => ({ partitionIndex: p.partition, committedOffset: BigInt(p.offset), committedLeaderEpoch: -1, committedMetadata: p.metadata ?? null })) }))
          const response = (await lib.offsetCommitV9.api.async(link.connection, groupId, memberEpoch, memberId, null, topics).catch(responseOf)) as { topics: Array<{ name: string; partitions: Array<{ partitionIndex: number; errorCode: number }> }> }
          const out = new Map<string, number>()
          for (const t of response.topics) for (const p of t.partitions) out.set(`${t.name}:${p.partitionIndex}`, p.errorCode)
          return out
        },
        (codes) => [...codes.values()].some((c) => MOVED.has(c)),
      ),
    committed: (partitions, requireStable) =>
      onCoordinator(
        async (link) => {
          // No member id and epoch -1: read as the group's offsets, not as a member's (the coordinator checks no epoch).
          const topics = byTopic(partitions).map(([name, parts]) => ({ name, partitionIndexes: parts.map((p) => p.partition) }))
          const response = (await lib.offsetFetchV9.api.async(link.connection, [{ groupId, memberId: null, memberEpoch: -1, topics }], requireStable).catch(responseOf)) as {
            groups: Array<{ errorCode: number; topics: Array<{ name: string; partitions: Array<{ partitionIndex: number; committedOffset: bigint; metadata: string | null; errorCode: number }> }> }>
          }
          const out = new Map<string, { offset: number; metadata: string | null } | { errorCode: number }>()
          for (const g of response.groups) {
            if (g.errorCode !== 0) throw Object.assign(new Error(`reading the offsets of group ${groupId}: error ${g.errorCode}`), { code: g.errorCode })
            for (const t of g.topics) for (const p of t.partitions) out.set(`${t.name}:${p.partitionIndex}`, p.errorCode !== 0 ? { errorCode: p.errorCode } : { offset: Number(p.committedOffset), metadata: p.metadata })
          }
          return out
        },
        () => false,
      ),
    // Asked of a bootstrap server: on a fresh cluster the coordinator is not there yet.
    takesTaskOffsets: async () => {
      const address = bootstrap[next++ % bootstrap.length] as { host: string; port: number }
      const link = open(address.host, address.port)
      try {
        await link.ready
        return ((await heartbeatVersion(lib, link)) ?? 0) >= 1
      } finally {
        drop(link)
      }
    },
    close: () => {
      closed = true
      if (current !== undefined) forget(current)
    },
  }
}

function byTopic<P extends { topic: string }>(partitions: readonly P[]): Array<[string, P[]]> {
  const out = new Map<string, P[]>()
  for (const p of partitions) out.set(p.topic, [...(out.get(p.topic) ?? []), p])
  return [...out]
}

/** OffsetFetch's answer for a partition whose offsets a pending transaction holds (asked for stable offsets). */
const UNSTABLE_OFFSET_COMMIT = 88

/**
 * The group's committed offsets of `partitions`, read through `group` (stable ones with `requireStable`);
 * -1 where none is. A partition's error rejects with its code, a pending transaction's (88,
 * UNSTABLE_OFFSET_COMMIT) saying so.
 */
export async function committedOffsets(group: GroupWire, partitions: readonly TopicPartitionRef[], requireStable: boolean): Promise<CommittedOffset[]> {
  const read = await group.committed(partitions, requireStable)
  return partitions.map((p) => {
    const r = read.get(`${p.topic}:${p.partition}`)
    if (r !== undefined && 'errorCode' in r) {
      const why = r.errorCode === UNSTABLE_OFFSET_COMMIT ? 'a transaction holding its offsets is still pending (UNSTABLE_OFFSET_COMMIT)' : `error ${r.errorCode}`
      throw Object.assign(new Error(`the group's offset of ${p.topic}-${p.partition}: ${why}`), { code: r.errorCode })
    }
    if (r === undefined || r.offset < 0) return { ...p, offset: -1 }
    // librdkafka writes a commit's metadata with its C string's terminating NUL, and strips it when it reads it back.
    const metadata = r.metadata?.replace(/\0+$/, '')
    return { ...p, offset: r.offset, ...(metadata === undefined ? {} : { metadata }) }
  })
}
