import { PunctualError } from '../errors.js'
import { partitionForKey } from '../processor/murmur2.js'
import { Serdes } from '../processor/serdes.js'
import type { Serde } from '../processor/serdes.js'
import type { Topology } from '../processor/topology.js'
import type { AdminClient } from './client-supplier.js'
import { InstanceDirectory } from './instance-metadata.js'
import type { HostInfo, KeyQueryMetadata, StreamsMetadata } from './instance-metadata.js'
import type { TopicPlan } from './topics.js'

/**
 * Which instance of the application holds what (Kafka Streams' `StreamsMetadataState`), asked of the
 * group coordinator at each call through an admin client of its own, made on the first question.
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
    return directory.keyMetadata({ topic, partitions }, partitionForKey(bytes, partitions))
  }

  /** Every instance that set an `applicationServer`: see `KafkaRuntime.metadataForAllStreamsClients`. */
  async all(): Promise<StreamsMetadata[]> {
    const { directory, plan } = this.instanceDirectory('metadataForAllStreamsClients')
    const storesByTopic = new Map<string, string[]>()
    for (const sub of this.topology.subtopologies()) {
      for (const t of sub.sourceTopics) storesByTopic.set(plan.names.get(t) ?? t, sub.stores.map((b) => b.name))
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
