import { PunctualError } from '../errors.js'
import type { Topology } from '../processor/topology.js'
import type { Logger } from '../util/logger.js'
import { ensureTopics, topicPartitions } from './admin.js'
import { adminSettings } from './client-settings.js'
import { ClientLog, unreachable } from './client-logs.js'
import type { AdminClient, KafkaClientSupplier } from './client-supplier.js'
import type { ValidKafkaRuntimeConfig } from './config.js'
import { RepartitionPurger } from './repartition-purger.js'
import type { TopicPlan } from './topics.js'
import { checkGroupTopology } from './topology-check.js'

/** What the cluster holds for the application: its topics' plan (names, partitions) and every topic's partition count. */
export interface ClusterTopics {
  readonly plan: TopicPlan
  readonly counts: ReadonlyMap<string, number>
}

/**
 * The runtime's admin work (Kafka Streams' `InternalTopicManager` and more): the application's
 * repartition and changelog topics checked and created at start, the group checked for instances of
 * another topology, what commits passed purged from repartition topics, and admin clients for the
 * instance directory. Each admin client is closed by the part that made it.
 */
export class InternalTopics {
  private purging: { purger: RepartitionPurger; admin: AdminClient } | undefined

  constructor(
    private readonly supplier: KafkaClientSupplier,
    private readonly config: ValidKafkaRuntimeConfig,
    private readonly logger: Logger,
  ) {}

  /**
   * The runtime's first call to the cluster (one that cannot be reached fails here, naming the bootstrap
   * servers): checks the topology against the cluster and the group, and creates the internal topics.
   */
  async prepare(topology: Topology, fingerprint: string): Promise<ClusterTopics> {
    const log = new ClientLog(this.logger, 'admin')
    const admin = this.admin(log)
    try {
      await admin.connect()
      const plan = await ensureTopics(admin, topology, this.config.applicationId)
      const counts = await topicPartitions(admin)
      const dlt = this.config.deadLetterTopic
      if (dlt !== undefined && !counts.has(dlt)) {
        throw new PunctualError('INVALID_CONFIG', `KafkaRuntime config: deadLetterTopic "${dlt}" does not exist on the cluster; create it first (punctual does not choose its partitions or retention)`)
      }
      // A streams group's coordinator refuses a member whose topology differs from the group's itself.
      if (this.config.groupProtocol === 'consumer') await checkGroupTopology(admin, this.config.applicationId, fingerprint)
      return { plan, counts }
    } catch (err) {
      throw unreachable(err, this.config.bootstrapServers, log.lastFailure()) ?? err
    } finally {
      await admin.disconnect().catch(() => {})
    }
  }

  /** A purger of the repartition topics, with its admin client connected; none without repartition topics. */
  async purger(plan: TopicPlan): Promise<RepartitionPurger | undefined> {
    if (plan.repartition.size === 0) return undefined
    const admin = this.admin()
    await admin.connect()
    const { config } = this
    const purger = new RepartitionPurger(
      (t) => plan.repartition.has(t),
      async (topic, partitions) => {
        await admin.deleteTopicRecords({ topic, partitions: partitions.map((p) => ({ partition: p.partition, offset: String(p.offset) })) })
      },
      config.clock,
      config.repartitionPurgeIntervalMs,
      this.logger,
    )
    this.purging = { purger, admin }
    return purger
  }

  /** An admin client, its reports on the logger. */
  admin(log = new ClientLog(this.logger, 'admin')): AdminClient {
    return this.supplier.getAdmin(adminSettings(this.config), log.kafkaJsLogger())
  }

  async close(): Promise<void> {
    const purging = this.purging
    this.purging = undefined
    if (purging === undefined) return
    await purging.purger.close()
    await purging.admin.disconnect().catch(() => {})
  }
}
