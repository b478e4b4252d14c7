import { PunctualError } from '../errors.js'
import type { InputPartition } from '../processor/record-io.js'
import type { Logger } from '../util/logger.js'
import { Fetcher } from './fetcher.js'
import type { FetchingConsumer, TopicPartitionRef } from './fetcher.js'
import type { FetchedPartition } from './fetched-partition.js'

const OFFSET_BEGINNING = -2
/** How long a watermark request may take. */
const WATERMARK_TIMEOUT_MS = 10_000
/** How often the start-up reading checks how far it has come, and how often it says so. */
const CATCH_UP_CHECK_MS = 50
const CATCH_UP_REPORT_MS = 10_000

/** What the reader needs of its consumer: fetching, a hand-made assignment, its position, the topics' ends. */
export interface GlobalConsumer extends FetchingConsumer {
  connect(options: object, callback: (err: { message: string } | null | undefined) => void): unknown
  assign(assignments: ReadonlyArray<TopicPartitionRef & { readonly offset: number }>): unknown
  /** The next offset the consumer fetches per partition (past transaction markers too); no request. */
  position(partitions: TopicPartitionRef[]): ReadonlyArray<TopicPartitionRef & { readonly offset?: number }>
  queryWatermarkOffsets(topic: string, partition: number, timeout: number, callback: (err: { message: string } | null | undefined, offsets: { highOffset: number }) => void): unknown
  disconnect(callback: () => void): unknown
}

/**
 * Reads the topics of an instance's global stores on Kafka (Kafka Streams' global stream thread): every
 * partition, assigned by hand from the beginning, on a consumer of its own outside the group, fetched
 * continuously. The global stores read its partitions (`partitions`); `caughtUp` waits until they have
 * been fetched to the ends the topics had when it was called, which the runtime does before joining
 * the group, so that every task starts with the global tables as their topics stood.
 */
export class GlobalTopicsReader {
  private readonly fetcher: Fetcher
  private readonly byTopic = new Map<string, FetchedPartition[]>()

  constructor(
    private readonly consumer: GlobalConsumer,
    /** Each global topic and its partition count. */
    private readonly topics: ReadonlyMap<string, number>,
    onMessages: () => void,
    onError: (err: Error) => void,
    private readonly logger: Logger,
  ) {
    this.fetcher = new Fetcher(consumer, onMessages, (err) => onError(new PunctualError('ILLEGAL_STATE', `reading the global topics: ${err.message}`, { cause: err })))
    for (const [topic, count] of topics) {
      this.byTopic.set(
        topic,
        Array.from({ length: count }, (_, p) => this.fetcher.add(topic, p, 0)),
      )
    }
  }

  /** The partitions of a global topic, as the global stores read them. */
  partitions(topic: string): readonly InputPartition[] {
    return this.byTopic.get(topic) ?? []
  }

  /** Connects, assigns every partition from its beginning and starts fetching. */
  async start(): Promise<void> {
    await new Promise<void>((resolve, reject) =>
      this.consumer.connect({}, (err) => (err ? reject(new PunctualError('ILLEGAL_STATE', `connecting the global topics' consumer: ${err.message}`, { cause: err })) : resolve())),
    )
    this.consumer.assign(this.refs().map((r) => ({ ...r, offset: OFFSET_BEGINNING })))
    this.fetcher.start()
  }

  /** Resolves once every partition has been fetched up to the end it has now; `apply` reads what came, at each check. */
  async caughtUp(apply: () => void): Promise<void> {
    const refs = this.refs()
    const ends = await Promise.all(refs.map((r) => this.highWatermark(r)))
    const since = Date.now()
    let reported = since
    for (;;) {
      apply()
      const positions = this.consumer.position(refs)
      const behind = refs.filter((r, i) => {
        const at = positions.find((p) => p.topic === r.topic && p.partition === r.partition)?.offset ?? -1
        return at < (ends[i] as number)
      })
      if (behind.length === 0) {
        // The positions can be ahead of what was appended: the call that took those messages may not have handed them over yet.
        await this.fetcher.settled()
        apply()
        return
      }
      if (Date.now() - reported >= CATCH_UP_REPORT_MS) {
        reported = Date.now()
        this.logger.info({ behind: behind.length, waitedMs: reported - since }, "reading the global topics to their ends before the tasks start")
      }
      await new Promise((r) => setTimeout(r, CATCH_UP_CHECK_MS))
    }
  }

  /** Resumes partitions paused while the global stores had not read what was fetched. */
  resumeDrained(): void {
    this.fetcher.resumeDrained()
  }

  async stop(): Promise<void> {
    await this.fetcher.stop()
    await new Promise<void>((resolve) => this.consumer.disconnect(() => resolve()))
  }

  private refs(): TopicPartitionRef[] {
    return [...this.topics].flatMap(([topic, count]) => Array.from({ length: count }, (_, partition) => ({ topic, partition })))
  }

  private highWatermark(r: TopicPartitionRef): Promise<number> {
    return new Promise((resolve, reject) =>
      this.consumer.queryWatermarkOffsets(r.topic, r.partition, WATERMARK_TIMEOUT_MS, (err, offsets) =>
        err ? reject(new PunctualError('ILLEGAL_STATE', `reading the end of global topic ${r.topic}-${r.partition}: ${err.message}`, { cause: err })) : resolve(offsets.highOffset),
      ),
    )
  }
}
