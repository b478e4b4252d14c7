import type * as Client from '@confluentinc/kafka-javascript'
import type { TopicAdmin } from './admin.js'
import { connectWire, wireAvailable } from './broker-wire.js'
import type { ClusterWire } from './broker-wire.js'
import type { RestoreConsumer } from './changelog-reader.js'
import type { KafkaJsLogger, LibrdkafkaLogLine } from './client-logs.js'
import { loadKafkaClient } from './client.js'
import { checkClientFeatures } from './client-features.js'
import type { ClientBuild } from './client-features.js'
import type { FetchingConsumer, TopicPartitionRef } from './fetcher.js'
import type { GlobalConsumer } from './global-reader.js'
import type { GroupAdmin } from './instance-metadata.js'
import type { GroupLister } from './topology-check.js'
import type { WireSecurity } from './wire-security.js'
import { probeGroup } from './streams-group/group-probe.js'
import type { GroupFacts } from './streams-group/group-probe.js'
import type { PartitionOffset } from './kafka-commit-backend.js'
import type { RecordProducer } from './producer-sink.js'

/**
 * The clients the Kafka runtime runs on, as Kafka Streams' `KafkaClientSupplier` gives them: a
 * transactional producer, the group consumer, the restore consumer, the global stores' consumer and
 * admin clients, each made from librdkafka settings. The runtime sees them only through the interfaces
 * below (the calls it makes of Confluent's node-rdkafka-style client), so tests drive the rebalance and
 * recovery logic with clients of their own (test/kafka/mock-clients.ts), and another client can take
 * the place of Confluent's behind the same seam.
 */
export interface KafkaClientSupplier {
  getProducer(settings: ClientSettings): ProducerClient
  /** The group consumer; `settings.rebalance_cb` receives its rebalance events, and it reports offset commits as `'offset.commit'`. */
  getConsumer(settings: ClientSettings): GroupConsumer
  getRestoreConsumer(settings: ClientSettings): RestoreClient
  getGlobalConsumer(settings: ClientSettings): GlobalClient
  /** An admin client, its own reports on `log` (which the client's JavaScript layer would print to the console). */
  getAdmin(settings: ClientSettings, log: KafkaJsLogger): AdminClient
  /**
   * The connections the direct fetcher reads the input over; undefined when this supplier has none (the
   * wire library is not installed, or a test's clients): librdkafka's consumer then fetches.
   */
  getFetchWire?(bootstrapServers: string, clientId: string, security: WireSecurity | undefined): Promise<ClusterWire | undefined>
  /** What the cluster says of streams groups and of group `groupId`, for the default group protocol; undefined when this supplier cannot ask. */
  probeGroup?(bootstrapServers: string, clientId: string, security: WireSecurity | undefined, groupId: string): Promise<GroupFacts | undefined>
}

/** librdkafka settings, and the callbacks it takes among them (`rebalance_cb`). */
export type ClientSettings = Readonly<Record<string, unknown>>

/** An error as the client reports it: librdkafka's code, and what its flags say may follow. */
export interface ClientError {
  readonly message: string
  readonly code: number
  readonly isFatal?: boolean
  readonly isRetriable?: boolean
  isTxnRequiresAbort?: boolean
}

export type ClientCallback = (err: ClientError | null | undefined) => void

/** A partition's group offset as the client returns it (`offset` < 0: none committed). */
export interface CommittedOffset extends TopicPartitionRef {
  readonly offset?: number
  readonly metadata?: string
}

/** The events of the clients the runtime listens to, by name. */
export interface ClientEventListeners {
  /** librdkafka's log lines. */
  'event.log': (line: LibrdkafkaLogLine) => void
  /** librdkafka's statistics, a JSON document every `statistics.interval.ms`. */
  'event.stats': (stats: { message: string }) => void
  /** librdkafka's errors (a fatal one ends the client). */
  'event.error': (err: ClientError) => void
  /** A fetch found nothing past the partition's position (`enable.partition.eof`). */
  'partition.eof': (eof: TopicPartitionRef & { offset: number }) => void
  /** An offset commit's result (`offset_commit_cb`), in the order the commits were made. */
  'offset.commit': (err: ClientError | null | undefined) => void
  /** A record not delivered (`delivery.report.only.error`). */
  'delivery-report': (err: ClientError | null | undefined, report: { topic?: string; partition?: number } | undefined) => void
}

/** A client's event listeners, one signature for all (so the interfaces below combine). */
export interface ClientEventSource {
  on<E extends keyof ClientEventListeners>(event: E, listener: ClientEventListeners[E]): unknown
}

/** Every client's own reports: librdkafka's log lines and its errors. */
export type ReportingClient = ClientEventSource

