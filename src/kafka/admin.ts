import { setTimeout as sleep } from 'node:timers/promises'
import { PunctualError } from '../errors.js'
import { planTopics } from './topics.js'
import type { TopicPlan } from './topics.js'
import type { Topology } from '../processor/topology.js'

/** What creating an application's topics needs of the client's admin (its KafkaJS-style `Admin`). */
export interface TopicAdmin {
  listTopics(): Promise<string[]>
  fetchTopicMetadata(options: { topics: string[] }): Promise<ReadonlyArray<{ readonly name: string; readonly partitions: readonly unknown[] }>>
  createTopics(options: { topics: Array<{ topic: string; numPartitions: number; configEntries: Array<{ name: string; value: string }> }> }): Promise<boolean>
}

/** Partition counts of every topic on the cluster. */
export async function topicPartitions(admin: TopicAdmin): Promise<Map<string, number>> {
  const topics = await admin.listTopics()
  const out = new Map<string, number>()
  if (topics.length === 0) return out
  for (const t of await admin.fetchTopicMetadata({ topics })) out.set(t.name, t.partitions.length)
  return out
}

/**
 * Checks the topology against the cluster (`planTopics`: source and sink topics exist, co-partitioned
 * ones agree) and creates the application's missing repartition and changelog topics. Run at start, by
 * every instance: one that finds the topics already there creates nothing.
 */
export async function ensureTopics(admin: TopicAdmin, topology: Topology, applicationId: string): Promise<TopicPlan> {
  const existing = await topicPartitions(admin)
  const plan = planTopics(topology, applicationId, existing)
  const missing = plan.create.filter((t) => !existing.has(t.name))
  if (missing.length > 0) {
    await admin.createTopics({
      topics: missing.map((t) => ({ topic: t.name, numPartitions: t.partitions, configEntries: Object.entries(t.config).map(([name, value]) => ({ name, value })) })),
    })
    await waitForTopics(admin, new Map(missing.map((t) => [t.name, t.partitions])))
  }
  return plan
}

/**
 * Waits until the cluster's metadata shows `topics` with their partition counts: a topic just created is
 * not in every broker's metadata at once, and reading or writing it before fails. A one-off wait at
 * start, so it asks again with a growing pause (100 ms to 1 s) until `timeoutMs`.
 */
export async function waitForTopics(admin: TopicAdmin, topics: ReadonlyMap<string, number>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (let pause = 100; ; pause = Math.min(1000, pause * 2)) {
    const counts = await topicPartitions(admin)
    const pending = [...topics].filter(([name, n]) => counts.get(name) !== n)
    if (pending.length === 0) return
    if (Date.now() > deadline) {
      throw new PunctualError('ILLEGAL_STATE', `the cluster's metadata does not show these topics after ${timeoutMs} ms: ${pending.map(([name, n]) => `${name} (${n} partitions)`).join(', ')}`, { retriable: true })
    }
    await sleep(pause)
  }
}
