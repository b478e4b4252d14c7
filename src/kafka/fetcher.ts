import type { Header } from '../processor/api.js'
import { NO_HEADERS } from '../processor/api.js'
import { FetchedPartition } from './fetched-partition.js'
import type { FetchedMessage } from './fetched-partition.js'

/** A partition as the client names it. */
export interface TopicPartitionRef {
  readonly topic: string
  readonly partition: number
}

/** A message as the client's `consume` gives it. */
export interface ConsumedMessage extends TopicPartitionRef {
  readonly offset: number
  readonly key?: Buffer | string | null | undefined
  readonly value: Buffer | null
  readonly timestamp?: number | undefined
  readonly headers?: ReadonlyArray<Readonly<Record<string, string | Buffer>>> | undefined
}

/** What the fetcher needs of the consumer (the client's node-rdkafka-style `KafkaConsumer`). */
export interface FetchingConsumer {
  consume(max: number, callback: (err: { message: string; code: number } | null | undefined, messages: ConsumedMessage[]) => void): void
  pause(partitions: TopicPartitionRef[]): unknown
  resume(partitions: TopicPartitionRef[]): unknown
  /** Partition-EOF events (`enable.partition.eof`): a fetch found nothing past the partition's position. */
  on?(event: 'partition.eof', listener: (eof: TopicPartitionRef & { offset: number }) => void): unknown
  /** The offsets librdkafka last learnt from fetches (no request); throws when it knows none. */
  getWatermarkOffsets?(topic: string, partition: number): { highOffset: number; lowOffset: number }
}

/** A partition's position: the group's committed offset (< 0: none, read from the partition's start). */
export interface PartitionPosition extends TopicPartitionRef {
  readonly offset: number
}

/**
 * What the task manager and the runtime need of the input's fetching: librdkafka's consumer (`Fetcher`)
 * or punctual's own Fetch requests (`DirectFetcher`).
 */
export interface InputFetcher {
  /** Starts holding a partition assigned to this instance; `position` is where its task reads first. */
  add(topic: string, partition: number, position: number): FetchedPartition
  /** Call once the group consumer holds newly assigned partitions. */
  assigned(partitions: TopicPartitionRef[]): void
  /** Stops holding a partition (revoked or lost); its records still in flight are dropped. */
  remove(topic: string, partition: number): void
  get(topic: string, partition: number): FetchedPartition | undefined
  /**
   * Where the tasks about to run read first: the group's offsets of their input partitions, once stable.
   * A fetcher that follows the group consumer's own positions ignores it.
   */
  fetchFrom(positions: readonly PartitionPosition[]): void
  start(): void
  /** Stops fetching; resolves once the fetch in flight returned. */
  stop(): Promise<void>
  /** Resolves once the fetch in flight has handed its records over. */
  settled(): Promise<void>
  /** Fetches again partitions whose tasks read half of what they held (after each processing slice). */
  resumeDrained(): void
}

/** Messages one `consume` call takes at most. */
const FETCH_BATCH = 2000

/**
 * Keeps the consumer fetching into the input partitions of the tasks this instance owns: one `consume`
 * call at a time, each taking what librdkafka has ready (it waits only for the first message, on its
 * own thread), appended to the partition's `FetchedPartition`; the next call starts as soon as one
 * returns, so a batch is gathered while the last is processed. A partition holding `maxHeld` messages
 * not yet read is paused until its task has read half of them, so memory stays bounded however far
 * processing falls behind (or while a task restores). Partition-EOF events mark a partition fetched
 * to its end, which tells a task of several partitions whether an empty one is worth waiting for.
 */
export class Fetcher implements InputFetcher {
  private readonly partitions = new Map<string, FetchedPartition>()
  private readonly paused = new Map<string, TopicPartitionRef>()
  private running = false
  /** The `consume` call in flight (one at a time). */
  private inFlight: Promise<void> | undefined

  constructor(
    private readonly consumer: FetchingConsumer,
    /** New messages arrived (the task loop has work). */
    private readonly onMessages: () => void,
    private readonly onError: (err: { message: string; code: number }) => void,
    private readonly maxHeld = 50_000,
  ) {
    consumer.on?.('partition.eof', (eof) => this.reachedEnd(eof.topic, eof.partition, eof.offset))
  }

  /** Starts reading a partition assigned to this instance; `position` is where its task reads first. */
  add(topic: string, partition: number, position: number): FetchedPartition {
    const consumer = this.consumer
    const highWatermark = (): number | undefined => {
      try {
        const high = consumer.getWatermarkOffsets?.(topic, partition).highOffset
        // Negative (librdkafka's invalid offset) until a fetch response has told it.
        return high !== undefined && high >= 0 ? high : undefined
      } catch {
        return undefined
      }
    }
    const p = new FetchedPartition(topic, partition, position, highWatermark)
    this.partitions.set(key(topic, partition), p)
    return p
  }

