import { PunctualError } from '../errors.js'
import type { ErrorHandler } from '../processor/errors.js'
import { GlobalStores } from '../processor/internal/global-stores.js'
import type { Topology } from '../processor/topology.js'
import type { Logger } from '../util/logger.js'
import { globalConsumerSettings } from './client-settings.js'
import type { KafkaClientSupplier } from './client-supplier.js'
import type { ValidKafkaRuntimeConfig } from './config.js'
import { GlobalTopicsReader } from './global-reader.js'
import { watchReports } from './client-reports.js'

/** The global stores and the reader of their topics (none without global stores). */
export interface GlobalState {
  readonly stores: GlobalStores
  readonly reader: GlobalTopicsReader | undefined
}

/**
 * The global stores (Kafka Streams' global state): their topics read on a consumer of their own, from
 * the beginning to the ends they have now, before the instance joins the group; then kept up to date
 * ahead of each processing slice. A global topic is the store's changelog: nothing else is written.
 */
export async function readGlobalTopics(
  topology: Topology,
  counts: ReadonlyMap<string, number>,
  supplier: KafkaClientSupplier,
  config: ValidKafkaRuntimeConfig & { readonly errorHandler: ErrorHandler },
  logger: Logger,
  onAppend: () => void,
  fail: (err: unknown) => void,
): Promise<GlobalState> {
  const defs = topology.globalStores()
  const topics = new Map<string, number>()
  for (const def of defs) {
    const count = counts.get(def.topic)
    if (count === undefined) throw new PunctualError('INVALID_TOPOLOGY', `global store "${def.builder.name}": its topic ${def.topic} does not exist on the cluster`)
    topics.set(def.topic, count)
  }
  let reader: GlobalTopicsReader | undefined
  if (topics.size > 0) {
    const consumer = supplier.getGlobalConsumer(globalConsumerSettings(config))
    consumer.setDefaultConsumeTimeout(500)
    consumer.setDefaultIsTimeoutOnlyForFirstMessage(true)
    watchReports(consumer, 'global consumer', logger, fail)
    reader = new GlobalTopicsReader(consumer, topics, onAppend, fail, logger)
  }
  const stores = new GlobalStores(defs, (topic) => reader?.partitions(topic) ?? [], () => config.clock.now(), (topic, partition, offset, error) => {
    const message = `global store topic ${topic}-${partition} offset ${offset}: ${error instanceof Error ? error.message : String(error)}`
    if (config.errorHandler({ reason: 'deserialization', taskId: 'global', topic, partition, offset, error, message }) === 'fail') {
      throw new PunctualError('DESERIALIZATION', message, { cause: error })
    }
  })
  if (reader !== undefined) {
    const started = reader
    await started.start()
    // Applied as they come: the reader pauses a partition whose fetched records are not read.
    await started.caughtUp(() => {
      stores.update()
      started.resumeDrained()
    })
  }
  stores.update()
  if (topics.size > 0) logger.info({ stores: defs.map((d) => d.builder.name).join(',') }, 'global stores read to the ends of their topics')
  return { stores, reader }
}
