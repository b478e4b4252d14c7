import { PunctualError } from '../errors.js'
import type { Topology } from '../processor/topology.js'
import { concatSources } from '../runtime/changelog-source.js'
import type { ChangelogSource } from '../runtime/changelog-source.js'
import type { ChangelogRecord } from '../runtime/changelog.js'
import { readsOnDisk } from '../runtime/task-factory.js'
import type { TaskDefinition } from '../runtime/task-factory.js'
import type { RecordWriter } from '../state/checkpoint-store.js'
import type { Logger } from '../util/logger.js'
import { within } from './client-calls.js'
import { restoreConsumerSettings } from './client-settings.js'
import { watchReports } from './client-reports.js'
import type { KafkaClientSupplier } from './client-supplier.js'
import { ChangelogReader } from './changelog-reader.js'
import { ChangelogTopics } from './changelog-topics.js'
import { afterRestore } from './commit-numbers.js'
import type { CommitMark } from './commit-numbers.js'
import type { ValidKafkaRuntimeConfig } from './config.js'
import type { LocalTaskRecords, TaskChangelogPartitions, Watermarks } from './local-task-records.js'
import { SharedRestoreConsumer } from './restore-consumer.js'

/** How long closing waits for the restore consumers to disconnect. */
const READER_DISCONNECT_WAIT_MS = 5_000

/** A task restoring: the reader of its changelog's tail, and what writes the tail into its local records. */
interface Restoring {
  readonly reader: ChangelogReader
  readonly writer: RecordWriter
  /** Whether it started from local records. */
  readonly local: boolean
  /** Changelog records read. */
  tail: number
}

/**
 * Where tasks assigned here restore from (Kafka Streams' `StoreChangelogReader` with its state
 * directory's checkpoints): a task's local records in the state directory (`LocalTaskRecords`), when they
 * are usable, then its changelog topics from their offsets (or from the beginning), read through the
 * instance's one restore consumer (`SharedRestoreConsumer`). What the changelog gives is also written to
 * the local records as it is read, so that they reach where the restore ended (the commits after it go
 * on from there: `LocalCommitBackend`). At least once, a task's commit mark (from the group's offsets)
 * leaves out records of commits it does not cover.
 */
export class ChangelogRestore {
  private readonly topics = new Map<number, ChangelogTopics>()
  private readonly restoring = new Map<string, Restoring>()
  /** At least once, per task assigned: the mark its restore and its commits follow. */
  private readonly marks = new Map<string, CommitMark>()
  /** The instance's one restore consumer, shared by the tasks restoring. */
  private readonly consumer: SharedRestoreConsumer

  constructor(
    topology: Topology,
    private readonly definitions: readonly TaskDefinition[],
    supplier: KafkaClientSupplier,
    config: ValidKafkaRuntimeConfig,
    private readonly logger: Logger,
    private readonly local: LocalTaskRecords,
    /** A partition's first and end offsets, asked of the broker. */
    private readonly watermarks: (topic: string, partition: number) => Promise<Watermarks>,
    /** A task restored: its local records reach these offsets of its changelog topics. */
    private readonly readTo: (taskId: string, offsets: Readonly<Record<string, number>>) => void,
    private readonly fail: (err: unknown) => void,
  ) {
    this.consumer = new SharedRestoreConsumer(() => {
      const consumer = supplier.getRestoreConsumer(restoreConsumerSettings(config))
      consumer.setDefaultConsumeTimeout(50)
      consumer.setDefaultIsTimeoutOnlyForFirstMessage(true)
      // Its reports on the logger; its failures reach the runtime through the readers.
      watchReports(consumer, 'restore consumer', logger)
      return consumer
    })
    for (const sub of topology.subtopologies()) this.topics.set(sub.id, new ChangelogTopics(config.applicationId, sub.id, sub.stores.map((s) => s.name)))
  }

  /** The changelog topics of a sub-topology. */
  topicsOf(subtopology: number): ChangelogTopics {
    return this.topics.get(subtopology) as ChangelogTopics
  }

  /** The changelog topics of a task's sub-topology. */
  topicsOfTask(taskId: string): ChangelogTopics {
    return this.topicsOf(this.definition(taskId).subtopology.id)
  }

  /** At least once: the mark a task assigned here restores by (the group's, or the one it claimed). */
  setMark(taskId: string, mark: CommitMark): void {
    this.marks.set(taskId, mark)
  }

  /** Decides which tasks about to restore have usable local records (removing the others'). */
  async load(ids: readonly string[]): Promise<void> {
    await this.local.load(
      ids.map((id) => this.partitionsOf(id)),
      this.watermarks,
      (id) => this.marks.get(id),
    )
  }

