import type { Logger } from '../util/logger.js'
import type { BrokerLink, ClusterWire, PartitionFetched, PartitionLeader } from './broker-wire.js'
import { FetchedPartition } from './fetched-partition.js'
import type { FetchedMessage } from './fetched-partition.js'
import type { FetchingConsumer, InputFetcher, PartitionPosition, TopicPartitionRef } from './fetcher.js'
import { decodeRecordBatches } from './record-batches.js'

/** How long a broker holds a fetch that finds nothing new (Kafka's `fetch.max.wait.ms`, shorter). */
const MAX_WAIT_MS = 100
/** A fetch's size limits: Kafka's consumer defaults (`fetch.max.bytes`, `max.partition.fetch.bytes`). */
const MAX_BYTES = 52_428_800
const PARTITION_MAX_BYTES = 1_048_576
/** The least a partition's share of a fetch is (a response holds a partition's first batch whole anyway). */
const PARTITION_MIN_BYTES = 16_384
/**
 * After a broker could not be reached: the wait before it is tried again, doubling to MAX_RETRY_MS. The
 * metadata is asked at most once per RETRY_MS, so a leader that stays wrong makes no storm of requests.
 */
const RETRY_MS = 100
const MAX_RETRY_MS = 2_000
/** How long `stop` waits for the fetches in flight. */
const STOP_WAIT_MS = 1_000
/** Where a partition with no committed offset starts (Kafka's ListOffsets "earliest"). */
const EARLIEST = -2

/** Partition errors after which the leader is looked up again (it moved, or is on its way), and the fetch retried. */
const LEADER_MOVED = new Set([
  -1, // UNKNOWN_SERVER_ERROR (Kafka's consumer retries it)
  3, // UNKNOWN_TOPIC_OR_PARTITION
  5, // LEADER_NOT_AVAILABLE
  6, // NOT_LEADER_OR_FOLLOWER
  9, // REPLICA_NOT_AVAILABLE
  56, // KAFKA_STORAGE_ERROR
  74, // FENCED_LEADER_EPOCH
  75, // UNKNOWN_LEADER_EPOCH
  78, // OFFSET_NOT_AVAILABLE
  100, // UNKNOWN_TOPIC_ID
])
const OFFSET_OUT_OF_RANGE = 1

/** The fetcher's waits between retries, and the time they are measured by (tests give a virtual one). */
export interface RetryTimer {
  now(): number
  sleep(ms: number): Promise<void>
}

const REAL_TIME: RetryTimer = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
}

/** One input partition as the direct fetcher reads it. */
interface Fetched {
  readonly ref: TopicPartitionRef
  readonly held: FetchedPartition
  /** The next offset to fetch; undefined until the task's position is known, EARLIEST until looked up. */
  offset: number | undefined
  leader: PartitionLeader | undefined
  highWatermark: number | undefined
  /** Bytes per record of the partition's last records fetched: sizes the next fetch to the room left under `maxHeld`. */
  bytesPerRecord: number
  /** Bumped when the position is set again or the partition removed: a fetch in flight for an older one is dropped. */
  epoch: number
  /** In a request now: no other broker's loop asks for it (after a leader change) until that one is answered. */
  inFlight: boolean
}

/**
 * Fetches the tasks' input partitions itself, with Kafka's Fetch request, from each partition's leader
 * (as Kafka's Java consumer does on its network thread), rather than through librdkafka: librdkafka's
 * client makes a JavaScript object of every message on the event loop, about 3 µs each, which holds an
 * instance below one Kafka Streams thread. A response's records stay one buffer; keys and values are
 * views of it. The group consumer still holds the group membership, the assignment and the offsets:
 * its partitions stay paused so that it never fetches, and it is polled only for its group events.
 *
 * Each broker leading an input partition has one fetch in flight at a time; the next is sent as soon as
 * a response is decoded, before the tasks process it. A partition starts at the position the task
 * manager gives (`fetchFrom`, the group's committed offset); one holding `maxHeld` records not yet read
 * is left out of fetches until its task has read half of them.
 */
export class DirectFetcher implements InputFetcher {
  private readonly partitions = new Map<string, Fetched>()
  private readonly loops = new Map<number, Promise<void>>()
  /** Requests out now, for `settled`. */
  private readonly requests = new Set<Promise<unknown>>()
  /** Per broker that failed: the wait before it is tried again. */
  private readonly brokerRetryMs = new Map<number, number>()
  private running = false
  private refreshing = false
  private lastRefreshAt = -Infinity
  private metadataRetryMs = RETRY_MS
  /** Turns the order of a request's partitions: each comes first in turn (the broker fills the first one's share first). */
  private turn = 0
  private polling: Promise<void> | undefined
  private readonly decoded: FetchedMessage[] = []

