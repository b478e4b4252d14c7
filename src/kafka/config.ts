import { checkDeadLetterTopic, checkLogger, checkStateDir, configInt, invalidConfig } from '../errors.js'
import type { ErrorHandler } from '../processor/errors.js'
import { checkTimestampExtractor } from '../processor/timestamp-extractor.js'
import type { TimestampExtractor } from '../processor/timestamp-extractor.js'
import { systemClock } from '../time/clock.js'
import type { Clock } from '../time/clock.js'
import { isScheduler, timerScheduler } from '../time/scheduler.js'
import type { Scheduler } from '../time/scheduler.js'
import type { Logger } from '../util/logger.js'
import { temporaryStateDir } from '../util/state-dir.js'
import { validateMetricsEndpoint } from '../monitoring/metrics-server.js'
import type { MetricsEndpoint } from '../monitoring/metrics-server.js'
import { kafkaErrorHandler } from './error-log.js'
import { parseHostInfo } from './instance-metadata.js'
import type { HostInfo } from './instance-metadata.js'
import { wireSecurity } from './wire-security.js'
import type { WireSecurity } from './wire-security.js'

/** Kafka Streams' processing guarantees (`exactly_once_v2`: KIP-447, one transactional producer per instance). */
export type ProcessingGuarantee = 'at_least_once' | 'exactly_once_v2'

/** librdkafka settings passed through to the clients (`bootstrap.servers` and the group's are punctual's). */
export type KafkaClientSettings = Readonly<Record<string, string | number | boolean>>

/** How a `KafkaRuntime` runs: the application, the cluster, the guarantee, and settings passed to the client. */
export interface KafkaRuntimeConfig {
  /**
   * The application: its consumer group, the prefix of its internal topics and its transactional ids.
   * Every instance of one application uses the same id.
   */
  applicationId: string
  /** `host:port[,host:port...]` of the cluster. */
  bootstrapServers: string
  /** @default 'at_least_once' (as Kafka Streams) */
  processingGuarantee?: ProcessingGuarantee
  /** How often tasks commit. @default 100 under exactly_once_v2, 30000 under at_least_once (as Kafka Streams) */
  commitIntervalMs?: number
  /**
   * Commit also after this many records, so one transaction never holds too much; processing waits for a
   * commit in flight once this many more records are processed. The uncommitted changes of the stores
   * stay in memory until their commit: lower it when the heap is small. @default 50000
   */
  commitMaxRecords?: number
  /**
   * Input records fetched and not yet processed that an input partition may hold in memory before it is
   * paused (Kafka Streams' `buffered.records.per.partition`, whose default is 1000). Lower it when the
   * heap is small: each record held costs its message object and bytes. @default 50000
   */
  bufferedRecordsPerPartition?: number
  /**
   * Fetch the input partitions with punctual's own Fetch requests (over `@platformatic/kafka`'s
   * connections) rather than through librdkafka, whose consumer makes a JavaScript object of each
   * message on the event loop: on the flights benchmark one instance runs several times faster. The
   * group membership, the assignment and the offsets stay librdkafka's. Needs `@platformatic/kafka`
   * installed. Its connections are secured by the same `security.protocol`, `ssl.*` and `sasl.*`
   * settings as librdkafka's (TLS; SASL PLAIN, SCRAM-SHA-256, SCRAM-SHA-512); with a setting they
   * cannot honour (GSSAPI, OAUTHBEARER, see docs/kafka.md) the direct fetch is off, and `true` is refused.
   * @default true when `@platformatic/kafka` is installed and the settings allow it
   */
  directFetch?: boolean
  /**
   * How the instances share the tasks. `'consumer'`: a consumer group of KIP-848's protocol, the
   * broker's range assignor placing partitions. `'streams'`: a Kafka streams group (KIP-1071, Kafka 4.2
   * and later), whose coordinator places tasks, sticky, and creates the internal topics from the
   * topology each member sends, and runs standby tasks where the group asks for them; with the direct
   * fetch only (its connections speak to the coordinator), and under exactly-once with a producer per
   * task (see docs/kafka.md).
   * @default chosen at each start: `'streams'` when the cluster has streams groups, the application's
   * group is new or a streams group, and the direct fetch can run; `'consumer'` otherwise (a group made
   * with the consumer protocol keeps it). The start log says which, and why.
   */
  groupProtocol?: 'consumer' | 'streams'
  /**
   * How long a task of several input partitions waits for an empty one that is fetched to its end before
   * processing the others (Kafka Streams' `max.task.idle.ms`). An empty partition with records on the
   * broker not yet fetched is waited for in any case, unless this is -1, which never waits. @default 0
   */
  maxTaskIdleMs?: number
  /**
   * Where the event time of records comes from, for sources that set no `timestampExtractor` (Kafka
   * Streams' `default.timestamp.extractor`). Default: each record's own timestamp.
   */
  defaultTimestampExtractor?: TimestampExtractor
  /**
   * How often what commits passed is deleted from the application's repartition topics (Kafka Streams'
   * `repartition.purge.interval.ms`); 0 purges after every commit.
   * @default 30000
   */
  repartitionPurgeIntervalMs?: number
  /** Directory for spill files. @default a temporary directory, removed on stop */
  stateDir?: string
  /** librdkafka settings for every client (security, timeouts, ...). */
  client?: KafkaClientSettings
  /** Extra librdkafka settings of the consumers. */
  consumer?: KafkaClientSettings
  /** Extra librdkafka settings of the producer. */
  producer?: KafkaClientSettings
  /** @default the system clock */
  clock?: Clock
  /** Runs the runtime's one armed timer. @default setTimeout on the clock */
  scheduler?: Scheduler
  /** @default ErrorHandlers.failOnUserCodeErrors(logger) */
  errorHandler?: ErrorHandler
  /**
   * An existing topic where input records go that the error handler lets pass (bad input, or a
   * processing error it continues after): their key and value bytes as read, with headers naming the
   * error and the source topic, partition and offset (Kafka Streams' KIP-1034 headers). Written in the
   * same transaction as the task's output under exactly-once. It must not be a source topic.
   * @default none: such records are only counted and reported to the handler
   */
  deadLetterTopic?: string
  /** @default writes to stderr */
  logger?: Logger
  /**
   * Serves the metrics over HTTP, opt-in: `GET http://host:port/metrics` in Prometheus' text format
   * (`metricsAddress()` tells where, with port 0 a free one). @default none
   */
  metrics?: MetricsEndpoint
  /**
   * `host:port` where this instance answers your interactive queries (Kafka Streams'
   * `application.server`): the other instances learn it from the group, and `queryMetadataForKey` names
   * the instance holding a key by it. It goes into the group consumer's `client.id` (after the one
   * configured). @default none: queryMetadataForKey fails
   */
  applicationServer?: string
}