  /** Where a task assigned here restores from: its local records, if usable, then its changelog topics. */
  source(taskId: string): ChangelogSource {
    const start = this.local.take(taskId, readsOnDisk(this.definition(taskId)))
    const writer = this.local.tailWriter(taskId)
    const reader = this.reader(taskId, start?.offsets)
    const restoring: Restoring = { reader, writer, local: start !== undefined, tail: 0 }
    this.restoring.set(taskId, restoring)
    const tail = writingTo(
      reader,
      (record) => {
        restoring.tail++
        writer.write(record)
      },
      () => writer.written(),
      (err) => this.fail(err),
    )
    return start === undefined ? tail : concatSources(start.source, tail)
  }

  /** A task restored: reports how, and returns the mark its commits go on from (at least once), past what its restore left out. */
  restored(taskId: string, count: number, ms: number): CommitMark | undefined {
    const restoring = this.restoring.get(taskId)
    this.restoring.delete(taskId)
    const mark = this.marks.get(taskId)
    if (restoring === undefined) return undefined
    const { reader, writer } = restoring
    const local = restoring.local ? count - restoring.tail : 0
    writer.written().catch((err: unknown) => this.fail(err))
    this.readTo(taskId, reader.readTo())
    const next = mark !== undefined ? afterRestore(mark, reader.highestSkipped) : undefined
    const how = restoring.local ? `its local state (${local} records) and the changelog's tail (${restoring.tail} records)` : `its changelog topics (${count} records)`
    const cut = (reader.skipped > 0 ? `; ${reader.skipped} records of incomplete commits left out` : '') + (reader.stale > 0 ? `; ${reader.stale} records a previous owner wrote after a newer one left out` : '')
    this.logger.info({ taskId, records: count, local, skipped: reader.skipped, stale: reader.stale, ms: Math.round(ms) }, `task ${taskId} restored from ${how}${cut}`)
    return next
  }

  /** Stops the restores of these tasks (revoked, lost), and forgets their marks. */
  stop(ids: readonly string[]): void {
    for (const id of ids) {
      this.restoring.get(id)?.reader.close()
      this.restoring.delete(id)
      this.marks.delete(id)
    }
  }

  /** A task's partition of each of its sub-topology's changelog topics. */
  partitionsOf(taskId: string): TaskChangelogPartitions {
    const def = this.definition(taskId)
    return { taskId, partition: def.partition, topics: this.topicsOf(def.subtopology.id).topics() }
  }

  /** Closes every reader, waiting a bounded time for their consumers to disconnect. */
  async close(): Promise<void> {
    const readers = [...this.restoring.values()].map((r) => r.reader)
    this.restoring.clear()
    for (const r of readers) r.close()
    await within(Promise.all(readers.map((r) => r.disconnected())), READER_DISCONNECT_WAIT_MS)
    await within(this.consumer.close(), READER_DISCONNECT_WAIT_MS)
  }

  private reader(taskId: string, from?: Readonly<Record<string, number>>): ChangelogReader {
    const def = this.definition(taskId)
    const reader = new ChangelogReader(this.consumer.channel(), this.topicsOf(def.subtopology.id), def.partition, (err) => this.fail(err), from, this.marks.get(taskId))
    reader.open((err) => this.fail(new PunctualError('ILLEGAL_STATE', `task ${taskId}: connecting its restore consumer: ${err.message}`, { cause: err })))
    return reader
  }

  private definition(taskId: string): TaskDefinition {
    return this.definitions.find((d) => d.id === taskId) as TaskDefinition
  }
}

/**
 * `source` as it is, each record it gives also handed to `each` (in order), and read to its end only
 * once `written` settled: the task is built then, and its persistent stores read what was written.
 */
function writingTo(source: ChangelogReader, each: (record: ChangelogRecord) => void, written: () => Promise<void>, fail: (err: unknown) => void): ChangelogSource {
  let flushed = false
  let flushing: Promise<void> | undefined
  const flush = (): Promise<void> =>
    (flushing ??= written().then(
      () => {
        flushed = true
      },
      (err: unknown) => fail(err),
    ))
  return {
    remaining: () => {
      const left = source.remaining()
      if (left !== 0 || flushed) return left
      void flush()
      return 1
    },
    read(max) {
      const batch = source.read(max)
      for (const record of batch) each(record)
      return batch
    },
    whenReadable: () => (source.remaining() === 0 ? flush() : source.whenReadable()),
  }
}
