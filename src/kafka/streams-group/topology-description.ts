import type { Topology } from '../../processor/topology.js'
import { changelogTopic, taskChangelogTopic } from '../topics.js'
import type { TopicPlan } from '../topics.js'
import type { SubtopologyInfo, TopicInfo } from './protocol.js'

const COMPACTED: ReadonlyArray<readonly [string, string]> = [['cleanup.policy', 'compact']]

/**
 * The topology as a streams group's coordinator takes it (the heartbeat's `Topology`): per sub-topology,
 * its source topics, the repartition topics it reads (with their partition counts) and writes, and its
 * changelog topics (punctual's own beside the stores'), every list sorted by name as Kafka Streams sorts
 * it (the coordinator compares topologies as sent, and refuses a member whose topology differs from
 * the group's). All the inputs of a sub-topology are one co-partition group: punctual's tasks read
 * partition p of each.
 */
export function describeTopology(topology: Topology, applicationId: string, plan: TopicPlan): SubtopologyInfo[] {
  const internal = topology.internalTopics()
  const name = (t: string): string => plan.names.get(t) ?? t
  const created = new Map(plan.create.map((t) => [t.name, t]))
  const byName = (a: TopicInfo, b: TopicInfo): number => compare(a.name, b.name)
  return [...topology.subtopologies()]
    .sort((a, b) => a.id - b.id)
    .map((sub) => {
      const sourceTopics = sub.sourceTopics.filter((t) => !internal.has(t)).map(name).sort(compare)
      const repartitionSourceTopics = sub.sourceTopics
        .filter((t) => internal.has(t))
        .map((t): TopicInfo => {
          const topic = created.get(name(t))
          return { name: name(t), partitions: topic?.partitions ?? 0, replicationFactor: 0, configs: Object.entries(topic?.config ?? {}).sort(([a], [b]) => compare(a, b)) }
        })
        .sort(byName)
      const repartitionSinkTopics = [...new Set(sub.nodes.flatMap((n) => (n.kind === 'sink' && internal.has(n.topic) ? [name(n.topic)] : [])))].sort(compare)
      const stateChangelogTopics = [...sub.stores.map((s) => changelogTopic(applicationId, s.name)), taskChangelogTopic(applicationId, sub.id)]
        .map((t): TopicInfo => ({ name: t, partitions: 0, replicationFactor: 0, configs: COMPACTED }))
        .sort(byName)
      const inputs = sourceTopics.length + repartitionSourceTopics.length
      const copartitionGroups = inputs > 1 ? [{ sourceTopics: sourceTopics.map((_, i) => i), repartitionSourceTopics: repartitionSourceTopics.map((_, i) => i) }] : []
      return { id: String(sub.id), sourceTopics, repartitionSinkTopics, stateChangelogTopics, repartitionSourceTopics, copartitionGroups }
    })
}

/** By UTF-16 code units, as Java's String.compareTo (not the locale's order). */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
