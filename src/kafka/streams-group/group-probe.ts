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
 * Answers of a coordinator not ready yet (COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
 * NOT_COORDINATOR): on a fresh cluster the first FindCoordinator creates the offsets topic, and the
 * coordinator is not available until it exists.
 */
const NOT_READY = new Set([14, 15, 16])
/** How long a coordinator not ready is waited for, asked again every RETRY_MS. */
const READY_TIMEOUT_MS = 30_000
const RETRY_MS = 250

/**
 * Asks the cluster at `bootstrapServers` (its first broker) whether it has streams groups
 * (ApiVersions), and, if it has, group `groupId`'s type from its coordinator (FindCoordinator, then
 * ListGroups there: a broker lists only the groups it coordinates).
 */
export async function probeGroup(bootstrapServers: string, clientId: string, security: WireSecurity | undefined, groupId: string): Promise<GroupFacts> {
  const lib = await loadWire()
  const bootstrap = parseBootstrap(bootstrapServers)[0] as { host: string; port: number }
  const links: WireLink[] = []
  const open = async (host: string, port: number): Promise<WireLink> => {
    const link = openLink(lib, clientId, host, port, security)
    links.push(link)
    await link.ready
    return link
  }
  try {
    const first = await open(bootstrap.host, bootstrap.port)
    const versions = (await lib.apiVersionsV3.api.async(first.connection, 'punctual', '1').catch(responseOf)) as { apiKeys: Array<{ apiKey: number }> }
    if (!versions.apiKeys.some((k) => k.apiKey === STREAMS_GROUP_HEARTBEAT)) return { streamsGroups: false, groupType: undefined }
    return { streamsGroups: true, groupType: await groupTypeOf(lib, first, open, groupId) }
  } finally {
    for (const link of links) void link.connection.close().catch(() => {})
  }
}

async function groupTypeOf(lib: WireLibrary, first: WireLink, open: (host: string, port: number) => Promise<WireLink>, groupId: string): Promise<string | undefined> {
  const deadline = Date.now() + READY_TIMEOUT_MS
  for (;;) {
    const found = (await lib.findCoordinatorV6.api.async(first.connection, GROUP_KEY, [groupId]).catch(responseOf)) as { coordinators: Array<{ host: string; port: number; errorCode: number; errorMessage: string | null }> }
    const coordinator = found.coordinators[0]
    let errorCode = coordinator?.errorCode ?? -1
    if (coordinator !== undefined && errorCode === 0) {
      const link = await open(coordinator.host, coordinator.port)
      const listed = (await lib.listGroupsV5.api.async(link.connection, [], []).catch(responseOf)) as { errorCode: number; groups: Array<{ groupId: string; groupType: string }> }
      if (listed.errorCode === 0) return listed.groups.find((g) => g.groupId === groupId)?.groupType
      errorCode = listed.errorCode
    }
    if (!NOT_READY.has(errorCode) || Date.now() > deadline) throw new Error(`the coordinator of group ${groupId} answered error ${errorCode}${coordinator?.errorMessage ? ` (${coordinator.errorMessage})` : ''}`)
    await sleep(RETRY_MS)
  }
}