export type ValidKafkaRuntimeConfig = Required<Omit<KafkaRuntimeConfig, 'client' | 'consumer' | 'producer' | 'deadLetterTopic' | 'metrics' | 'applicationServer' | 'defaultTimestampExtractor' | 'directFetch'>> & {
  /** true: direct fetch asked for; false: refused, or the settings do not allow it; undefined: when the library is installed. */
  readonly directFetch: boolean | undefined
  /** Whether `groupProtocol` was set; if not, the start chooses it (group-protocol.ts). */
  readonly groupProtocolSet: boolean
  /** The security of punctual's own connections, from the client and consumer settings; undefined when they cannot honour them (then `directFetch` is false). */
  readonly wireSecurity: WireSecurity | undefined
  /** Why punctual's own connections cannot honour the security settings, if they cannot. */
  readonly wireUnsupported: string | undefined
  readonly defaultTimestampExtractor: TimestampExtractor | undefined
  readonly deadLetterTopic: string | undefined
  readonly metrics: Required<MetricsEndpoint> | undefined
  readonly applicationServer: HostInfo | undefined
  readonly client: KafkaClientSettings
  readonly consumer: KafkaClientSettings
  readonly producer: KafkaClientSettings
}

/** Settings punctual sets itself: passing them would break the runtime's guarantees. */
const OWNED = ['bootstrap.servers', 'group.id', 'enable.auto.commit', 'isolation.level', 'transactional.id', 'rebalance_cb', 'offset_commit_cb', 'group.protocol', 'enable.partition.eof']

