import { PunctualError } from '../errors.js'
import { partitionForKey } from '../processor/murmur2.js'
import { Serdes } from '../processor/serdes.js'
import type { Serde } from '../processor/serdes.js'
import type { Topology } from '../processor/topology.js'
import type { AdminClient } from './client-supplier.js'
import { InstanceDirectory } from './instance-metadata.js'
import type { HostInfo, KeyQueryMetadata, StreamsMetadata } from './instance-metadata.js'
import type { TopicPlan } from './topics.js'
import type { TopicPartitions, UserEndpoints } from './streams-group/protocol.js'

/**
 * Which instance of the application holds what (Kafka Streams' `StreamsMetadataState`): in a streams
 * group, from the members' endpoints the coordinator sends each member (with their standby tasks);
 * otherwise asked of the group coordinator at each call through an admin client of its own, made on
 * the first question.
 */
export class QueryMetadata {
  private directory: InstanceDirectory | undefined

  constructor(
    private readonly topology: Topology,
    private readonly applicationId: string,
    private readonly server: HostInfo | undefined,
    /** The runtime's state, and its topic plan once started. */
    private readonly runtime: () => { readonly state: string; readonly plan: TopicPlan | undefined },
    private readonly admin: () => AdminClient,
    /** In a streams group: the members' endpoints and their tasks' partitions, from the coordinator. */
    private readonly endpoints: () => UserEndpoints | undefined = () => undefined,
  ) {}

  /** The instance holding `key` of store `storeName` now: see `KafkaRuntime.queryMetadataForKey`. */
  async forKey<K>(storeName: string, key: K, keySerde: Serde<K> = Serdes.String() as unknown as Serde<K>): Promise<KeyQueryMetadata | undefined> {
    const { directory, plan } = this.instanceDirectory('queryMetadataForKey')
    const sub = this.topology.subtopologies().find((s) => s.stores.some((b) => b.name === storeName))
    if (sub === undefined) throw new PunctualError('INVALID_TOPOLOGY', `queryMetadataForKey: the topology has no store "${storeName}" in its tasks`)
    const topic = plan.names.get(sub.sourceTopics[0] as string) ?? (sub.sourceTopics[0] as string)
    const bytes = keySerde.serialize(key, topic)
    if (bytes === null) throw new PunctualError('INVALID_CONFIG', `queryMetadataForKey("${storeName}"): the key serializes to null`)
    const partitions = plan.partitions.get(sub.id) ?? 0
    const partition = partitionForKey(bytes, partitions)
    const endpoints = this.endpoints()
    if (endpoints !== undefined) return keyMetadataOf(endpoints, topic, partition)
    return directory.keyMetadata({ topic, partitions }, partition)
  }

  /** Every instance that set an `applicationServer`: see `KafkaRuntime.metadataForAllStreamsClients`. */
  async all(): Promise<StreamsMetadata[]> {
    const { directory, plan } = this.instanceDirectory('metadataForAllStreamsClients')
    const storesByTopic = new Map<string, string[]>()
    for (const sub of this.topology.subtopologies()) {
      for (const t of sub.sourceTopics) storesByTopic.set(plan.names.get(t) ?? t, sub.stores.map((b) => b.name))
    }
    const endpoints = this.endpoints()
    if (endpoints !== undefined) {
      return endpoints.map((e) => {
        const topicPartitions = e.active.flatMap((tp) => tp.partitions.map((partition) => ({ topic: tp.topic, partition })))
        return { hostInfo: { host: e.host, port: e.port }, topicPartitions, stateStoreNames: [...new Set(topicPartitions.flatMap((tp) => storesByTopic.get(tp.topic) ?? []))].sort() }
      })
    }
    return directory.all((topic) => storesByTopic.get(topic) ?? [])
  }

  async close(): Promise<void> {
    await this.directory?.close().catch(() => {})
    this.directory = undefined
  }

  private instanceDirectory(operation: string): { directory: InstanceDirectory; plan: TopicPlan } {
    if (this.server === undefined) throw new PunctualError('ILLEGAL_STATE', `${operation}: set applicationServer ('host:port') on every instance, so that the group knows where each one answers`)
    const { state, plan } = this.runtime()
    if (state !== 'RUNNING' || plan === undefined) throw new PunctualError('ILLEGAL_STATE', `${operation}: the runtime is ${state}; instances can be looked up while it runs`)
    this.directory ??= new InstanceDirectory(this.applicationId, async () => {
      const admin = this.admin()
      await admin.connect()
      return admin
    })
    return { directory: this.directory, plan }
  }
}

/** In a streams group: the member whose active task has the key's partition, and those with a standby of it. */
function keyMetadataOf(endpoints: UserEndpoints, topic: string, partition: number): KeyQueryMetadata | undefined {
  const has = (tps: readonly TopicPartitions[]): boolean => tps.some((tp) => tp.topic === topic && tp.partitions.includes(partition))
  const active = endpoints.find((e) => has(e.active))
  if (active === undefined) return undefined
  return { activeHost: { host: active.host, port: active.port }, standbyHosts: endpoints.filter((e) => has(e.standby)).map((e) => ({ host: e.host, port: e.port })), partition }
}