  constructor(
    /** The group consumer: polled for its group events, its partitions kept paused. */
    private readonly consumer: FetchingConsumer,
    private readonly wire: ClusterWire,
    private readonly isolationLevel: 0 | 1,
    private readonly onMessages: () => void,
    private readonly onError: (err: { message: string; code: number }) => void,
    private readonly logger: Logger,
    private readonly maxHeld = 50_000,
    private readonly time: RetryTimer = REAL_TIME,
  ) {}

  add(topic: string, partition: number, position: number): FetchedPartition {
    const k = key(topic, partition)
    const previous = this.partitions.get(k)
    if (previous !== undefined) previous.epoch++
    const p: Fetched = {
      ref: { topic, partition },
      held: new FetchedPartition(topic, partition, position, () => p.highWatermark),
      offset: undefined,
      leader: undefined,
      highWatermark: undefined,
      bytesPerRecord: 0,
      epoch: (previous?.epoch ?? 0) + 1,
      inFlight: false,
    }
    this.partitions.set(k, p)
    return p.held
  }

  /** The group consumer must not fetch what this fetcher fetches. */
  assigned(partitions: TopicPartitionRef[]): void {
    if (partitions.length > 0) this.consumer.pause(partitions)
  }

  remove(topic: string, partition: number): void {
    const p = this.partitions.get(key(topic, partition))
    if (p === undefined) return
    p.epoch++
    this.partitions.delete(key(topic, partition))
  }

  get(topic: string, partition: number): FetchedPartition | undefined {
    return this.partitions.get(key(topic, partition))?.held
  }

  fetchFrom(positions: readonly PartitionPosition[]): void {
    for (const pos of positions) {
      const p = this.partitions.get(key(pos.topic, pos.partition))
      if (p === undefined) continue
      p.epoch++
      p.offset = pos.offset >= 0 ? pos.offset : EARLIEST
    }
    this.kick()
  }

  start(): void {
    if (this.running) return
    this.running = true
    this.poll()
    this.kick()
  }

  /**
   * Stops fetching. A request out is waited for STOP_WAIT_MS at most (a broker that went silent holds it
   * until it times out): what it brings is dropped, since a partition's position is set again before
   * fetching resumes, and once stopped a failed request ends its loop.
   */
  async stop(): Promise<void> {
    this.running = false
    await Promise.race([this.settled(), new Promise((resolve) => setTimeout(resolve, STOP_WAIT_MS).unref())])
    await this.polling
  }

  /** Resolves once the requests out now are answered (or failed), their records handed over. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.requests])
  }

  resumeDrained(): void {
    for (const p of this.partitions.values()) {
      if (p.offset !== undefined && p.leader !== undefined && !this.loops.has(p.leader.nodeId) && p.held.size <= this.maxHeld / 2) {
        this.kick()
        return
      }
    }
  }

  /** Starts a fetch loop for every broker leading a partition ready to fetch (the leaders looked up first where needed). */
  private kick(): void {
    if (!this.running) return
    let needLeaders = false
    const nodes = new Set<number>()
    for (const p of this.partitions.values()) {
      if (p.offset === undefined) continue
      if (p.leader === undefined) needLeaders = true
      else if (!this.loops.has(p.leader.nodeId) && !p.inFlight && p.held.size < this.maxHeld) nodes.add(p.leader.nodeId)
    }
    for (const node of nodes) this.runLoop(node)
    if (needLeaders) this.refreshLeaders()
  }

  /**
   * Looks up the partitions' leaders, one chain at a time, at most once per RETRY_MS, until every
   * partition to fetch has one (a leader being elected is waited for), then starts the loops.
   */
  private refreshLeaders(): void {
    if (this.refreshing || !this.running) return
    this.refreshing = true
    void (async () => {
      let failures = 0
      try {
        for (;;) {
          const wait = this.lastRefreshAt + RETRY_MS - this.time.now()
          if (wait > 0) await this.time.sleep(wait)
          if (!this.running) return
          this.lastRefreshAt = this.time.now()
          const topics = [...new Set([...this.partitions.values()].map((p) => p.ref.topic))]
          try {
            const { leaders } = await this.wire.metadata(topics)
            for (const [k, p] of this.partitions) p.leader = leaders.get(k)
            if (failures > 0) this.logger.info({ failures }, `the cluster's metadata is read again, after ${failures} failed attempts`)
            failures = 0
          } catch (err) {
            // One warning while the cluster is away; the attempts after it are debug lines.
            this.logger[failures++ === 0 ? 'warn' : 'debug']({ err }, `the cluster's metadata could not be read (${(err as Error).message}): asking again in ${this.metadataRetryMs} ms`)
            await this.metadataBackOff()
            continue
          }
          if (![...this.partitions.values()].some((p) => p.offset !== undefined && p.leader === undefined)) break
          await this.metadataBackOff()
        }
        this.metadataRetryMs = RETRY_MS
      } finally {
        this.refreshing = false
      }
      this.kick()
    })()
  }