export function validateKafkaRuntimeConfig(config: KafkaRuntimeConfig): ValidKafkaRuntimeConfig {
  const where = 'KafkaRuntime config'
  if (config === null || typeof config !== 'object') throw invalidConfig(where, 'expected an object with at least applicationId and bootstrapServers')
  if (typeof config.applicationId !== 'string' || !/^[A-Za-z0-9._-]+$/.test(config.applicationId)) {
    throw invalidConfig(where, `applicationId must be a non-empty string of letters, digits, '.', '_' or '-', got ${JSON.stringify(config.applicationId)}`)
  }
  if (typeof config.bootstrapServers !== 'string' || !/^[^,\s]+:\d+(,[^,\s]+:\d+)*$/.test(config.bootstrapServers)) {
    throw invalidConfig(where, `bootstrapServers must be host:port[,host:port...], got ${JSON.stringify(config.bootstrapServers)}`)
  }
  const guarantee = config.processingGuarantee ?? 'at_least_once'
  if (guarantee !== 'at_least_once' && guarantee !== 'exactly_once_v2') {
    throw invalidConfig(where, `processingGuarantee must be 'at_least_once' or 'exactly_once_v2', got ${JSON.stringify(config.processingGuarantee)}`)
  }
  const int = (name: string, value: number | undefined, def: number, min: number): number => configInt(where, name, value, def, min)
  checkStateDir(where, config.stateDir)
  const settings = (name: 'client' | 'consumer' | 'producer'): KafkaClientSettings => {
    const s = config[name] ?? {}
    if (s === null || typeof s !== 'object') throw invalidConfig(where, `${name} must be an object of librdkafka settings`)
    for (const [key, value] of Object.entries(s)) {
      if (OWNED.includes(key)) throw invalidConfig(where, `${name}["${key}"]: punctual sets this itself (see the README's Kafka section)`)
      if (!['string', 'number', 'boolean'].includes(typeof value)) throw invalidConfig(where, `${name}["${key}"] must be a string, number or boolean, got ${typeof value}`)
    }
    return s
  }
  const client = settings('client')
  const consumer = settings('consumer')
  // punctual's own connections read the input and speak to the group: the consumer's settings are theirs.
  const wire = wireSecurity({ ...client, ...consumer })
  if ('invalid' in wire) throw invalidConfig(where, wire.invalid)
  const unsupported = 'unsupported' in wire ? wire.unsupported : undefined
  if (config.directFetch !== undefined && typeof config.directFetch !== 'boolean') throw invalidConfig(where, `directFetch must be a boolean, got ${JSON.stringify(config.directFetch)}`)
  if (config.directFetch === true && unsupported !== undefined) {
    throw invalidConfig(where, `directFetch: true, but ${unsupported}; leave directFetch unset (librdkafka then fetches the input)`)
  }
  const groupProtocol = config.groupProtocol ?? 'consumer'
  if (groupProtocol !== 'consumer' && groupProtocol !== 'streams') throw invalidConfig(where, `groupProtocol must be 'consumer' or 'streams', got ${JSON.stringify(config.groupProtocol)}`)
  if (groupProtocol === 'streams' && (unsupported !== undefined || config.directFetch === false)) {
    throw invalidConfig(where, `groupProtocol 'streams' speaks to the group coordinator over the direct fetch's connections, but ${unsupported ?? 'directFetch is false'}; use groupProtocol 'consumer'`)
  }
  const logger = checkLogger(where, config.logger)
  const deadLetterTopic = checkDeadLetterTopic(where, config.deadLetterTopic)
  const clock = config.clock ?? systemClock
  if (config.scheduler !== undefined && !isScheduler(config.scheduler)) throw invalidConfig(where, 'scheduler must have at(dueMs, callback) returning a cancel function')
  return {
    applicationId: config.applicationId,
    bootstrapServers: config.bootstrapServers,
    processingGuarantee: guarantee,
    commitIntervalMs: int('commitIntervalMs', config.commitIntervalMs, guarantee === 'exactly_once_v2' ? 100 : 30_000, 1),
    commitMaxRecords: int('commitMaxRecords', config.commitMaxRecords, 50_000, 1),
    bufferedRecordsPerPartition: int('bufferedRecordsPerPartition', config.bufferedRecordsPerPartition, 50_000, 1),
    maxTaskIdleMs: int('maxTaskIdleMs', config.maxTaskIdleMs, 0, -1),
    defaultTimestampExtractor: checkTimestampExtractor(config.defaultTimestampExtractor, `${where}: defaultTimestampExtractor`),
    repartitionPurgeIntervalMs: int('repartitionPurgeIntervalMs', config.repartitionPurgeIntervalMs, 30_000, 0),
    stateDir: config.stateDir ?? temporaryStateDir(config.applicationId),
    directFetch: unsupported === undefined ? config.directFetch : false,
    wireSecurity: 'security' in wire ? wire.security : undefined,
    wireUnsupported: unsupported,
    groupProtocol,
    groupProtocolSet: config.groupProtocol !== undefined,
    client,
    consumer,
    producer: settings('producer'),
    clock,
    scheduler: config.scheduler ?? timerScheduler(clock),
    errorHandler: config.errorHandler ?? kafkaErrorHandler(logger.child?.({ applicationId: config.applicationId }) ?? logger, deadLetterTopic),
    deadLetterTopic,
    logger,
    metrics: validateMetricsEndpoint(where, config.metrics),
    applicationServer: config.applicationServer === undefined ? undefined : parseHostInfo(where, config.applicationServer),
  }
}
