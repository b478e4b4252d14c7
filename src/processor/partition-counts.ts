import type { Subtopology, Topology } from './topology.js'

/** How many tasks each sub-topology has, and how many partitions each internal topic needs. */
export interface PartitionCounts {
  /** Sub-topology id → its task count (its input partitions); absent while a source's count is unknown. */
  readonly tasks: ReadonlyMap<number, number>
  /** Internal (repartition) topic → its partition count. */
  readonly internal: ReadonlyMap<string, number>
}

/**
 * Sizes a topology over topics whose partition counts `known(topic)` gives (undefined: not known), the
 * way Kafka Streams sizes its repartition topics:
 * - a sub-topology reading a topic with a known count (a topic the application does not own, or an
 *   internal topic sized by the user) has as many tasks as the largest of those;
 * - one reading only internal topics has as many as the largest sub-topology writing them;
 * - an internal topic has as many partitions as the sub-topology reading it has tasks, so the sources
 *   of a sub-topology are co-partitioned (after `selectKey(...).join(table)`, the repartition topic
 *   takes the table topic's count, as Kafka Streams' co-partitioning enforcer does).
 * Whether known counts of one sub-topology agree is for the caller to check.
 */
export function partitionCounts(topology: Topology, known: (topic: string) => number | undefined): PartitionCounts {
  const internal = topology.internalTopics()
  const subs = topology.subtopologies()
  const writers = new Map<string, Subtopology[]>()
  const reader = new Map<string, Subtopology>()
  for (const sub of subs) {
    for (const node of sub.nodes) {
      if (node.kind !== 'sink' || !internal.has(node.topic)) continue
      const list = writers.get(node.topic)
      if (list === undefined) writers.set(node.topic, [sub])
      else if (!list.includes(sub)) list.push(sub)
    }
    for (const topic of sub.sourceTopics) if (internal.has(topic)) reader.set(topic, sub)
  }
  const tasks = new Map<number, number>()
  // A sub-topology reading only internal topics waits for the ones writing them: settle in passes.
  for (let changed = true; changed; ) {
    changed = false
    for (const sub of subs) {
      if (tasks.has(sub.id)) continue
      const count = taskCount(sub, internal, known, writers, tasks)
      if (count === undefined) continue
      tasks.set(sub.id, count)
      changed = true
    }
  }
  const sized = new Map<string, number>()
  for (const topic of internal) {
    const by = reader.get(topic)
    const count = known(topic) ?? (by === undefined ? maxOf((writers.get(topic) ?? []).map((w) => tasks.get(w.id))) : tasks.get(by.id))
    if (count !== undefined) sized.set(topic, count)
  }
  return { tasks, internal: sized }
}

function taskCount(
  sub: Subtopology,
  internal: ReadonlySet<string>,
  known: (topic: string) => number | undefined,
  writers: ReadonlyMap<string, readonly Subtopology[]>,
  tasks: ReadonlyMap<number, number>,
): number | undefined {
  const fixed = sub.sourceTopics.filter((t) => !internal.has(t) || known(t) !== undefined)
  if (fixed.length > 0) return maxOf(fixed.map(known))
  const counts: Array<number | undefined> = []
  for (const topic of sub.sourceTopics) for (const w of writers.get(topic) ?? []) counts.push(tasks.get(w.id))
  return counts.length === 0 ? undefined : maxOf(counts)
}

/** The largest count, or undefined when any is unknown. */
function maxOf(counts: ReadonlyArray<number | undefined>): number | undefined {
  let max: number | undefined
  for (const c of counts) {
    if (c === undefined) return undefined
    if (max === undefined || c > max) max = c
  }
  return max
}
