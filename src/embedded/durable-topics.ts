import { PunctualError } from '../errors.js'
import type { DiskRange, DurableLog, LogCommitWriter } from './log/durable-log.js'
import type { PartitionLog } from './log/partition-log.js'
import type { TopicRegistry } from './log/topics.js'

/**
 * Keeps the embedded runtime's topics on disk in a durable run. Each partition's disk holds one range of
 * offsets [start, end). A commit (inside its transaction) appends the records written since the previous
 * one and deletes those every task reading the topic has committed past; records that tasks consumed
 * before they were ever committed are not written at all, so a pipeline that keeps up writes little but
 * its outputs. Topics no task reads (the application's outputs) keep every record.
 */
export class DurableTopics {
  private readonly ranges = new Map<PartitionLog, DiskRange>()

  constructor(
    private readonly log: DurableLog,
    private readonly topics: TopicRegistry,
    /** Per topic, how long records are kept after their commit (by append time); absent: forever. */
    private readonly retentionMs: ReadonlyMap<string, number> = new Map(),
  ) {}

  /**
   * Puts every topic on disk back in the registry. `positions` are the tasks' committed input positions
   * (`topic:partition`): records from there on are loaded into memory, older ones are read from disk.
   */
  restore(positions: ReadonlyMap<string, number>): void {
    for (const [topic, parts] of this.log.topics()) {
      const logs = this.topics.has(topic) ? this.topics.partitions(topic) : this.topics.create(topic, parts.length)
      if (logs.length !== parts.length) {
        throw new PunctualError('STATE_DIR', `topic "${topic}" has ${parts.length} partitions in the state directory but ${logs.length} in this application; refusing to start rather than reset it`)
      }
      parts.forEach((range, p) => {
        const log = logs[p] as PartitionLog
        const committed = positions.get(`${topic}:${p}`) ?? range.end
        const loadFrom = Math.min(Math.max(committed, range.start), range.end)
        const loaded = this.log.load(topic, p, loadFrom, range.end)
        if (loaded.length !== range.end - loadFrom) {
          throw new PunctualError('STATE_DIR', `topic "${topic}" partition ${p}: ${range.end - loadFrom - loaded.length} records of offsets [${loadFrom}, ${range.end}) are missing from the state directory; refusing to start`)
        }
        log.restore(range.start, range.end, loadFrom, loaded, this.log)
        this.ranges.set(log, { start: range.start, end: range.end })
      })
    }
  }

  /**
   * Writes what changed since the last commit, through the commit's `writer`. `readTo` is, per
   * partition read by a task, the lowest committed position of its readers (tasks and subscribers).
   */
  write(writer: LogCommitWriter, readTo: ReadonlyMap<PartitionLog, number>, now: number): void {
    for (const topic of this.topics.names()) {
      const logs = this.topics.partitions(topic)
      const retention = this.retentionMs.get(topic)
      let changed = false
      for (const log of logs) {
        let range = this.ranges.get(log)
        if (range === undefined) {
          range = { start: log.startOffset(), end: log.startOffset() }
          this.ranges.set(log, range)
          changed = true
        }
        const end = log.endOffset()
        const read = readTo.get(log)
        // Records before keepFrom are consumed by every task reading the topic: no need to keep them.
        const keepFrom = read === undefined ? range.start : Math.max(range.start, Math.min(read, end))
        const deleteTo = Math.min(keepFrom, range.end)
        if (deleteTo > range.start) this.log.removeBefore(writer, topic, log.partition, deleteTo)
        const writeFrom = Math.max(range.end, keepFrom)
        if (writeFrom < end) this.log.append(writer, topic, log.partition, log, writeFrom, end, now)
        let start = keepFrom
        // Retention: chunks committed longer ago go, read or not (Kafka deletes unread records too).
        // The chunks this commit appends are not visible to reads before it is durable, and are newer
        // than any retention: deleting stops at them.
        if (retention !== undefined && start < end) start = Math.max(start, this.log.removeAppendedBy(writer, topic, log.partition, now - retention, Math.max(writeFrom, start)))
        if (start !== range.start || end !== range.end) changed = true
        range.start = start
        range.end = end
      }
      if (changed) this.log.putRanges(writer, topic, logs.map((l) => ({ ...(this.ranges.get(l) as DiskRange) })))
    }
  }

  /** After the transaction committed: readers may see the new records, memory may release old ones. */
  committed(): void {
    for (const [log, range] of this.ranges) {
      log.committedEnd = range.end
      log.onDisk(range.start, this.log)
    }
  }

  /** The offset up to which a partition is on disk (memory must keep what is not). */
  diskEnd(log: PartitionLog): number {
    return this.ranges.get(log)?.end ?? 0
  }

  /** End offsets of a topic's partitions as of the last durable commit. */
  committedEnds(topic: string): number[] {
    return this.topics.partitions(topic).map((l) => l.committedEnd)
  }
}
