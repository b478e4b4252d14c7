import type { ChangelogRecord } from '../runtime/changelog.js'
import type { ChangelogSource } from '../runtime/changelog-source.js'
import type { ChangelogTopics } from './changelog-topics.js'
import type { ConsumedMessage, TopicPartitionRef } from './fetcher.js'
import { COMMIT_HEADER, covers, epochOf, readCommitHeader } from './commit-numbers.js'
import type { CommitMark } from './commit-numbers.js'

/** What the reader needs of its consumer: assigned by hand (no group), partition EOF events on. */
export interface RestoreConsumer {
  connect(options: object, callback: (err: { message: string } | null | undefined) => void): unknown
  assign(partitions: Array<TopicPartitionRef & { offset: number }>): unknown
  consume(max: number, callback: (err: { message: string; code: number } | null | undefined, messages: ConsumedMessage[]) => void): void
  on(event: 'partition.eof', listener: (eof: TopicPartitionRef & { offset: number }) => void): unknown
  queryWatermarkOffsets(topic: string, partition: number, timeout: number, callback: (err: { message: string } | null | undefined, offsets: { lowOffset: number; highOffset: number }) => void): unknown
  disconnect(callback?: () => void): unknown
}

/** librdkafka's logical offset "the beginning of the partition". */
const OFFSET_BEGINNING = -2
const TIMED_OUT = -185
const BATCH = 2000
/**
 * Records a following reader holds at most (about: a fetch may go past it). Its owner writes a commit's
 * records before the group takes the commit's offsets, so a standby holds what the owner wrote since its
 * last commit the standby knows of; a full reader reads no more until a newer mark releases some, and
 * says so (`full`), so that its standby reads the group's mark then rather than at its next checkpoint.
 */
export const HELD_MAX = 100_000

/**
 * A task's changelog records on Kafka, read from the beginning of its partition of each of its
 * sub-topology's changelog topics (or from the offsets its local state reaches) to their end (under
 * read_committed: the last stable offset, so an open transaction of a crashed instance is not read), as a `ChangelogSource`: the task manager folds
 * them into the task's state in bounded steps while the other tasks process. The records of different
 * topics interleave; within a topic they are in offset order, which is all a last-wins fold needs.
 *
 * At least once, a `mark` (the task's last complete commit and the numbers to leave out, from the
 * group's offsets) leaves out the records of commits it does not cover, which a crash cut short: part
 * of them may be missing, and their input is processed again from the mark's positions. Records without
 * a commit number (written under exactly-once, whose transactions keep them out until committed) are
 * always applied.
 *
 * At least once, it also leaves out a numbered record whose owner epoch (`epochOf`, `commit-numbers.ts`)
 * is below the highest one it has read before in the same topic (`stale`): a later owner had claimed the
 * task when that record was written, so it comes from a fenced member (a zombie, Kafka Streams'
 * KAFKA-12693), and applying it would put older state over the newer owner's. The claim's void range
 * leaves such a record out anyway; this holds once that range is trimmed from the mark too. Read from a
 * local state's offsets, it knows only the epochs from there on.
 *
 * A standby's reader follows (`following`): it never ends, and reads what the owner writes as it comes.
 * At least once it holds the records whose commit its mark does not cover yet (the owner writes a
 * commit's records before the group takes its offsets) until a later mark (`follow`) covers or voids
 * them; `readTo` stops at the first one held, so that local records never hold a commit the group may
 * still void.
 *
 * The reader owns its consumer from connect to disconnect, and never disconnects it while a connect or a
 * consume call is under way: the client can crash the process when a disconnect overlaps either
 * (confluent-kafka-javascript issue 34). A close during one disconnects when it returns.
 */
