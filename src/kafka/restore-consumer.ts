import type { RestoreConsumer } from './changelog-reader.js'
import type { ClientError, RestoreClient } from './client-supplier.js'
import type { ConsumedMessage, TopicPartitionRef } from './fetcher.js'

type Positioned = TopicPartitionRef & { offset: number }

/** Messages one `consume` call of the shared consumer takes at most. */
const BATCH = 2000
/** librdkafka's logical offset "the beginning of the partition". */
const OFFSET_BEGINNING = -2

/**
 * The instance's one restore consumer (Kafka Streams has one per stream thread), shared by every task
 * restoring: each task's `ChangelogReader` reads through a `RestoreChannel` of its own, which looks to it
 * like a consumer of its own. The shared consumer is assigned by hand the partitions of every open
 * channel, makes one `consume` call at a time and hands each message, and each partition-EOF event, to
 * the channel of its partition.
 *
 * Its assignment changes incrementally (`incrementalAssign` of a channel's new partitions,
 * `incrementalUnassign` of a closed one's), only between `consume` calls. librdkafka 2.15 crashes the
 * process when a partition is removed a second time before its fetcher answered the first removal's
 * stop (the assertion `rktp->rktp_started` in `rd_kafka_assignment_partition_stopped`, librdkafka issue
 * 5573): a full `assign` removes every partition still restoring at each change, so two changes in
 * quick succession did that. Here a partition is removed once per assignment, and one removed is not
 * assigned again before a `consume` call has returned since (its stop answered meanwhile).
 *
 * The client's assignment of a partition serves the channel that asked for it: its messages and its
 * end go to that channel only while it still owns the partition. A task that restores again (revoked,
 * then assigned back) before its old channel closed gets a new channel: the partition is removed for
 * the old one and assigned again from the new channel's start, and nothing the old assignment fetched
 * reaches the new channel. The consumer disconnects only at
 * `close`, after the call in flight: the client can crash the process when a disconnect overlaps a call
 * (confluent-kafka-javascript issue 34).
 */
export class SharedRestoreConsumer {
  private readonly channels = new Set<RestoreChannel>()
  /** Which channel reads each partition, and the offset to start reading it from. */
  private readonly owners = new Map<string, RestoreChannel>()
  private readonly starts = new Map<string, number>()
  /** The partitions the client is assigned now, each with the channel that assignment serves. */
  private readonly assigned = new Map<string, RestoreChannel>()
  /** Partitions removed from the client's assignment since the last `consume` call returned. */
  private readonly justRemoved = new Set<string>()
  private consumer: RestoreClient | undefined
  private connecting: Promise<void> | undefined
  private consuming = false
  /** The partitions changed: reassigned before the next `consume` call. */
  private reassign = false
  private closed = false

  constructor(private readonly make: () => RestoreClient) {}

  /** A channel for one task's reader. */
  channel(): RestoreChannel {
    const channel = new RestoreChannel(this)
    this.channels.add(channel)
    return channel
  }

  /** @internal Connects the consumer on the first channel's connect (refused once closed). */
  connect(): Promise<void> {
    if (this.closed && this.connecting === undefined) return Promise.reject(new Error('the restore consumer is closed'))
    this.connecting ??= new Promise<void>((resolve, reject) => {
      const consumer = this.make()
      this.consumer = consumer
      consumer.on('partition.eof', (eof) => this.served(key(eof))?.reachedEnd(eof))
      consumer.connect({}, (err) => (err ? reject(err) : resolve()))
    })
    return this.connecting
  }

  /** @internal Partitions a channel reads from these offsets (OFFSET_BEGINNING: the start). */
  add(channel: RestoreChannel, partitions: readonly Positioned[]): void {
    for (const p of partitions) {
      this.owners.set(key(p), channel)
      this.starts.set(key(p), p.offset)
    }
    this.reassign = true
    this.pump()
  }

  /**
   * @internal A channel closes: its partitions are unassigned at once (or when the call under way
   * returns). A partition left assigned would go on being fetched in the background, for nobody, as
   * its changelog grows.
   */
  remove(channel: RestoreChannel): void {
    this.channels.delete(channel)
    for (const [tp, owner] of this.owners) {
      if (owner !== channel) continue
      this.owners.delete(tp)
      this.starts.delete(tp)
      this.reassign = true
    }
    this.applyAssignment()
  }

  /** The channel the client's assignment of a partition serves, while it still owns the partition. */
  private served(tp: string): RestoreChannel | undefined {
    const channel = this.assigned.get(tp)
    return channel !== undefined && this.owners.get(tp) === channel ? channel : undefined
  }

  /**
   * Brings the client's assignment to the open channels' partitions, if they changed and no call is
   * under way: removes the partitions no channel owns any more, or whose owner changed; assigns the
   * owned ones not assigned, except one removed since the last `consume` call returned (it waits for the next).
   */
  private applyAssignment(): void {
    const consumer = this.consumer
    if (!this.reassign || this.consuming || this.closed || consumer === undefined) return
    this.reassign = false
    const gone: string[] = []
    for (const [tp, channel] of this.assigned) if (this.owners.get(tp) !== channel) gone.push(tp)
    for (const tp of gone) {
      this.assigned.delete(tp)
      this.justRemoved.add(tp)
    }
    const added: string[] = []
    for (const [tp, channel] of this.owners) {
      if (this.assigned.has(tp)) continue
      if (this.justRemoved.has(tp)) {
        this.reassign = true
        continue
      }
      this.assigned.set(tp, channel)
      added.push(tp)
    }
    if (gone.length > 0) consumer.incrementalUnassign(gone.map(parse))
    if (added.length > 0) consumer.incrementalAssign(added.map((tp) => ({ ...parse(tp), offset: this.starts.get(tp) ?? OFFSET_BEGINNING })))
  }