  private runLoop(node: number): void {
    const loop = (async () => {
      try {
        while (this.running && (await this.fetchOnce(node))) {
          /* the next fetch goes out at once */
        }
      } catch (err) {
        this.running = false
        this.onError({ message: (err as Error).message, code: 0 })
      } finally {
        this.loops.delete(node)
      }
      if (this.running) this.kick()
    })()
    this.loops.set(node, loop)
  }

  /** One fetch from broker `node`; false when it leads nothing ready to fetch (or it could not be reached). */
  private async fetchOnce(node: number): Promise<boolean> {
    const ready: Fetched[] = []
    for (const p of this.partitions.values()) {
      if (p.offset !== undefined && p.leader?.nodeId === node && !p.inFlight && p.held.size < this.maxHeld) ready.push(p)
    }
    if (ready.length === 0) return false
    const first = this.turn++ % ready.length
    if (first > 0) ready.push(...ready.splice(0, first))
    let link: BrokerLink
    try {
      link = this.wire.link(node)
    } catch {
      // A broker the metadata no longer names.
      for (const p of ready) p.leader = undefined
      return false
    }
    for (const p of ready) p.inFlight = true
    try {
      return await this.fetchPartitions(node, link, ready)
    } finally {
      for (const p of ready) p.inFlight = false
    }
  }

  private async fetchPartitions(node: number, link: BrokerLink, ready: Fetched[]): Promise<boolean> {
    const unknown = ready.filter((p) => p.offset === EARLIEST)
    if (unknown.length > 0) {
      const epochs = unknown.map((p) => p.epoch)
      const found = await this.unlessDown(node, link, ready, () => link.listOffsets(unknown.map((p) => ({ topic: p.ref.topic, partition: p.ref.partition, leaderEpoch: p.leader?.epoch ?? -1 })), EARLIEST, this.isolationLevel))
      if (found === undefined) return false
      unknown.forEach((p, i) => {
        if (p.epoch === epochs[i] && p.offset === EARLIEST) this.startAt(p, found.get(key(p.ref.topic, p.ref.partition)))
      })
    }
    const fetching = ready.filter((p) => p.offset !== undefined && p.offset >= 0 && p.leader?.nodeId === node)
    if (fetching.length === 0) return true
    const asked = new Map(fetching.map((p) => [key(p.ref.topic, p.ref.partition), { p, offset: p.offset as number, epoch: p.epoch }]))
    const response = await this.unlessDown(node, link, ready, () =>
      link.fetch({
        maxWaitMs: MAX_WAIT_MS,
        isolationLevel: this.isolationLevel,
        maxBytes: MAX_BYTES,
        partitions: fetching.map((p) => ({ topic: p.ref.topic, partition: p.ref.partition, offset: p.offset as number, leaderEpoch: p.leader?.epoch ?? -1, maxBytes: this.roomOf(p) })),
      }),
    )
    if (response === undefined) return false
    let appended = false
    for (const r of response) {
      const k = key(r.topic, r.partition)
      const a = asked.get(k)
      // Removed, or set to another position, while the fetch was out: what it brings is not the partition's next records.
      if (a === undefined || a.p.epoch !== a.epoch || a.p.offset !== a.offset || this.partitions.get(k) !== a.p) continue
      if (this.take(a.p, r, a.offset)) appended = true
    }
    if (appended) this.onMessages()
    return true
  }

  /**
   * A partition's share of the next fetch: what fills the room left under `maxHeld` at the size its last
   * records had (Kafka's `max.partition.fetch.bytes` at most), so that what it holds stays near its bound.
   */
  private roomOf(p: Fetched): number {
    if (p.bytesPerRecord === 0) return PARTITION_MAX_BYTES
    const room = (this.maxHeld - p.held.size) * p.bytesPerRecord
    return Math.round(Math.min(PARTITION_MAX_BYTES, Math.max(PARTITION_MIN_BYTES, room)))
  }