export class ChangelogReader implements ChangelogSource {
  private buffer: ChangelogRecord[] = []
  private next = 0
  /** Per topic: the end offset when the read started (progress only), and the next offset read. */
  private readonly ends = new Map<string, number>()
  private readonly positions = new Map<string, number>()
  private readonly atEnd = new Set<string>()
  /** Per topic: the offset its end was reached at. */
  private readonly endOffsets = new Map<string, number>()
  /** Records left out: the mark does not cover their commit. */
  skipped = 0
  /** The highest commit number of a record left out (0: none). */
  highestSkipped = 0
  /**
   * Records left out because a record of a later owner epoch came before them in their topic: a fenced
   * owner's (a zombie's) writes. Not counted in `skipped` (nor in `highestSkipped`); a record its mark
   * does not cover is counted there, whatever its epoch.
   */
  stale = 0
  /** At least once: the highest commit number of a record it gave (0: none). */
  highestApplied = 0
  /** At least once, per topic: the highest owner epoch of a numbered record read. */
  private readonly epochs = new Map<string, number>()
  /**
   * Following at least once, per topic in offset order: records read but not applied yet, from the
   * first one whose commit the mark does not cover yet (a commit under way, whose offsets the group has
   * not taken) on (a record without a number among them as number 0). A later mark (`follow`) releases
   * them, or leaves out those it voids.
   */
  private readonly held = new Map<string, Array<{ readonly offset: number; readonly n: number; readonly record: ChangelogRecord }>>()
  /** Records in `held`. */
  private heldCount = 0
  /** Full (`HELD_MAX`), it stopped reading: `follow` goes on once it releases some. */
  private paused = false
  private waiter: (() => void) | undefined
  private closed = false
  private failure: Error | undefined
  /** A connect or consume call of the client has not called back yet. */
  private busy = false
  /** Settles once a closed reader's consumer has disconnected. */
  private disconnecting: Promise<void> | undefined
  private disconnectDone: (() => void) | undefined

  constructor(
    private readonly consumer: RestoreConsumer,
    private readonly topics: ChangelogTopics,
    private readonly partition: number,
    private readonly onError: (err: Error) => void,
    /** Per topic, the offset to read from (where the task's local state reaches); the beginning for the others. */
    private readonly from: Readonly<Record<string, number>> = {},
    /** At least once: records of commits it does not cover are left out. */
    private mark?: CommitMark,
    /** A standby's reader: it reads on past the end, and holds records its mark does not cover yet (`follow`). */
    private readonly following = false,
  ) {
    for (const [topic, offset] of Object.entries(from)) this.positions.set(topic, offset)
  }

  /** Connects the consumer and starts reading; `onConnectFailed` hears of a connect that failed. */
  open(onConnectFailed: (err: { message: string }) => void): void {
    this.busy = true
    this.consumer.connect({}, (err) => {
      this.busy = false
      if (this.closed) return this.disconnect()
      if (err) onConnectFailed(err)
      else this.start()
    })
  }

  private start(): void {
    const names = this.topics.topics()
    this.consumer.on('partition.eof', (eof) => {
      if (eof.partition !== this.partition || !names.includes(eof.topic)) return
      this.atEnd.add(eof.topic)
      this.endOffsets.set(eof.topic, eof.offset)
      this.wake()
    })
    for (const topic of names) {
      this.consumer.queryWatermarkOffsets(topic, this.partition, 10_000, (err, offsets) => {
        if (!err) this.ends.set(topic, offsets.highOffset)
      })
    }
    this.consumer.assign(names.map((topic) => ({ topic, partition: this.partition, offset: this.from[topic] ?? OFFSET_BEGINNING })))
    this.fetch()
  }

  remaining(): number | undefined {
    const buffered = this.buffer.length - this.next
    if (this.done()) return buffered
    let left = 0
    for (const [topic, end] of this.ends) left += Math.max(0, end - (this.positions.get(topic) ?? 0))
    // Not at the end yet: never 0, which would end the restore.
    return Math.max(1, buffered, left)
  }

  read(max: number): readonly ChangelogRecord[] {
    if (this.failure !== undefined) throw this.failure
    const batch = this.buffer.slice(this.next, this.next + max)
    this.next += batch.length
    if (this.next === this.buffer.length) {
      this.buffer = []
      this.next = 0
    }
    if (this.done() && this.buffer.length === 0) this.close()
    return batch
  }

  /**
   * Once read to the end: per topic, the offset every record before it was read up to (under
   * read_committed, the last stable offset; past any record read).
   */
  readTo(): Record<string, number> {
    const out: Record<string, number> = {}
    for (const topic of this.topics.topics()) out[topic] = this.held.get(topic)?.[0]?.offset ?? Math.max(this.endOffsets.get(topic) ?? 0, this.positions.get(topic) ?? 0)
    return out
  }

  /** Per topic, its end as last seen (at the start, or when the reader reached it); undefined while one is not known. */
  changelogEnds(): Record<string, number> | undefined {
    const out: Record<string, number> = {}
    for (const topic of this.topics.topics()) {
      const end = this.endOffsets.get(topic) ?? this.ends.get(topic)
      if (end === undefined) return undefined
      out[topic] = end
    }
    return out
  }

  /** Whether it holds records its mark does not cover yet (following, at least once). */
  holding(): boolean {
    return this.held.size > 0
  }

  /** Whether it holds `HELD_MAX` records: it reads no more until a newer mark (`follow`) releases some. */
  full(): boolean {
    return this.heldCount >= HELD_MAX
  }

