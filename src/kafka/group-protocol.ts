import type { ValidKafkaRuntimeConfig } from './config.js'
import type { GroupFacts } from './streams-group/group-probe.js'

type GroupProtocol = 'consumer' | 'streams'

/** The group protocol an instance uses, and why, as its start log says. */
export interface GroupProtocolChoice {
  readonly protocol: GroupProtocol
  readonly why: string
}

/**
 * The group protocol of `config`: the one set, or else a streams group (KIP-1071) where the cluster and
 * the settings allow one, and a consumer group where they do not. `probe` asks the cluster
 * (undefined: the supplier cannot, as without `@platformatic/kafka`); when asking fails, a consumer
 * group, which fails the start clearly if the group is a streams group.
 */
export async function chooseGroupProtocol(config: ValidKafkaRuntimeConfig, probe: (() => Promise<GroupFacts | undefined>) | undefined): Promise<GroupProtocolChoice> {
  if (config.groupProtocolSet) return { protocol: config.groupProtocol, why: `groupProtocol '${config.groupProtocol}' is set` }
  const consumer = (why: string): GroupProtocolChoice => ({ protocol: 'consumer', why: `not a streams group, as ${why}` })
  if (config.wireUnsupported !== undefined) return consumer(`a streams group speaks over punctual's own connections, which cannot honour the security settings: ${config.wireUnsupported}`)
  if (config.directFetch === false) return consumer("directFetch is false, and a streams group speaks over the direct fetch's connections")
  let facts: GroupFacts | undefined
  try {
    facts = await probe?.()
  } catch (err) {
    return consumer(`asking the cluster whether it has streams groups failed (${(err as Error).message})`)
  }
  if (facts === undefined) return consumer("@platformatic/kafka, whose connections a streams group speaks over, is not installed")
  if (!facts.streamsGroups) return consumer('the cluster has no streams groups (KIP-1071: Kafka 4.2 and later, with streams groups enabled)')
  const group = config.applicationId
  if (facts.groupType !== undefined && facts.groupType !== 'streams') return consumer(`group ${group} is a ${facts.groupType} group already, and a group does not change protocol in place`)
  return { protocol: 'streams', why: facts.groupType === 'streams' ? `group ${group} is a streams group` : `the cluster has streams groups (KIP-1071) and group ${group} is new` }
}