  /**
   * A request to broker `node`; undefined when the broker could not be reached (a restart, a network
   * cut): its connection is closed, and after a pause (its own, doubling) the leaders of its partitions
   * are looked up again.
   */
  private async unlessDown<T>(node: number, link: BrokerLink, partitions: readonly Fetched[], request: () => Promise<T>): Promise<T | undefined> {
    const out = request()
    this.requests.add(out)
    try {
      const answer = await out
      this.brokerRetryMs.delete(node)
      return answer
    } catch (err) {
      link.close()
      if (!this.running) return undefined
      const ms = this.brokerRetryMs.get(node) ?? RETRY_MS
      this.brokerRetryMs.set(node, Math.min(MAX_RETRY_MS, ms * 2))
      // A warning at the first failure; while the broker stays away, debug lines.
      this.logger[ms === RETRY_MS ? 'warn' : 'debug']({ err, broker: node }, `fetching from broker ${node} failed (${(err as Error).message}): looking up the partitions' leaders again in ${ms} ms`)
      for (const p of partitions) p.leader = undefined
      await this.time.sleep(ms)
      return undefined
    } finally {
      this.requests.delete(out)
    }
  }

  /**
   * A partition's start found by ListOffsets: its offset, or the error code the broker answered for it.
   * Records it already holds are not fetched again (a log truncated below them: the task has read past).
   */
  private startAt(p: Fetched, found: number | { errorCode: number } | undefined): void {
    if (typeof found === 'number' && found >= 0) p.offset = Math.max(found, p.held.endOffset())
    else if (found === undefined || typeof found === 'number' || LEADER_MOVED.has(found.errorCode)) {
      p.leader = undefined
      this.refreshLeaders()
    } else throw new Error(`looking up the start of ${p.ref.topic}-${p.ref.partition}: the broker answered error code ${found.errorCode}`)
  }

  /** Applies one partition of a response; true when records were appended. */
  private take(p: Fetched, r: PartitionFetched, offset: number): boolean {
    if (r.errorCode === OFFSET_OUT_OF_RANGE) {
      // Kafka Streams' auto.offset.reset for source topics: the log start (records before it were deleted).
      this.logger.warn({ topic: r.topic, partition: r.partition, offset }, `offset ${offset} of ${r.topic}-${r.partition} is out of range: reading from the partition's start`)
      p.offset = EARLIEST
      return false
    }
    if (LEADER_MOVED.has(r.errorCode)) {
      p.leader = undefined
      this.refreshLeaders()
      return false
    }
    if (r.errorCode !== 0) throw new Error(`fetching ${r.topic}-${r.partition} at offset ${offset}: the broker answered error code ${r.errorCode}`)
    p.highWatermark = r.highWatermark
    let appended = false
    if (r.records !== undefined) {
      const out = this.decoded
      out.length = 0
      const { next } = decodeRecordBatches(r.records, offset, r.aborted, this.wire.decompress, out)
      if (next > offset) p.bytesPerRecord = r.records.length / (next - offset)
      if (out.length > 0) {
        p.held.append(out)
        appended = true
      }
      out.length = 0
      p.offset = next
    }
    // At the partition's end (under read_committed, its last stable offset): the task need not wait for more.
    const end = this.isolationLevel === 1 ? r.lastStableOffset : r.highWatermark
    if ((p.offset as number) >= end && end >= 0) {
      const was = p.held.caughtUp()
      p.held.reachedEnd(p.offset as number)
      if (!was && !appended) this.onMessages()
    }
    return appended
  }

  private async metadataBackOff(): Promise<void> {
    const ms = this.metadataRetryMs
    this.metadataRetryMs = Math.min(MAX_RETRY_MS, ms * 2)
    await this.time.sleep(ms)
  }

  /**
   * Polls the group consumer, whose partitions are all paused, for its group events (the rebalance
   * callback runs inside a poll). Anything it fetched before a pause took effect is dropped: this fetcher
   * reads those records itself.
   */
  private poll(): void {
    if (!this.running) return
    this.polling = new Promise<void>((resolve) => {
      this.consumer.consume(100, (err) => {
        resolve()
        if (err && err.code !== TIMED_OUT) {
          this.running = false
          this.onError(err)
          return
        }
        if (this.running) this.poll()
      })
    })
  }
}

/** librdkafka's "timed out" (RD_KAFKA_RESP_ERR__TIMED_OUT). */
const TIMED_OUT = -185

function key(topic: string, partition: number): string {
  return `${topic}:${partition}`
}