export interface ProducerClient extends RecordProducer, ClientEventSource {
  connect(options: object, callback: ClientCallback): unknown
  disconnect(callback: () => void): unknown
  setPollInterval(ms: number): unknown
  initTransactions(timeoutMs: number, callback: ClientCallback): unknown
  beginTransaction(callback: ClientCallback): unknown
  sendOffsetsToTransaction(offsets: PartitionOffset[], consumer: GroupConsumer, timeoutMs: number, callback: ClientCallback): unknown
  commitTransaction(timeoutMs: number, callback: ClientCallback): unknown
  abortTransaction(timeoutMs: number, callback: ClientCallback): unknown
  flush(timeoutMs: number, callback: ClientCallback): unknown
}

export interface GroupConsumer extends Omit<FetchingConsumer, 'on'>, ClientEventSource {
  connect(options: object, callback: ClientCallback): unknown
  disconnect(callback: () => void): unknown
  subscribe(topics: string[]): unknown
  /** Leaves the group: the assignment is revoked through the rebalance callback first. */
  unsubscribe(): unknown
  incrementalAssign(partitions: TopicPartitionRef[]): unknown
  incrementalUnassign(partitions: TopicPartitionRef[]): unknown
  /** The last assignment was taken away without a revocation (the member was fenced). */
  assignmentLost(): boolean
  commit(offsets: PartitionOffset[]): unknown
  committed(partitions: TopicPartitionRef[], timeoutMs: number, callback: (err: ClientError | null | undefined, offsets: CommittedOffset[]) => void): unknown
  seek(position: TopicPartitionRef & { offset: number }, timeoutMs: number, callback: ClientCallback): unknown
  queryWatermarkOffsets(topic: string, partition: number, timeoutMs: number, callback: (err: ClientError | null | undefined, offsets: { lowOffset: number; highOffset: number }) => void): unknown
  setDefaultConsumeTimeout(ms: number): unknown
  setDefaultIsTimeoutOnlyForFirstMessage(only: boolean): unknown
}

export interface RestoreClient extends Omit<RestoreConsumer, 'on'>, ClientEventSource {
  incrementalAssign(partitions: Array<TopicPartitionRef & { offset: number }>): unknown
  incrementalUnassign(partitions: TopicPartitionRef[]): unknown
  setDefaultConsumeTimeout(ms: number): unknown
  setDefaultIsTimeoutOnlyForFirstMessage(only: boolean): unknown
}

export interface GlobalClient extends Omit<GlobalConsumer, 'on'>, ClientEventSource {
  setDefaultConsumeTimeout(ms: number): unknown
  setDefaultIsTimeoutOnlyForFirstMessage(only: boolean): unknown
}

export interface AdminClient extends TopicAdmin, GroupAdmin, GroupLister {
  connect(): Promise<void>
  deleteTopicRecords(options: { topic: string; partitions: Array<{ partition: number; offset: string }> }): Promise<unknown>
}

/** The clients of `@confluentinc/kafka-javascript` (loaded on first use: an optional peer dependency). */
export async function confluentClientSupplier(): Promise<KafkaClientSupplier> {
  const client = await loadKafkaClient()
  // The CommonJS module's own exports: the ESM namespace names only KafkaJS and RdKafka.
  const build = (client as unknown as { default?: Partial<ClientBuild> }).default
  const checked = <S extends ClientSettings>(settings: S): S => {
    if (build?.features !== undefined) checkClientFeatures(settings, { features: build.features, librdkafkaVersion: build.librdkafkaVersion ?? 'unknown' })
    return settings
  }
  const consumer = (settings: ClientSettings): never => new client.RdKafka.KafkaConsumer(checked(settings) as Client.ConsumerGlobalConfig) as never
  return {
    getProducer: (settings) => new client.RdKafka.Producer(checked(settings) as Client.ProducerGlobalConfig) as unknown as ProducerClient,
    getConsumer: consumer,
    getRestoreConsumer: consumer,
    getGlobalConsumer: consumer,
    getAdmin: (settings, log) => new client.KafkaJS.Kafka({ ...checked(settings), kafkaJS: { logger: log } } as unknown as Client.KafkaJS.CommonConstructorConfig).admin() as unknown as AdminClient,
    getFetchWire: async (bootstrapServers, clientId, security) => ((await wireAvailable()) ? connectWire(bootstrapServers, clientId, security) : undefined),
    probeGroup: async (bootstrapServers, clientId, security, groupId) => ((await wireAvailable()) ? probeGroup(bootstrapServers, clientId, security, groupId) : undefined),
  }
}

/** Clients a `KafkaRuntime` config was given (tests, another client), in place of Confluent's. */
const supplied = new WeakMap<object, KafkaClientSupplier>()

/** The config with `supplier`'s clients in place of Confluent's (for tests and other clients; not public API). */
export function withClientSupplier<C extends object>(config: C, supplier: KafkaClientSupplier): C {
  supplied.set(config, supplier)
  return config
}

/** The supplier a config was given, or Confluent's. */
export function clientSupplierOf(config: object): Promise<KafkaClientSupplier> {
  const supplier = supplied.get(config)
  return supplier === undefined ? confluentClientSupplier() : Promise.resolve(supplier)
}
