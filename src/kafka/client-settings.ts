import type { ValidKafkaRuntimeConfig } from './config.js'
import type { ClientSettings } from './client-supplier.js'
import { STATS_INTERVAL_MS } from './coordinator-watch.js'

/**
 * The librdkafka settings of each client the runtime makes, in one place: punctual's defaults, then the
 * user's (`client`, then `producer` or `consumer`), then what the runtime needs and the user may not change.
 */

/**
 * Producer defaults. No re-bootstrap when every known broker is unreachable (a one-broker cluster
 * restarting, a client cut off for a moment): librdkafka 2.15 then drops those brokers, can keep the
 * transaction's group coordinator cached on one of them, and `sendOffsetsToTransaction` waits for it
 * forever, past its timeout (librdkafka issues 5456 and 5511). Without re-bootstrap a step times out
 * instead, and a producer that cannot abort in time is replaced. The consumers keep librdkafka's
 * default: without re-bootstrap a consumer that dropped its brokers never finds its group coordinator again.
 */
const PRODUCER_DEFAULTS = { 'metadata.recovery.strategy': 'none' } as const
/**
 * Consumer defaults. librdkafka does not fetch a partition again for `fetch.queue.backoff.ms` (1 s by
 * default) once its prefetch queue holds `queued.min.messages`; a consumer that empties the queue faster
 * than that waits out the rest of the second. A short backoff only has the fetcher look at the queue
 * more often (no request goes out while it is full); `queued.max.messages.kbytes` still bounds memory.
 */
const CONSUMER_DEFAULTS = { 'fetch.queue.backoff.ms': 10 } as const

function exactlyOnce(config: ValidKafkaRuntimeConfig): boolean {
  return config.processingGuarantee === 'exactly_once_v2'
}

/** The transactional (exactly-once) or idempotent producer. */
export function producerSettings(config: ValidKafkaRuntimeConfig, transactionalId: string): ClientSettings {
  const eos = exactlyOnce(config)
  return {
    // Large enough for a commit's outputs and changelog records; commitMaxRecords bounds them.
    'queue.buffering.max.messages': 1_000_000,
    'linger.ms': 5,
    // As Kafka Streams: a crashed instance's open transaction blocks read_committed readers this long at most.
    ...(eos ? { 'transaction.timeout.ms': 10_000 } : {}),
    ...PRODUCER_DEFAULTS,
    ...config.client,
    ...config.producer,
    'bootstrap.servers': config.bootstrapServers,
    'enable.idempotence': true,
    // Errors only: a report per record would be a callback per record.
    dr_cb: true,
    'delivery.report.only.error': true,
    ...(eos ? { 'transactional.id': transactionalId } : {}),
  }
}

/**
 * The group consumer: KIP-848's protocol, offsets committed by the runtime, partition EOF events on, and
 * statistics, from which the runtime sees whether it reaches its group coordinator (CoordinatorWatch).
 */
export function groupConsumerSettings(config: ValidKafkaRuntimeConfig, clientId: string, onRebalance: (err: { code: number }, partitions: Array<{ topic: string; partition: number }>) => void): ClientSettings {
  return {
    ...CONSUMER_DEFAULTS,
    'statistics.interval.ms': STATS_INTERVAL_MS,
    ...config.client,
    ...config.consumer,
    'bootstrap.servers': config.bootstrapServers,
    'group.id': config.applicationId,
    'client.id': clientId,
    // KIP-848: incremental, and the broker's range assignor keeps co-partitioned partitions together.
    'group.protocol': 'consumer',
    'group.remote.assignor': 'range',
    'enable.auto.commit': false,
    'auto.offset.reset': 'earliest',
    'isolation.level': exactlyOnce(config) ? 'read_committed' : 'read_uncommitted',
    // A partition fetched to its end is known caught up: a task of several partitions waits only for ones that are not (KIP-695).
    'enable.partition.eof': true,
    rebalance_cb: onRebalance,
    // Reports each offset commit's result as an 'offset.commit' event (at_least_once waits for it).
    offset_commit_cb: true,
  }
}

/** The client id the group consumer gives by default (the user's `client.id` otherwise). */
export function baseClientId(config: ValidKafkaRuntimeConfig): string {
  return String(config.consumer['client.id'] ?? config.client['client.id'] ?? `punctual-${config.applicationId}`)
}

/**
 * Exactly-once with a producer per task: a consumer of the group that never joins it, whose group
 * metadata (the group's id, no member) goes with the transactions' offsets.
 */
export function offsetsConsumerSettings(config: ValidKafkaRuntimeConfig): ClientSettings {
  return {
    ...CONSUMER_DEFAULTS,
    ...config.client,
    ...config.consumer,
    'bootstrap.servers': config.bootstrapServers,
    'group.id': config.applicationId,
    'enable.auto.commit': false,
  }
}

/** The restore consumer: assigned by hand (no group), read committed, to the end and no further. */
export function restoreConsumerSettings(config: ValidKafkaRuntimeConfig): ClientSettings {
  return {
    ...CONSUMER_DEFAULTS,
    ...config.client,
    ...config.consumer,
    'bootstrap.servers': config.bootstrapServers,
    'group.id': `${config.applicationId}-restore`,
    'enable.auto.commit': false,
    'enable.partition.eof': true,
    'isolation.level': 'read_committed',
    // A restore reads to the end and stops: the broker answers a fetch at the end at once, rather than
    // holding it 500 ms for records that are not coming, and the end (an EOF event, not a message)
    // does not wait out a long consume call.
    'fetch.wait.max.ms': 10,
  }
}

/** The global stores' consumer: assigned by hand, never committed; the id only names a group it never joins. */
export function globalConsumerSettings(config: ValidKafkaRuntimeConfig): ClientSettings {
  return {
    ...CONSUMER_DEFAULTS,
    ...config.client,
    ...config.consumer,
    'bootstrap.servers': config.bootstrapServers,
    'group.id': `${config.applicationId}-global`,
    'enable.auto.commit': false,
    'isolation.level': exactlyOnce(config) ? 'read_committed' : 'read_uncommitted',
  }
}

export function adminSettings(config: ValidKafkaRuntimeConfig): ClientSettings {
  return { ...config.client, 'bootstrap.servers': config.bootstrapServers }
}
