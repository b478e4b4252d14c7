import type { Clock } from '../time/clock.js'
import type { Logger } from '../util/logger.js'
import type { PartitionOffset } from './kafka-commit-backend.js'

/** Deletes a topic's records below the given offset of each partition (the admin client's DeleteRecords). */
export type DeleteRecords = (topic: string, partitions: ReadonlyArray<{ partition: number; offset: number }>) => Promise<void>

/**
 * Deletes from the application's repartition topics what its commits have passed, as Kafka Streams does
 * (`repartition.purge.interval.ms`): a repartition topic is the application's own hand-off between two
 * sub-topologies, kept forever (`retention.ms=-1`) until read, and once a commit moved the group's
 * offset past a record no task of the application reads it again.
 *
 * After a commit it notes the committed offsets of repartition partitions; at most once per interval it
 * deletes up to the latest of them, one request at a time. A failure is logged and the next interval
 * tries again with the newer offsets: the offsets only grow, so nothing is lost by skipping one.
 */
export class RepartitionPurger {
  /** The latest committed offset of each repartition partition not purged yet, by `topic:partition`. */
  private readonly due = new Map<string, PartitionOffset>()
  private last: number
  private inFlight: Promise<void> | undefined
  private closed = false

  constructor(
    private readonly isRepartition: (topic: string) => boolean,
    private readonly deleteRecords: DeleteRecords,
    private readonly clock: Clock,
    private readonly intervalMs: number,
    private readonly logger: Logger,
  ) {
    this.last = clock.now()
  }

  /** A commit made these offsets the group's: purges what they passed, if the interval is up. */
  committed(offsets: readonly PartitionOffset[]): void {
    for (const o of offsets) if (this.isRepartition(o.topic)) this.due.set(`${o.topic}:${o.partition}`, o)
    this.purgeIfDue()
  }

  private purgeIfDue(): void {
    if (this.closed || this.due.size === 0 || this.inFlight !== undefined) return
    const now = this.clock.now()
    if (now - this.last < this.intervalMs) return
    this.last = now
    const byTopic = new Map<string, Array<{ partition: number; offset: number }>>()
    for (const o of this.due.values()) {
      let partitions = byTopic.get(o.topic)
      if (partitions === undefined) byTopic.set(o.topic, (partitions = []))
      partitions.push({ partition: o.partition, offset: o.offset })
    }
    this.due.clear()
    this.inFlight = Promise.all([...byTopic].map(([topic, partitions]) => this.deleteRecords(topic, partitions))).then(
      () => {
        this.inFlight = undefined
        // Offsets committed while it was under way: purged now if the interval is up (an idle
        // application makes no commit that would purge them), else after a later commit.
        this.purgeIfDue()
      },
      (err: unknown) => {
        this.inFlight = undefined
        this.logger.warn({ err }, `purging the repartition topics failed; the next interval tries again (${(err as Error).message})`)
      },
    )
  }

  /** Starts no purge any more, and settles once none is under way (a stop, before it disconnects the admin client). */
  async close(): Promise<void> {
    this.closed = true
    await this.inFlight
  }
}
