import { loadWire, openLink, parseBootstrap, responseOf } from '../broker-wire.js'
import type { WireLink } from '../broker-wire.js'
import type { HeartbeatTransport } from './member.js'
import { HEARTBEAT_VERSION, readHeartbeat, STREAMS_GROUP_HEARTBEAT, writeHeartbeat } from './protocol.js'
import type { HeartbeatRequest, ProtocolReader, ProtocolWriter } from './protocol.js'

/** FindCoordinator's key type of a group. */
const GROUP_KEY = 0
/** Errors after which the coordinator is looked up again. */
const MOVED = new Set([14, 15, 16])

/** The heartbeats of a streams group member, sent to the group's coordinator over `@platformatic/kafka`'s connections. */
export interface StreamsGroupWire {
  readonly send: HeartbeatTransport
  close(): void
}

/**
 * Connects to the cluster at `bootstrapServers` for group `groupId`: the coordinator is found with
 * FindCoordinator (v6) through a bootstrap server, and found again after a connection failure or an
 * answer saying it moved (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS).
 */
export async function connectStreamsGroup(bootstrapServers: string, clientId: string, groupId: string): Promise<StreamsGroupWire> {
  const lib = await loadWire()
  const heartbeatApi = lib.createAPI(STREAMS_GROUP_HEARTBEAT, HEARTBEAT_VERSION, ((r: HeartbeatRequest) => writeHeartbeat(lib.Writer.create() as ProtocolWriter, r)) as never, (_c, _k, _v, reader) => readHeartbeat(reader as unknown as ProtocolReader))
  const bootstrap = parseBootstrap(bootstrapServers)
  let next = 0
  let coordinator: WireLink | undefined

  const open = (host: string, port: number): WireLink => openLink(lib, clientId, host, port)
  const drop = (link: WireLink | undefined): void => {
    if (link !== undefined) void link.connection.close().catch(() => {})
  }
  const find = async (): Promise<{ host: string; port: number }> => {
    const address = bootstrap[next++ % bootstrap.length] as { host: string; port: number }
    const link = open(address.host, address.port)
    try {
      await link.ready
      const response = (await lib.findCoordinatorV6.api.async(link.connection, GROUP_KEY, [groupId]).catch(responseOf)) as { coordinators: Array<{ host: string; port: number; errorCode: number; errorMessage: string | null }> }
      const found = response.coordinators[0]
      if (found === undefined || found.errorCode !== 0) throw Object.assign(new Error(`no coordinator for group ${groupId} yet: ${found?.errorMessage ?? `error ${found?.errorCode ?? '?'}`}`), { code: found?.errorCode })
      return { host: found.host, port: found.port }
    } finally {
      drop(link)
    }
  }

  return {
    send: async (request) => {
      try {
        if (coordinator === undefined || coordinator.connection.status === 'closed' || coordinator.connection.status === 'error') {
          drop(coordinator)
          const at = await find()
          coordinator = open(at.host, at.port)
        }
        await coordinator.ready
        const response = await heartbeatApi.async(coordinator.connection, request)
        const r = response as ReturnType<typeof readHeartbeat>
        if (MOVED.has(r.errorCode)) {
          drop(coordinator)
          coordinator = undefined
        }
        return r
      } catch (err) {
        drop(coordinator)
        coordinator = undefined
        throw err
      }
    },
    close: () => {
      drop(coordinator)
      coordinator = undefined
    },
  }
}