  /**
   * Call once the consumer holds newly assigned partitions. librdkafka keeps an application pause on
   * its partition object across an unassign, so a partition this instance paused, lost to another
   * member and got back would never be fetched again: resume it.
   */
  assigned(partitions: TopicPartitionRef[]): void {
    if (partitions.length > 0) this.consumer.resume(partitions)
  }

  /** librdkafka fetches from the group's committed offsets itself (and a recovery seeks it there). */
  fetchFrom(): void {}

  /** Stops holding a partition (revoked or lost); messages of it still in flight are dropped. */
  remove(topic: string, partition: number): void {
    this.partitions.delete(key(topic, partition))
    this.paused.delete(key(topic, partition))
  }

  get(topic: string, partition: number): FetchedPartition | undefined {
    return this.partitions.get(key(topic, partition))
  }

  start(): void {
    if (this.running) return
    this.running = true
    this.fetch()
  }

  /** Stops fetching; resolves once the `consume` call in flight returned. */
  async stop(): Promise<void> {
    this.running = false
    await this.inFlight
  }

  /**
   * Resolves once the `consume` call in flight has handed its messages over: librdkafka moves a
   * partition's position when it takes messages for a call, before the call's callback appends them.
   */
  async settled(): Promise<void> {
    await this.inFlight
  }

  /** Resumes paused partitions whose tasks read half of what they held (after each processing slice). */
  resumeDrained(): void {
    if (this.paused.size === 0) return
    const resume: TopicPartitionRef[] = []
    for (const [k, ref] of this.paused) {
      const p = this.partitions.get(k)
      if (p === undefined || p.size <= this.maxHeld / 2) {
        resume.push(ref)
        this.paused.delete(k)
      }
    }
    if (resume.length > 0) this.consumer.resume(resume)
  }

  /**
   * A partition is fetched to its end. A task waiting for it (it had records not yet fetched) may now
   * process its other partitions. The client emits this before handing out the messages fetched ahead of
   * it in the same `consume` call; the task loop runs after that call's messages are appended.
   */
  private reachedEnd(topic: string, partition: number, offset: number): void {
    const p = this.partitions.get(key(topic, partition))
    if (p === undefined) return
    const was = p.caughtUp()
    p.reachedEnd(offset)
    if (!was) this.onMessages()
  }

  private fetch(): void {
    if (!this.running) return
    this.inFlight = new Promise<void>((resolve) => {
      this.consumer.consume(FETCH_BATCH, (err, messages) => {
        resolve()
        // The client calls this from native code, which would swallow an exception: report it instead.
        try {
          if (err) {
            // A timeout only means nothing arrived; anything else goes to the runtime.
            if (err.code !== TIMED_OUT) this.onError(err)
          } else if (messages.length > 0) this.append(messages)
        } catch (e) {
          this.running = false
          this.onError({ message: (e as Error).message, code: 0 })
          return
        }
        // The next call starts now, not after the task loop's run (scheduled by the append): the client
        // gathers a batch on a worker thread, so it collects the next while this one is processed.
        if (this.running) this.fetch()
      })
    })
  }

  private append(messages: readonly ConsumedMessage[]): void {
    let appended = false
    // Messages come in runs of one partition: each run is appended at once.
    let run: FetchedMessage[] = []
    let runTopic = ''
    let runPartition = -1
    const flush = (): void => {
      if (run.length === 0) return
      const k = key(runTopic, runPartition)
      const p = this.partitions.get(k)
      if (p !== undefined) {
        p.append(run)
        appended = true
        if (p.size >= this.maxHeld && !this.paused.has(k)) {
          const ref = { topic: p.topic, partition: p.partition }
          this.paused.set(k, ref)
          this.consumer.pause([ref])
        }
      }
      run = []
    }
    for (const m of messages) {
      if (m.partition !== runPartition || m.topic !== runTopic) {
        flush()
        runTopic = m.topic
        runPartition = m.partition
      }
      run.push({ offset: m.offset, key: toBytes(m.key), value: m.value, timestamp: m.timestamp ?? 0, headers: toHeaders(m.headers) })
    }
    flush()
    if (appended) this.onMessages()
  }
}

/** librdkafka's "timed out" (RD_KAFKA_RESP_ERR__TIMED_OUT). */
const TIMED_OUT = -185

function key(topic: string, partition: number): string {
  return `${topic}:${partition}`
}

function toBytes(key: Buffer | string | null | undefined): Uint8Array | null {
  if (key === null || key === undefined) return null
  return typeof key === 'string' ? Buffer.from(key) : key
}

function toHeaders(headers: ConsumedMessage['headers']): FetchedMessage['headers'] {
  if (headers === undefined || headers.length === 0) return NO_HEADERS
  const out: Header[] = []
  for (const h of headers) for (const [k, v] of Object.entries(h)) out.push({ key: k, value: typeof v === 'string' ? Buffer.from(v) : v })
  return out
}
