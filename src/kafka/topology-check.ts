import { createHash } from 'node:crypto'
import { PunctualError } from '../errors.js'
import type { Topology } from '../processor/topology.js'
import type { GroupAdmin } from './instance-metadata.js'

/**
 * The group consumer's `client.id` carries a fingerprint of the instance's topology after this mark
 * (before the application server's, which stays last): the group protocol the runtime uses (KIP-848)
 * has no user data, and a group's description gives each member's client id.
 */
const TOPOLOGY_MARK = '|topology='

/** What the check needs of an admin client besides `describeGroups`: the groups of the cluster with their states. */
export interface GroupLister {
  listGroups(): Promise<{ readonly groups: ReadonlyArray<{ readonly groupId: string; readonly state: number }> }>
}

/**
 * librdkafka's group states (`rd_kafka_consumer_group_state_t`) of a group without members: dead, empty.
 * Any other (stable, rebalancing, or a state of KIP-848's it has no code for, "assigning" or
 * "reconciling", which it lists as unknown) has members to describe.
 */
const GROUP_WITHOUT_MEMBERS = new Set([4, 5])

/**
 * A fingerprint of what instances of one application must share: each sub-topology's source topics and
 * stores (hence its changelogs and tasks), the sinks, and the global stores. Processing logic may differ
 * between instances (a rolling upgrade of a filter, say); a different shape of tasks may not.
 */
export function topologyFingerprint(topology: Topology): string {
  const shape = {
    subtopologies: topology.subtopologies().map((s) => ({ id: s.id, sources: [...s.sourceTopics].sort(), stores: s.stores.map((b) => b.name).sort() })),
    sinks: topology.topicNames().sinks,
    globals: topology.globalStores().map((g) => `${g.builder.name}<-${g.topic}`).sort(),
  }
  return createHash('sha256').update(JSON.stringify(shape)).digest('hex').slice(0, 12)
}

/** The client id with the topology's fingerprint after it. */
export function clientIdWithTopology(clientId: string, fingerprint: string): string {
  return `${clientId}${TOPOLOGY_MARK}${fingerprint}`
}

/** The topology fingerprint a member's client id carries, if any. */
export function topologyOfClientId(clientId: string): string | undefined {
  const at = clientId.lastIndexOf(TOPOLOGY_MARK)
  if (at < 0) return undefined
  const rest = clientId.slice(at + TOPOLOGY_MARK.length)
  const end = rest.indexOf('|')
  return end < 0 ? rest : rest.slice(0, end)
}

/**
 * Refuses to join a group whose members run another topology (Kafka Streams refuses a member whose
 * topology differs): two applications sharing an id would split the input partitions, and each would
 * leave the other's tasks unrun. Members that carry no fingerprint are not punctual instances: not judged.
 */
export async function checkGroupTopology(admin: GroupAdmin & GroupLister, applicationId: string, fingerprint: string): Promise<void> {
  // Only a group with members is described: the client's description of a group it cannot describe (not
  // there yet, its coordinator loading) can crash the process (confluent-kafka-javascript issue 531).
  const listed = (await admin.listGroups()).groups.find((g) => g.groupId === applicationId)
  if (listed === undefined || GROUP_WITHOUT_MEMBERS.has(listed.state)) return
  const described = await admin.describeGroups([applicationId])
  const members = described.groups[0]?.members ?? []
  const other = members.map((m) => ({ clientId: m.clientId, topology: topologyOfClientId(m.clientId) })).find((m) => m.topology !== undefined && m.topology !== fingerprint)
  if (other === undefined) return
  throw new PunctualError(
    'INVALID_TOPOLOGY',
    `applicationId "${applicationId}": the group's running instances run a different topology (member ${other.clientId}: topology ${other.topology}; this instance: ${fingerprint}). Instances of one application must have the same sub-topologies, source and sink topics and stores: give a different application its own applicationId, or stop every instance of the old topology before starting the new one`,
  )
}
