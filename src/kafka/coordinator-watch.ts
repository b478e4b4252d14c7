import { PunctualError } from '../errors.js'
import type { Clock } from '../time/clock.js'
import type { Logger } from '../util/logger.js'

/** How often librdkafka reports the group consumer's statistics (`statistics.interval.ms`), unless the user set it. */
export const STATS_INTERVAL_MS = 5_000
/** How long without a connection to the group coordinator before the runtime says so (a warning). */
const WARN_AFTER_MS = 60_000

/** The parts of librdkafka's statistics (STATISTICS.md) the watch reads. */
interface Stats {
  brokers?: Record<string, { name?: string; source?: string; state?: string; nodename?: string } | undefined>
  cgrp?: { state?: string; join_state?: string }
}

/**
 * Whether the group consumer still reaches its group coordinator, read from librdkafka's statistics of
 * the consumer (its logical `GroupCoordinator` broker, connected or not). A member whose heartbeats do
 * not reach the coordinator is dropped from the group after its session timeout, and learns it only from
 * a heartbeat's answer; an idle instance commits nothing, so nothing else would tell it.
 *
 * Seen on a real broker stopped for 60 s: librdkafka 2.15's consumer came back without a coordinator
 * address, and queued each heartbeat on the address-less connection, where it timed out a minute later,
 * again and again, while the same client's other connections were up. The group had given its tasks to
 * the other members; the instance kept them, processing nothing, reporting nothing.
 *
 * No connection for `limitMs` (the runtime gives its task timeout, 300 s, as Kafka Streams'
 * `task.timeout.ms`) stops the instance with an error naming the cluster: its tasks are with the other
 * members by then, and a supervisor that starts it again gets a new consumer, which finds the
 * coordinator. A cluster away that long stops it the same way.
 */
export class CoordinatorWatch {
  private lastUp: number
  private warned = false
  private done = false

  constructor(
    private readonly clock: Clock,
    private readonly limitMs: number,
    private readonly bootstrapServers: string,
    private readonly logger: Logger,
    private readonly lost: (err: PunctualError) => void,
  ) {
    this.lastUp = clock.now()
  }

  /** One statistics report of the group consumer (`event.stats`, a JSON document). */
  observe(json: string): void {
    if (this.done) return
    let stats: Stats
    try {
      stats = JSON.parse(json) as Stats
    } catch {
      return
    }
    const coordinator = Object.values(stats.brokers ?? {}).find((b) => b?.source === 'logical' && b.name?.startsWith('GroupCoordinator') === true)
    // A client whose statistics hold no such broker (another client behind the supplier) is not watched.
    if (coordinator === undefined) return
    const now = this.clock.now()
    if (coordinator.state === 'UP') {
      if (this.warned) this.logger.info({}, 'the group consumer reaches its group coordinator again')
      this.lastUp = now
      this.warned = false
      return
    }
    const away = now - this.lastUp
    const state = `coordinator connection ${coordinator.state ?? '?'}${coordinator.nodename === '' ? ' without an address' : ''}, group state ${stats.cgrp?.state ?? '?'}/${stats.cgrp?.join_state ?? '?'}`
    if (away >= this.limitMs) {
      this.done = true
      this.lost(
        new PunctualError(
          'ILLEGAL_STATE',
          `the group consumer has had no connection to its group coordinator for ${Math.round(away / 1000)} s (${state}) while the Kafka cluster at ${this.bootstrapServers} was away or the client did not find the coordinator again; the group has given this instance's tasks to other members, and it stops: start it again`,
        ),
      )
    } else if (!this.warned && away >= WARN_AFTER_MS) {
      this.warned = true
      this.logger.warn({ awayMs: away }, `the group consumer has had no connection to its group coordinator for ${Math.round(away / 1000)} s (${state}); it stops after ${Math.round(this.limitMs / 1000)} s`)
    }
  }
}
