import { PunctualError } from '../errors.js'
import { partitionCounts } from '../processor/partition-counts.js'
import type { Topology } from '../processor/topology.js'

/** A topic the application creates on the cluster (a repartition or changelog topic). */
export interface InternalTopic {
  readonly name: string
  readonly partitions: number
  /** Topic configs: changelogs are compacted. */
  readonly config: Readonly<Record<string, string>>
}

/** Where a topology's topics are on the cluster, and what the application must create. */
export interface TopicPlan {
  /** The cluster's name of each topic the topology names (its own topics get the application id in front). */
  readonly names: ReadonlyMap<string, string>
  /** Tasks per sub-topology: the partition count of its (co-partitioned) source topics. */
  readonly partitions: ReadonlyMap<number, number>
  /** Topics to create when missing, each with the partition count it must have. */
  readonly create: readonly InternalTopic[]
  /** The cluster's names of the repartition topics (what commits pass is deleted from them). */
  readonly repartition: ReadonlySet<string>
}

/** Kafka's rule for a topic name: at most 249 characters of ASCII letters, digits, '.', '_' and '-'. */
const LEGAL_TOPIC = /^[a-zA-Z0-9._-]{1,249}$/

/** The changelog topic of a state store (Kafka Streams' name). */
export function changelogTopic(applicationId: string, store: string): string {
  return `${applicationId}-${store}-changelog`
}

/**
 * The changelog topic of punctual's own parts of a sub-topology's tasks (stream time, last fire times,
 * timers, keyed state), beside its stores' changelogs.
 */
export function taskChangelogTopic(applicationId: string, subtopology: number): string {
  return `${applicationId}-punctual-${subtopology}-changelog`
}

const COMPACTED = { 'cleanup.policy': 'compact' }
/**
 * As Kafka Streams creates them: kept until read, whatever their records' timestamps (the default
 * retention deletes by timestamp, so records of replayed history would vanish before a task reads them).
 */
const REPARTITION = { 'cleanup.policy': 'delete', 'retention.ms': '-1', 'segment.bytes': '52428800' }

/**
 * Works out, against the partition counts of the topics on the cluster (`existing`), how the topology maps
 * onto it, as Kafka Streams does:
 * - source and sink topics the topology does not own must exist (punctual does not guess their
 *   partition counts);
 * - a repartition topic is `<applicationId>-<name>`, with as many partitions as the sub-topology that
 *   reads it has tasks (partitionCounts: the count of the topics it is co-partitioned with, else of the
 *   sub-topology writing it);
 * - each store has a compacted changelog `<applicationId>-<store>-changelog`, and each sub-topology one
 *   for punctual's own parts, with as many partitions as the sub-topology has tasks;
 * - co-partitioned source topics (the sources of one sub-topology) have equal partition counts, and a
 *   topic the application owns that exists already has the count it needs.
 * Every problem found is reported at once, naming the topics and their counts.
 */
export function planTopics(topology: Topology, applicationId: string, existing: ReadonlyMap<string, number>): TopicPlan {
  if (!LEGAL_TOPIC.test(`${applicationId}-x`)) {
    throw new PunctualError('INVALID_CONFIG', `applicationId ${JSON.stringify(applicationId)}: it prefixes topic names, so it may hold only ASCII letters, digits, '.', '_' and '-'`)
  }
  const internal = topology.internalTopics()
  const names = new Map<string, string>()
  const clusterName = (topic: string): string => {
    let name = names.get(topic)
    if (name === undefined) names.set(topic, (name = internal.has(topic) ? `${applicationId}-${topic}` : topic))
    return name
  }
  const problems: string[] = []
  const { sources, sinks } = topology.topicNames()
  const subs = topology.subtopologies()
  const sizes = partitionCounts(topology, (t) => (internal.has(t) ? undefined : existing.get(t)))
  const partitions = sizes.tasks
  const countOf = (topic: string): number | undefined => (internal.has(topic) ? sizes.internal.get(topic) : existing.get(topic))

  const missing = [...new Set([...sources, ...sinks])].filter((t) => !internal.has(t) && !existing.has(t))
  if (missing.length > 0) problems.push(`these topics do not exist on the cluster: ${missing.join(', ')} (the application creates only its repartition and changelog topics)`)
  for (const sub of subs) {
    const counts = sub.sourceTopics.map(countOf)
    if (counts.every((c) => c !== undefined) && counts.some((c) => c !== counts[0])) {
      problems.push(`sub-topology ${sub.id}: co-partitioned topics must have the same number of partitions, got ${sub.sourceTopics.map((t, i) => `${clusterName(t)}=${counts[i]}`).join(', ')}`)
    }
  }

  const create: InternalTopic[] = []
  const repartition = new Set<string>()
  const plan = (name: string, count: number, config: Readonly<Record<string, string>>): void => {
    if (!LEGAL_TOPIC.test(name)) {
      problems.push(`topic name ${JSON.stringify(name)} is not a legal Kafka topic name (ASCII letters, digits, '.', '_', '-'; at most 249 characters): rename the store or the operation it comes from`)
      return
    }
    const has = existing.get(name)
    if (has !== undefined && has !== count) problems.push(`topic ${name} has ${has} partitions; this application needs ${count}`)
    create.push({ name, partitions: count, config })
  }
  for (const topic of internal) {
    const count = sizes.internal.get(topic)
    if (count === undefined) continue
    plan(clusterName(topic), count, REPARTITION)
    repartition.add(clusterName(topic))
  }
  for (const sub of subs) {
    const count = partitions.get(sub.id)
    if (count === undefined) continue
    for (const store of sub.stores) plan(changelogTopic(applicationId, store.name), count, COMPACTED)
    plan(taskChangelogTopic(applicationId, sub.id), count, COMPACTED)
  }
  for (const t of [...sources, ...sinks]) clusterName(t)
  if (problems.length > 0) throw new PunctualError('INVALID_TOPOLOGY', `the topology does not fit the Kafka cluster:\n- ${problems.join('\n- ')}`)
  return { names, partitions, create, repartition }
}