  /** @internal A channel wants messages: a `consume` call starts unless one is under way. */
  pump(): void {
    const consumer = this.consumer
    this.applyAssignment()
    if (this.consuming || this.closed || consumer === undefined || this.owners.size === 0 || ![...this.channels].some((c) => c.waiting)) return
    this.consuming = true
    consumer.consume(BATCH, (err, messages) => {
      this.consuming = false
      // The fetchers of partitions removed before this call have answered their stop by now.
      this.justRemoved.clear()
      if (this.closed) return this.disconnectNow()
      // Messages come in runs of one partition: its channel is looked up once per run.
      let topic: string | undefined
      let partition = -1
      let owner: RestoreChannel | undefined
      for (const m of messages ?? []) {
        if (m.partition !== partition || m.topic !== topic) {
          topic = m.topic
          partition = m.partition
          owner = this.served(key(m))
        }
        owner?.received(m)
      }
      for (const c of [...this.channels]) c.answer(err ?? undefined)
      this.applyAssignment()
      this.pump()
    })
  }

  /** @internal The watermarks of a partition, asked through the shared consumer. */
  queryWatermarkOffsets(...args: Parameters<RestoreConsumer['queryWatermarkOffsets']>): void {
    ;(this.consumer as RestoreClient).queryWatermarkOffsets(...args)
  }

  private disconnected: Promise<void> | undefined
  private disconnectDone: (() => void) | undefined

  /** Disconnects the consumer once no call is under way; resolves when it has. */
  close(): Promise<void> {
    if (this.closed) return this.disconnected ?? Promise.resolve()
    this.closed = true
    this.disconnected = new Promise((resolve) => (this.disconnectDone = resolve))
    if (this.consumer === undefined) this.disconnectDone?.()
    else if (!this.consuming) void (this.connecting ?? Promise.resolve()).then(() => this.disconnectNow(), () => this.disconnectNow())
    return this.disconnected
  }

  private disconnectNow(): void {
    const done = this.disconnectDone
    this.disconnectDone = undefined
    if (done !== undefined) this.consumer?.disconnect(() => done())
  }
}

/** One task's view of the shared restore consumer: the calls `ChangelogReader` makes of a consumer of its own. */
export class RestoreChannel implements RestoreConsumer {
  private readonly queue: ConsumedMessage[] = []
  private pending: { max: number; callback: (err: { message: string; code: number } | null | undefined, messages: ConsumedMessage[]) => void } | undefined
  private eofListener: ((eof: Positioned) => void) | undefined
  /** Ends reached, told once the messages before them are handed over (the client tells an end before it returns the batch that reached it). */
  private readonly ends: Positioned[] = []
  private open = true

  constructor(private readonly shared: SharedRestoreConsumer) {}

  get waiting(): boolean {
    return this.pending !== undefined
  }

  connect(_options: object, callback: (err: { message: string } | null | undefined) => void): void {
    this.shared.connect().then(
      () => callback(null),
      (err: { message: string }) => callback(err),
    )
  }

  assign(partitions: Positioned[]): void {
    this.shared.add(this, partitions)
  }

  consume(max: number, callback: (err: { message: string; code: number } | null | undefined, messages: ConsumedMessage[]) => void): void {
    this.pending = { max, callback }
    if (this.queue.length > 0) this.answer(undefined)
    else this.shared.pump()
  }

  on(_event: 'partition.eof', listener: (eof: Positioned) => void): void {
    this.eofListener = listener
  }

  queryWatermarkOffsets(...args: Parameters<RestoreConsumer['queryWatermarkOffsets']>): void {
    this.shared.queryWatermarkOffsets(...args)
  }

  /** Gives up its partitions; the shared consumer stays for the other tasks. */
  disconnect(callback?: () => void): void {
    this.open = false
    this.queue.length = 0
    this.shared.remove(this)
    setImmediate(() => callback?.())
  }

  /** @internal A message of one of its partitions. */
  received(m: ConsumedMessage): void {
    if (this.open) this.queue.push(m)
  }

  /** @internal Its partition reached its end. */
  reachedEnd(eof: Positioned): void {
    if (this.open) this.ends.push(eof)
  }

  /** @internal A shared call returned: the pending call gets what is queued (nothing, as a timed-out call would). */
  answer(err: ClientError | undefined): void {
    const pending = this.pending
    if (pending === undefined) return
    this.pending = undefined
    const messages = this.queue.splice(0, pending.max)
    const ends = this.queue.length === 0 ? this.ends.splice(0) : []
    setImmediate(() => {
      pending.callback(err ?? null, messages)
      if (this.open) for (const eof of ends) this.eofListener?.(eof)
    })
  }
}

function key(p: TopicPartitionRef): string {
  return `${p.topic}:${p.partition}`
}

function parse(tp: string): TopicPartitionRef {
  const at = tp.lastIndexOf(':')
  return { topic: tp.slice(0, at), partition: Number(tp.slice(at + 1)) }
}
