import { setTimeout as sleep } from 'node:timers/promises'
import { loadWire, openLink, parseBootstrap, responseOf } from '../broker-wire.js'
import type { WireLibrary, WireLink } from '../broker-wire.js'
import type { WireSecurity } from '../wire-security.js'
import { STREAMS_GROUP_HEARTBEAT } from './protocol.js'

/** What the cluster says of streams groups and of the application's group: what the default group protocol is chosen from. */
export interface GroupFacts {
  /** The cluster takes StreamsGroupHeartbeat (KIP-1071: Kafka 4.2 and later, streams groups enabled). */
  readonly streamsGroups: boolean
  /** The type of the group (`classic`, `consumer`, `streams`, ...); undefined when it does not exist. */
  readonly groupType: string | undefined
}

/** FindCoordinator's key type of a group. */
const GROUP_KEY = 0
/**
 * Answers of a coordinator moving or not ready yet (COORDINATOR_LOAD_IN_PROGRESS,
 * COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR): on a fresh cluster the first FindCoordinator creates the
 * offsets topic, and the coordinator is not available until it exists.
 */
export const COORDINATOR_NOT_READY: ReadonlySet<number> = new Set([14, 15, 16])

/** FindCoordinator's answer for one group. */
export interface CoordinatorAnswer {
  readonly host: string
  readonly port: number
  readonly errorCode: number
  readonly errorMessage: string | null
}

/** Asks the broker of `link` where group `groupId`'s coordinator is (FindCoordinator v6); undefined: no answer for the group. */
export async function findCoordinator(lib: WireLibrary, link: WireLink, groupId: string): Promise<CoordinatorAnswer | undefined> {
  const response = (await lib.findCoordinatorV6.api.async(link.connection, GROUP_KEY, [groupId]).catch(responseOf)) as { coordinators: CoordinatorAnswer[] }
  return response.coordinators[0]
}
/** How long a coordinator not ready is waited for, asked again every RETRY_MS. */
const READY_TIMEOUT_MS = 30_000
const RETRY_MS = 250

/**
 * Asks the cluster at `bootstrapServers` whether it has streams groups (ApiVersions), and, if it has,
 * group `groupId`'s type from its coordinator (FindCoordinator, then ListGroups there: a broker lists
 * only the groups it coordinates). The bootstrap servers are tried in turn until one answers.
 */
export async function probeGroup(bootstrapServers: string, clientId: string, security: WireSecurity | undefined, groupId: string): Promise<GroupFacts> {
  const lib = await loadWire()
  let failure: unknown
  for (const { host, port } of parseBootstrap(bootstrapServers)) {
    let first: WireLink | undefined
    try {
      first = await opened(lib, clientId, host, port, security)
      if ((await heartbeatVersion(lib, first)) === undefined) return { streamsGroups: false, groupType: undefined }
      return { streamsGroups: true, groupType: await groupTypeOf(lib, first, (h, p) => opened(lib, clientId, h, p, security), groupId) }
    } catch (err) {
      failure = err
    } finally {
      if (first !== undefined) close(first)
    }
  }
  throw failure
}

/** The highest StreamsGroupHeartbeat version the broker of `link` takes; undefined: it has no streams groups. */
export async function heartbeatVersion(lib: WireLibrary, link: WireLink): Promise<number | undefined> {
  const versions = (await lib.apiVersionsV3.api.async(link.connection, 'punctual', '1').catch(responseOf)) as { apiKeys: Array<{ apiKey: number; maxVersion: number }> }
  return versions.apiKeys.find((k) => k.apiKey === STREAMS_GROUP_HEARTBEAT)?.maxVersion
}

/** A connection to `host:port`, once it is ready (closed again if it cannot be made). */
async function opened(lib: WireLibrary, clientId: string, host: string, port: number, security: WireSecurity | undefined): Promise<WireLink> {
  const link = openLink(lib, clientId, host, port, security)
  try {
    await link.ready
  } catch (err) {
    close(link)
    throw err
  }
  return link
}

function close(link: WireLink): void {
  void link.connection.close().catch(() => {})
}

/** The group's type, asked of its coordinator; a coordinator not ready yet is asked again, for up to READY_TIMEOUT_MS. */
async function groupTypeOf(lib: WireLibrary, first: WireLink, open: (host: string, port: number) => Promise<WireLink>, groupId: string): Promise<string | undefined> {
  const deadline = Date.now() + READY_TIMEOUT_MS
  for (;;) {
    const coordinator = await findCoordinator(lib, first, groupId)
    let answer = coordinator === undefined ? 'no coordinator' : `FindCoordinator error ${coordinator.errorCode}${coordinator.errorMessage ? ` (${coordinator.errorMessage})` : ''}`
    let errorCode = coordinator?.errorCode ?? -1
    if (coordinator !== undefined && errorCode === 0) {
      const link = await open(coordinator.host, coordinator.port)
      try {
        const listed = (await lib.listGroupsV5.api.async(link.connection, [], []).catch(responseOf)) as { errorCode: number; groups: Array<{ groupId: string; groupType: string }> }
        if (listed.errorCode === 0) return listed.groups.find((g) => g.groupId === groupId)?.groupType
        errorCode = listed.errorCode
        answer = `ListGroups error ${errorCode}`
      } finally {
        close(link)
      }
    }
    if (!COORDINATOR_NOT_READY.has(errorCode) || Date.now() > deadline) throw new Error(`the coordinator of group ${groupId} answered ${answer}`)
    await sleep(RETRY_MS)
  }
}
