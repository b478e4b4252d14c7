import { PunctualError } from '../errors.js'

/** Where an application instance answers queries (Kafka Streams' `HostInfo`, from `applicationServer`). */
export interface HostInfo {
  /** The host name or address, as the instance's `applicationServer` gives it. */
  readonly host: string
  /** The port of its `applicationServer` (`host:port`). */
  readonly port: number
}

/** Which instance holds a key of a store (Kafka Streams' `KeyQueryMetadata`; punctual keeps no standbys). */
export interface KeyQueryMetadata {
  /** The instance whose task holds the key now. */
  readonly activeHost: HostInfo
  /** The instances keeping a standby of the key's task (in a streams group; otherwise none). */
  readonly standbyHosts: readonly HostInfo[]
  /** The input partition of the key: its task's partition. */
  readonly partition: number
}

/** One instance of the application (Kafka Streams' `StreamsMetadata`). */
export interface StreamsMetadata {
  /** Where the instance answers queries. */
  readonly hostInfo: HostInfo
  /** The stores of the tasks it runs. */
  readonly stateStoreNames: readonly string[]
  /** The input partitions assigned to it. */
  readonly topicPartitions: ReadonlyArray<{ readonly topic: string; readonly partition: number }>
}

/**
 * The group consumer's `client.id` carries the instance's `applicationServer` after this separator: the
 * group protocol the runtime uses (KIP-848) has no user data to share it in, and a group's description
 * gives each member's client id with its assignment.
 */
const SERVER_MARK = '|server='

/** `host:port`, as Kafka Streams' `application.server`. */
export function parseHostInfo(where: string, server: string): HostInfo {
  const at = typeof server === 'string' ? server.lastIndexOf(':') : -1
  const port = at < 0 ? NaN : Number(server.slice(at + 1))
  if (at <= 0 || !Number.isInteger(port) || port < 0 || port > 65535 || server.includes('|')) {
    throw new PunctualError('INVALID_CONFIG', `${where}: applicationServer must be host:port, got ${JSON.stringify(server)}`)
  }
  return { host: server.slice(0, at), port }
}

/** The group consumer's client id: the one configured (or punctual's), with the application server after it. */
export function clientIdWithServer(clientId: string, server: HostInfo): string {
  return `${clientId}${SERVER_MARK}${server.host}:${server.port}`
}

/** The application server a member's client id carries, if any. */
export function serverOfClientId(clientId: string): HostInfo | undefined {
  const at = clientId.lastIndexOf(SERVER_MARK)
  if (at < 0) return undefined
  const server = clientId.slice(at + SERVER_MARK.length)
  const colon = server.lastIndexOf(':')
  const port = Number(server.slice(colon + 1))
  return colon <= 0 || !Number.isInteger(port) ? undefined : { host: server.slice(0, colon), port }
}

/** A member of the group as its description gives it. */
export interface GroupMember {
  readonly clientId: string
  readonly assignment: { readonly topicPartitions: ReadonlyArray<{ readonly topic: string; readonly partition: number }> }
}

/** The instances of the group that carry an application server, with their assignments. */
export function instancesOf(members: readonly GroupMember[]): Array<{ readonly hostInfo: HostInfo; readonly topicPartitions: ReadonlyArray<{ readonly topic: string; readonly partition: number }> }> {
  const out: Array<{ readonly hostInfo: HostInfo; readonly topicPartitions: ReadonlyArray<{ readonly topic: string; readonly partition: number }> }> = []
  for (const m of members) {
    const hostInfo = serverOfClientId(m.clientId)
    if (hostInfo !== undefined) out.push({ hostInfo, topicPartitions: m.assignment.topicPartitions.map(({ topic, partition }) => ({ topic, partition })) })
  }
  return out
}

/** What the directory needs of an admin client. */
export interface GroupAdmin {
  describeGroups(groups: string[]): Promise<{ readonly groups: ReadonlyArray<{ readonly error?: { readonly message: string } | null; readonly members: readonly GroupMember[] }> }>
  disconnect(): Promise<void>
}

/** Where a store's keys live: the cluster's name of its sub-topology's first source topic, and its partition count. */
export interface StoreLocation {
  readonly topic: string
  readonly partitions: number
}

/**
 * The instances of an application as its consumer group describes them (members, their application
 * servers, their partitions), asked when a query wants them: Kafka Streams keeps the same from its
 * last rebalance; punctual asks the group coordinator, so the answer is as of the call.
 */
export class InstanceDirectory {
  private admin: Promise<GroupAdmin> | undefined

  constructor(
    private readonly groupId: string,
    private readonly connectAdmin: () => Promise<GroupAdmin>,
  ) {}

  /** The instance whose task holds a key of a store located so, or undefined when no member has its partition now. */
  async keyMetadata(location: StoreLocation, keyPartition: number): Promise<KeyQueryMetadata | undefined> {
    for (const i of instancesOf(await this.members())) {
      if (i.topicPartitions.some((tp) => tp.topic === location.topic && tp.partition === keyPartition)) {
        return { activeHost: i.hostInfo, standbyHosts: [], partition: keyPartition }
      }
    }
    return undefined
  }

  /** Every instance with an application server, with the stores of the tasks whose partitions it has. */
  async all(storesOfPartition: (topic: string, partition: number) => readonly string[]): Promise<StreamsMetadata[]> {
    return instancesOf(await this.members()).map((i) => ({
      hostInfo: i.hostInfo,
      topicPartitions: i.topicPartitions,
      stateStoreNames: [...new Set(i.topicPartitions.flatMap((tp) => storesOfPartition(tp.topic, tp.partition)))].sort(),
    }))
  }

  async close(): Promise<void> {
    const admin = this.admin
    this.admin = undefined
    if (admin !== undefined) await (await admin.catch(() => undefined))?.disconnect()
  }

  private async members(): Promise<readonly GroupMember[]> {
    this.admin ??= this.connectAdmin()
    const admin = await this.admin.catch((err: unknown) => {
      this.admin = undefined
      throw err
    })
    const described = await admin.describeGroups([this.groupId])
    const group = described.groups[0]
    if (group === undefined) return []
    if (group.error !== undefined && group.error !== null) throw new PunctualError('ILLEGAL_STATE', `describing the group ${this.groupId}: ${group.error.message}`)
    return group.members
  }
}