  /**
   * A following reader's new mark (the group's, read again): the records held that it covers become
   * readable, those it voids (a commit a crash cut short, a fenced owner's) are left out, and the rest
   * stay held. Once its buffer is read, `readTo` gives where its records are applied up to.
   */
  follow(mark: CommitMark): void {
    this.mark = mark
    let released = false
    for (const [topic, list] of this.held) {
      let i = 0
      for (; i < list.length; i++) {
        const h = list[i] as { readonly n: number; readonly record: ChangelogRecord }
        if (covers(mark, h.n)) {
          this.buffer.push(h.record)
          if (h.n > this.highestApplied) this.highestApplied = h.n
          released = true
        } else if (h.n <= mark.n) this.skipped++
        else break
      }
      this.heldCount -= i
      if (i === list.length) this.held.delete(topic)
      else list.splice(0, i)
    }
    if (released) this.wake()
    if (this.paused && !this.full()) {
      this.paused = false
      this.fetch()
    }
  }

  /** Settles when there are records to read, it is read to the end, or it is `full`. */
  whenReadable(): Promise<void> {
    if (this.buffer.length > this.next || this.done() || this.full()) return Promise.resolve()
    return new Promise((resolve) => (this.waiter = resolve))
  }

  /** Stops reading and disconnects its consumer (the task was revoked before it restored, or it is read). */
  close(): void {
    if (this.closed) return
    this.closed = true
    this.disconnecting = new Promise((resolve) => (this.disconnectDone = resolve))
    if (!this.busy) this.disconnect()
  }

  /** Settles once the reader is closed and its consumer disconnected. */
  disconnected(): Promise<void> {
    return this.disconnecting ?? Promise.resolve()
  }

  private disconnect(): void {
    const done = this.disconnectDone
    this.disconnectDone = undefined
    if (done !== undefined) this.consumer.disconnect(() => done())
  }

  private done(): boolean {
    return !this.following && this.atEnd.size === this.topics.topics().length
  }

  private fetch(): void {
    if (this.closed || this.done()) return
    if (this.full()) {
      this.paused = true
      this.wake()
      return
    }
    this.busy = true
    this.consumer.consume(BATCH, (err, messages) => {
      this.busy = false
      if (this.closed) return this.disconnect()
      if (err && err.code !== TIMED_OUT) {
        this.failure = new Error(`restoring from ${this.topics.topics().join(', ')} partition ${this.partition}: ${err.message}`)
        this.onError(this.failure)
        return
      }
      for (const m of messages ?? []) {
        if (m.partition !== this.partition) continue
        this.positions.set(m.topic, m.offset + 1)
        if (this.mark !== undefined) {
          const n = commitOf(m)
          if (n !== undefined) {
            const epoch = epochOf(n)
            const highest = this.epochs.get(m.topic) ?? 0
            if (epoch > highest) this.epochs.set(m.topic, epoch)
            if (this.following && epoch >= highest && (n > this.mark.n || this.held.has(m.topic))) {
              this.hold(m, n)
              continue
            }
            if (!covers(this.mark, n)) {
              this.skipped++
              if (n > this.highestSkipped) this.highestSkipped = n
              continue
            }
            if (epoch < highest) {
              this.stale++
              continue
            }
            if (n > this.highestApplied) this.highestApplied = n
          }
        }
        // Following, a record without a number waits behind the records held before it in its topic.
        if (this.following && this.held.has(m.topic)) {
          this.hold(m, 0)
          continue
        }
        this.buffer.push(this.recordOf(m))
      }
      if ((messages?.length ?? 0) > 0) this.wake()
      setImmediate(() => this.fetch())
    })
  }

  private recordOf(m: ConsumedMessage): ChangelogRecord {
    const key = typeof m.key === 'string' ? Buffer.from(m.key) : (m.key ?? Buffer.alloc(0))
    return this.topics.fromMessage(m.topic, key, m.value)
  }

  private hold(m: ConsumedMessage, n: number): void {
    let list = this.held.get(m.topic)
    if (list === undefined) this.held.set(m.topic, (list = []))
    list.push({ offset: m.offset, n, record: this.recordOf(m) })
    this.heldCount++
  }

  private wake(): void {
    const w = this.waiter
    this.waiter = undefined
    w?.()
  }
}

/** The commit number a record carries, if any. */
function commitOf(m: ConsumedMessage): number | undefined {
  const headers = m.headers
  if (headers === undefined) return undefined
  for (const h of headers) {
    const v = h[COMMIT_HEADER]
    if (v !== undefined) return typeof v === 'string' ? undefined : readCommitHeader(v)
  }
  return undefined
}
