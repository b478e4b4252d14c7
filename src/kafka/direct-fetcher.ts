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
/** After a broker could not be reached, or named another leader: the wait before the metadata is asked again. */
const RETRY_MS = 100
const MAX_RETRY_MS = 2_000
/** How long `stop` waits for the fetches in flight. */
const STOP_WAIT_MS = 1_000
/** Where a partition with no committed offset starts (Kafka's ListOffsets "earliest"). */
const EARLIEST = -2

/** Partition errors after which the leader is looked up again (it moved, or is on its way). */
const LEADER_MOVED = new Set([
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
}

/**
 * Fetches the tasks' input partitions itself, with Kafka's Fetch request, from each partition's leader
 * (as Kafka's Java consumer does on its network thread), rather than through librdkafka: librdkafka's
 * client made a JavaScript object of every message on the event loop, about 3 µs each, which capped an
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
  private running = false
  private refreshing: Promise<void> | undefined
  private retryMs = RETRY_MS
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
  ) {}

  add(topic: string, partition: number, position: number): FetchedPartition {
    const k = key(topic, partition)
    const previous = this.partitions.get(k)
    const p: Fetched = {
      ref: { topic, partition },
      held: new FetchedPartition(topic, partition, position, () => p.highWatermark),
      offset: undefined,
      leader: undefined,
      highWatermark: undefined,
      bytesPerRecord: 0,
      epoch: (previous?.epoch ?? 0) + 1,
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
   * Stops fetching. A fetch in flight is waited for STOP_WAIT_MS at most (a broker that went silent holds
   * it until its request times out): what it brings is dropped, since a partition's position is set
   * again before fetching resumes, and once stopped a failed request ends its loop.
   */
  async stop(): Promise<void> {
    this.running = false
    await Promise.race([this.settled(), new Promise((resolve) => setTimeout(resolve, STOP_WAIT_MS).unref())])
    await this.polling
  }

  /** Resolves once the fetches in flight have handed their records over. */
  async settled(): Promise<void> {
    await Promise.all([...this.loops.values()])
  }

  resumeDrained(): void {
    for (const p of this.partitions.values()) {
      if (p.offset !== undefined && p.leader !== undefined && !this.loops.has(p.leader.nodeId) && p.held.size <= this.maxHeld / 2) {
        this.kick()
        return
      }
    }
  }

  /** Starts a fetch loop for every broker leading a partition ready to fetch (the metadata looked up first where needed). */
  private kick(): void {
    if (!this.running) return
    let needLeaders = false
    const nodes = new Set<number>()
    for (const p of this.partitions.values()) {
      if (p.offset === undefined) continue
      if (p.leader === undefined) needLeaders = true
      else if (!this.loops.has(p.leader.nodeId) && p.held.size < this.maxHeld) nodes.add(p.leader.nodeId)
    }
    for (const node of nodes) this.runLoop(node)
    if (needLeaders) this.refreshLeaders()
  }

  private refreshLeaders(): void {
    if (this.refreshing !== undefined) return
    const topics = [...new Set([...this.partitions.values()].map((p) => p.ref.topic))]
    this.refreshing = (async () => {
      try {
        const { leaders } = await this.wire.metadata(topics)
        this.retryMs = RETRY_MS
        for (const [k, p] of this.partitions) p.leader = leaders.get(k)
      } catch (err) {
        this.logger.warn({ err }, `the cluster's metadata could not be read: asking again in ${this.retryMs} ms`)
        await this.backOff()
      } finally {
        this.refreshing = undefined
      }
      // Partitions with no leader yet (one being elected) are looked up again after a pause.
      if (this.running && [...this.partitions.values()].some((p) => p.offset !== undefined && p.leader === undefined)) await this.backOff()
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

  /** One fetch from broker `node`; false when it leads nothing ready to fetch (or its link failed). */
  private async fetchOnce(node: number): Promise<boolean> {
    const ready: Fetched[] = []
    for (const p of this.partitions.values()) {
      if (p.offset !== undefined && p.leader?.nodeId === node && p.held.size < this.maxHeld) ready.push(p)
    }
    if (ready.length === 0) return false
    let link: BrokerLink
    try {
      link = this.wire.link(node)
    } catch {
      for (const p of ready) p.leader = undefined
      return false
    }
    const unknown = ready.filter((p) => p.offset === EARLIEST)
    if (unknown.length > 0) {
      const epochs = unknown.map((p) => p.epoch)
      const found = await this.unlessDown(node, link, ready, () => link.listOffsets(unknown.map((p) => ({ topic: p.ref.topic, partition: p.ref.partition, leaderEpoch: p.leader?.epoch ?? -1 })), EARLIEST, this.isolationLevel))
      if (found === undefined) return false
      unknown.forEach((p, i) => {
        if (p.epoch === epochs[i]) this.startAt(p, found.get(key(p.ref.topic, p.ref.partition)))
      })
    }
    const fetching = ready.filter((p) => p.offset !== undefined && p.offset >= 0 && p.leader?.nodeId === node)
    if (fetching.length === 0) return true
    const offsets = fetching.map((p) => p.offset as number)
    const epochs = fetching.map((p) => p.epoch)
    const response = await this.unlessDown(node, link, ready, () =>
      link.fetch({
        maxWaitMs: MAX_WAIT_MS,
        isolationLevel: this.isolationLevel,
        maxBytes: MAX_BYTES,
        partitions: fetching.map((p, i) => ({ topic: p.ref.topic, partition: p.ref.partition, offset: offsets[i] as number, leaderEpoch: p.leader?.epoch ?? -1, maxBytes: this.roomOf(p) })),
      }),
    )
    if (response === undefined) return false
    let appended = false
    for (const r of response) {
      const i = fetching.findIndex((p) => p.ref.partition === r.partition && p.ref.topic === r.topic)
      const p = fetching[i]
      // Removed, or moved to another position, while the fetch was out.
      if (p === undefined || p.epoch !== epochs[i] || this.partitions.get(key(r.topic, r.partition)) !== p) continue
      if (this.take(p, r, offsets[i] as number)) appended = true
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
   * cut): its connection is closed, and the leaders of its partitions are looked up again after a pause.
   */
  private async unlessDown<T>(node: number, link: BrokerLink, partitions: readonly Fetched[], request: () => Promise<T>): Promise<T | undefined> {
    try {
      const answer = await request()
      this.retryMs = RETRY_MS
      return answer
    } catch (err) {
      link.close()
      if (!this.running) return undefined
      this.logger.warn({ err, broker: node }, `fetching from broker ${node} failed (${(err as Error).message}): looking up the partitions' leaders again in ${this.retryMs} ms`)
      for (const p of partitions) p.leader = undefined
      await this.backOff()
      return undefined
    }
  }

  /** A partition's start found by ListOffsets: its offset, or the error code the broker answered for it. */
  private startAt(p: Fetched, found: number | { errorCode: number } | undefined): void {
    if (typeof found === 'number') p.offset = found
    else if (found === undefined || LEADER_MOVED.has(found.errorCode)) {
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
      p.offset = next
    }
    // At the partition's end (under read_committed, its last stable offset): the task need not wait for more.
    const end = this.isolationLevel === 1 ? r.lastStableOffset : r.highWatermark
    if ((p.offset as number) >= end && end >= 0) {
      p.offset = Math.max(p.offset as number, end)
      const was = p.held.caughtUp()
      p.held.reachedEnd(p.offset)
      if (!was && !appended) this.onMessages()
    }
    return appended
  }

  private async backOff(): Promise<void> {
    const ms = this.retryMs
    this.retryMs = Math.min(MAX_RETRY_MS, this.retryMs * 2)
    await new Promise((resolve) => setTimeout(resolve, ms))
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
