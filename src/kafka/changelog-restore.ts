import { PunctualError } from '../errors.js'
import type { StreamTask } from '../processor/internal/task.js'
import type { Topology } from '../processor/topology.js'
import { concatSources } from '../runtime/changelog-source.js'
import type { ChangelogSource } from '../runtime/changelog-source.js'
import type { ChangelogRecord } from '../runtime/changelog.js'
import type { Committer } from '../runtime/committer.js'
import type { TaskDefinition } from '../runtime/task-factory.js'
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
import { LocalCheckpoints } from './local-checkpoints.js'
import { SharedRestoreConsumer } from './restore-consumer.js'
import type { TaskChangelogPartitions } from './local-checkpoints.js'

/** A task's state as changelog records, with its changelog partitions. */
export type TaskSnapshot = TaskChangelogPartitions & { records: ChangelogRecord[] }

/** How long closing waits for the restore consumers to disconnect. */
const READER_DISCONNECT_WAIT_MS = 5_000

/**
 * Where tasks assigned here restore from (Kafka Streams' `StoreChangelogReader` with its state
 * directory's checkpoints): a task's local checkpoint, when it has a usable one, then its changelog
 * topics from the checkpoint's offsets (or their beginning), read through the instance's one restore
 * consumer (`SharedRestoreConsumer`). At least
 * once, a task's commit mark (from the group's offsets) leaves out records of commits it does not cover.
 * A task revoked or stopping keeps its state as a local checkpoint, so it comes back reading only the tail.
 */
export class ChangelogRestore {
  private readonly topics = new Map<number, ChangelogTopics>()
  private readonly readers = new Map<string, ChangelogReader>()
  /** Per restoring task: the records its local checkpoint gave (restore report). */
  private readonly restoredLocally = new Map<string, number>()
  /** At least once, per task assigned: the mark its restore and its commits follow. */
  private readonly marks = new Map<string, CommitMark>()
  readonly checkpoints: LocalCheckpoints
  /** The instance's one restore consumer, shared by the tasks restoring. */
  private readonly consumer: SharedRestoreConsumer

  constructor(
    topology: Topology,
    private readonly definitions: readonly TaskDefinition[],
    supplier: KafkaClientSupplier,
    private readonly config: ValidKafkaRuntimeConfig,
    private readonly logger: Logger,
    endOffset: (topic: string, partition: number) => Promise<number>,
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
    this.checkpoints = new LocalCheckpoints(config.stateDir, endOffset, logger)
  }

  /** The changelog topics of a sub-topology. */
  topicsOf(subtopology: number): ChangelogTopics {
    return this.topics.get(subtopology) as ChangelogTopics
  }

  /** At least once: the mark a task assigned here restores by (the group's, or the one it claimed). */
  setMark(taskId: string, mark: CommitMark): void {
    this.marks.set(taskId, mark)
  }

  /** Reads the local checkpoints of tasks about to restore. */
  async load(ids: readonly string[]): Promise<void> {
    await this.checkpoints.load(ids.map((id) => this.partitionsOf(id)))
  }

  /** Where a task assigned here restores from: its local checkpoint, if it has one, then its changelog topics. */
  source(taskId: string): ChangelogSource {
    const local = this.checkpoints.take(taskId)
    if (local === undefined) return this.reader(taskId)
    this.restoredLocally.set(taskId, local.count)
    return concatSources(local.source(), this.reader(taskId, local.offsets))
  }

  /** A task restored: reports how, and returns the mark its commits go on from (at least once), past what its restore left out. */
  restored(taskId: string, count: number, ms: number): CommitMark | undefined {
    const local = this.restoredLocally.get(taskId) ?? 0
    this.restoredLocally.delete(taskId)
    const reader = this.readers.get(taskId)
    const skipped = reader?.skipped ?? 0
    const stale = reader?.stale ?? 0
    const mark = this.marks.get(taskId)
    this.readers.delete(taskId)
    const next = mark !== undefined && reader !== undefined ? afterRestore(mark, reader.highestSkipped) : undefined
    const how = local > 0 ? `its local checkpoint (${local} records) and the changelog's tail (${count - local} records)` : `its changelog topics (${count} records)`
    const cut = (skipped > 0 ? `; ${skipped} records of incomplete commits left out` : '') + (stale > 0 ? `; ${stale} records a previous owner wrote after a newer one left out` : '')
    this.logger.info({ taskId, records: count, local, skipped, stale, ms: Math.round(ms) }, `task ${taskId} restored from ${how}${cut}`)
    return next
  }

  /** Stops the restores of these tasks (revoked, lost), and forgets their marks. */
  stop(ids: readonly string[]): void {
    for (const id of ids) {
      this.readers.get(id)?.close()
      this.readers.delete(id)
      this.marks.delete(id)
    }
  }

  /** A task's partition of each of its sub-topology's changelog topics. */
  partitionsOf(taskId: string): TaskChangelogPartitions {
    const def = this.definition(taskId)
    return { taskId, partition: def.partition, topics: this.topicsOf(def.subtopology.id).topics() }
  }

  /** These active tasks' state as changelog records, for their local checkpoints (taken before they close). */
  snapshot(tasks: readonly StreamTask[], committer: Committer): TaskSnapshot[] {
    return tasks.map((task) => ({ ...this.partitionsOf(task.taskId.toString()), records: committer.codecOf(task).checkpointRecords(task.checkpoint()) }))
  }

  /** Keeps tasks' state, just committed, in the state directory (reading their changelogs' ends now, while this instance still owns them). */
  async save(snapshots: readonly TaskSnapshot[]): Promise<void> {
    await this.checkpoints.save(snapshots as TaskSnapshot[])
  }

  /** Closes every reader, waiting a bounded time for their consumers to disconnect, and for checkpoint writes. */
  async close(): Promise<void> {
    const readers = [...this.readers.values()]
    this.readers.clear()
    for (const r of readers) r.close()
    await within(Promise.all(readers.map((r) => r.disconnected())), READER_DISCONNECT_WAIT_MS)
    await within(this.consumer.close(), READER_DISCONNECT_WAIT_MS)
    await this.checkpoints.written()
  }

  private reader(taskId: string, from?: Readonly<Record<string, number>>): ChangelogReader {
    const def = this.definition(taskId)
    const reader = new ChangelogReader(this.consumer.channel(), this.topicsOf(def.subtopology.id), def.partition, (err) => this.fail(err), from, this.marks.get(taskId))
    this.readers.set(taskId, reader)
    reader.open((err) => this.fail(new PunctualError('ILLEGAL_STATE', `task ${taskId}: connecting its restore consumer: ${err.message}`, { cause: err })))
    return reader
  }

  private definition(taskId: string): TaskDefinition {
    return this.definitions.find((d) => d.id === taskId) as TaskDefinition
  }
}
