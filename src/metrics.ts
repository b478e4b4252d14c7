import type { DropReason } from './processor/errors.js'
import type { RuntimeState } from './runtime/runtime.js'

/**
 * Upper bounds (ms) of the buckets of wall-clock punctuation lateness; a last bucket takes the rest.
 * From "on time" (the one timer fires within a millisecond) to "held up by a long commit or a stall".
 */
export const PUNCTUATION_LATENESS_BUCKETS_MS: readonly number[] = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000]

/** A histogram over fixed buckets, preallocated: observing a value allocates nothing. */
export class BucketHistogram {
  /** Per bucket (the bounds' order, then one for values above the last bound): how many values fell in it. */
  readonly counts: Float64Array
  sum = 0
  count = 0

  constructor(readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length + 1)
  }

  observe(value: number): void {
    let i = 0
    while (i < this.bounds.length && value > (this.bounds[i] as number)) i++
    this.counts[i] = (this.counts[i] as number) + 1
    this.sum += value
    this.count++
  }

  snapshot(): HistogramSnapshot {
    let cumulative = 0
    const buckets = this.bounds.map((le, i) => ({ le, count: (cumulative += this.counts[i] as number) }))
    return { buckets, sum: this.sum, count: this.count }
  }
}

/** A histogram's buckets as Prometheus has them: cumulative counts of values up to `le`. */
export interface HistogramSnapshot {
  /** One per bound, in increasing order: `count` values were at most `le` ms (the +Inf bucket is `count` below). */
  readonly buckets: ReadonlyArray<{ readonly le: number; readonly count: number }>
  /** The sum of all values observed, in ms. */
  readonly sum: number
  /** All values, those above the last bound included. */
  readonly count: number
}

/** Counters of one task. Plain fields: incrementing them costs nothing on the per-record path. */
export class TaskMetrics {
  processedRecords = 0
  /** Records the task's sinks wrote. */
  emittedRecords = 0
  punctuations = 0
  readonly droppedRecords: Record<DropReason, number> = {
    'invalid-timestamp': 0,
    deserialization: 0,
    processing: 0,
    punctuation: 0,
    timer: 0,
    late: 0,
  }
  /**
   * How far behind stream time records arrived (0 for a record that is not behind), summed, and the
   * largest: Kafka Streams' record-lateness (its average is the sum over the records processed).
   */
  recordLatenessSumMs = 0
  recordLatenessMaxMs = 0
  /** How late wall-clock punctuations fired after their due time (catch-up calls at start not included). */
  readonly punctuationLateness = new BucketHistogram(PUNCTUATION_LATENESS_BUCKETS_MS)
  /**
   * Time spent processing records, summed over the task's processing slices: one clock read per slice,
   * not per record, so the average per record is what is reported (Kafka Streams' process-latency-avg).
   */
  processTimeMs = 0
  /** Time spent in punctuations (stream-time and wall-clock), summed, and the longest. */
  punctuateTimeMs = 0
  punctuateMaxMs = 0
  /**
   * End-to-end latency (the wall clock when a record is processed minus its timestamp; the clock is read
   * once per processing slice): summed, smallest and largest, as Kafka Streams' record-e2e-latency.
   */
  e2eLatencySumMs = 0
  e2eLatencyMinMs = Infinity
  e2eLatencyMaxMs = -Infinity
  /** Keyed-state entries removed by TTL cleanup. */
  ttlExpired = 0
}

/** Pending timers of a task by kind (user timers, TTL cleanup timers) and time domain. */
export interface PendingTimers {
  /** Timers keyed processors registered, per domain. */
  readonly user: { readonly event: number; readonly processing: number }
  /** Timers that clean up keyed state with a TTL, per domain. */
  readonly ttl: { readonly event: number; readonly processing: number }
}

/**
 * The capability of a store that buffers records (a suppression): what it holds now. Read only when
 * metrics are asked for.
 */
export const BUFFER_METRICS = Symbol('punctual.bufferMetrics')
export interface BufferingStore {
  [BUFFER_METRICS](): { readonly records: number; readonly bytes: number; readonly spilled: number }
}

export function bufferingStore(store: unknown): BufferingStore | undefined {
  return typeof store === 'object' && store !== null && BUFFER_METRICS in store ? (store as BufferingStore) : undefined
}

/** What a suppression holds. */
export interface SuppressionBufferMetrics {
  /** The suppression's store: `<name>-store` for a named suppression, else `KTABLE-SUPPRESS-STATE-STORE-<n>`. */
  readonly store: string
  /** Keys buffered (Kafka Streams' suppression-buffer-count). */
  readonly records: number
  /** Sum of the entries' sizes (key and value bytes as serialized, and a fixed overhead). */
  readonly bytes: number
  /** Of `records`, those spilled to disk (`spillToDiskWhenFull`); 0 for a buffer that does not spill. */
  readonly spilled: number
}

/** One input partition of a task: where the task stands and how far behind the partition's end. */
export interface InputPartitionMetrics {
  /** The topic, as the topology names it. */
  readonly topic: string
  /** The partition (the task's partition of that topic). */
  readonly partition: number
  /** The offset of the next record the task will process. */
  readonly position: number
  /**
   * The partition's end as last known: the embedded log's end, or on Kafka the high watermark of the
   * last fetch (librdkafka's cached value; no request per snapshot).
   */
  readonly endOffset: number | undefined
  /** `endOffset - position`: records written and not yet processed (Kafka Streams' records-lag). */
  readonly lag: number | undefined
}

/** One task, as it stands. */
export interface TaskMetricsSnapshot {
  /** The task's id, `<subtopology>_<partition>`. */
  readonly taskId: string
  /** Records the task took from its inputs, those that failed and were skipped included (Kafka Streams' process-total). */
  readonly processedRecords: number
  /** Records written by the task's sinks. */
  readonly emittedRecords: number
  /** Punctuation calls, stream-time and wall-clock (Kafka Streams' punctuate-total). */
  readonly punctuations: number
  /** Records dropped, by reason (Kafka Streams' dropped-records-total): skipped bad input, failures an error handler let pass, late records. */
  readonly droppedRecords: Readonly<Record<DropReason, number>>
  /** Average time to process a record, sinks and event-time timers it fires included (0 before any). */
  readonly processLatencyAvgMs: number
  /** Time punctuations took (stream-time and wall-clock; 0 before any). */
  readonly punctuateLatency: { readonly avgMs: number; readonly maxMs: number }
  /** Wall clock at processing minus record timestamp (undefined before the first record). */
  readonly e2eLatency: { readonly avgMs: number; readonly minMs: number; readonly maxMs: number } | undefined
  /** Keyed-state entries removed by TTL cleanup. */
  readonly ttlExpired: number
  /** The task's input partitions: position, end and lag. */
  readonly inputs: readonly InputPartitionMetrics[]
  /** Per processor node (sources, processors, sinks), in topology order: the records it was given. */
  readonly processors: ReadonlyArray<{ readonly name: string; readonly records: number }>
  /** The largest timestamp the task has processed; undefined before its first record. */
  readonly streamTime: number | undefined
  /** The wall clock minus stream time (how far processing is behind now), when there is a stream time. */
  readonly streamTimeLagMs: number | undefined
  /** How far behind stream time records arrived, 0 for one that was not (Kafka Streams' record-lateness-avg and -max). */
  readonly recordLateness: { readonly avgMs: number; readonly maxMs: number }
  /** How late wall-clock punctuations fired after their due time (catch-up calls at start not included), in the buckets of {@link PUNCTUATION_LATENESS_BUCKETS_MS}. */
  readonly punctuationLateness: HistogramSnapshot
  /** The keyed processors' pending timers, by kind and domain. */
  readonly pendingTimers: PendingTimers
  /** Due times of the earliest pending timers (user or TTL), by domain (undefined: none). */
  readonly nextTimer: { readonly event: number | undefined; readonly processing: number | undefined }
  /** Due times of the next stream-time and wall-clock punctuations (undefined: none scheduled). */
  readonly nextPunctuation: { readonly streamTime: number | undefined; readonly wallClock: number | undefined }
  /** What each of the task's suppressions holds. */
  readonly suppressionBuffers: readonly SuppressionBufferMetrics[]
}

/** How far a task's restore has come. */
export interface RestoreProgress {
  /** The task's id, `<subtopology>_<partition>`. */
  readonly taskId: string
  /** Changelog records (the Kafka runtime, or a task moved within the embedded one), or the state directory. */
  readonly from: 'changelog' | 'stateDirectory'
  /** Changelog records, or state directory entries (keyed state keys, timers, store entries), read. */
  readonly restored: number
  /** Still to read, when known. */
  readonly remaining: number | undefined
}

/** A standby task this instance keeps (the Kafka runtime in a streams group): its local state follows the task's changelog. */
export interface StandbyProgress {
  /** The task's id, `<subtopology>_<partition>`. */
  readonly taskId: string
  /** Changelog records applied to its local state since it started here. */
  readonly applied: number
}

/**
 * A task's lifecycle on a runtime: assigned, restoring (with progress, at most once a second per task,
 * and once when it starts), running once restored (or at once with nothing to restore), then revoked
 * (committed and closed) or lost (closed without a commit).
 */
export type TaskEvent =
  | { readonly type: 'assigned'; readonly taskId: string }
  | { readonly type: 'restoring'; readonly taskId: string; readonly from: RestoreProgress['from']; readonly restored: number; readonly remaining: number | undefined }
  | { readonly type: 'running'; readonly taskId: string; readonly restored: number }
  | { readonly type: 'revoked' | 'lost'; readonly taskId: string }

/** How many commits ran and how long they took. */
export interface CommitStats {
  /** Commits that completed. */
  readonly commits: number
  /** From the start of a commit until it is durable. */
  readonly meanMs: number
  /** The longest commit, from its start until it was durable. */
  readonly maxMs: number
  /** The part of a commit that runs on the event loop (collecting changes, encoding, queuing writes), in all. */
  readonly blockingMeanMs: number
  /** The longest the event loop was held at once by a commit (the call that takes it, or one of its later slices). */
  readonly blockingMaxMs: number
}

/** A runtime's metrics: the counters summed over every task it ran, and each active task as it stands. */
export interface RuntimeMetrics extends MetricsSnapshot {
  /** The application id of the runtime's config. */
  readonly applicationId: string
  /** The runtime's state (CREATED, RUNNING, ...). */
  readonly state: RuntimeState
  /** The runtime's clock when the snapshot was taken. */
  readonly wallClockTime: number
  /** The active tasks, in the order they process. */
  readonly tasks: readonly TaskMetricsSnapshot[]
  /** Tasks restoring, and how far they have come. */
  readonly restoring: readonly RestoreProgress[]
  /** Commits so far (none before start). */
  readonly commits: CommitStats | undefined
}

/** A snapshot of counters summed over tasks. */
export interface MetricsSnapshot {
  /** Records taken from the inputs, those that failed and were skipped included (Kafka Streams' process-total). */
  readonly processedRecords: number
  /** Records written by sinks. */
  readonly emittedRecords: number
  /** Punctuation calls, stream-time and wall-clock (Kafka Streams' punctuate-total). */
  readonly punctuations: number
  /** Records dropped, by reason (Kafka Streams' dropped-records-total): skipped bad input, failures an error handler let pass, late records. */
  readonly droppedRecords: Readonly<Record<DropReason, number>>
}

export function sumMetrics(all: Iterable<TaskMetrics>): MetricsSnapshot {
  // Plain sums: a snapshot may be asked for often (a progress loop), and a TaskMetrics carries histograms.
  let processedRecords = 0
  let emittedRecords = 0
  let punctuations = 0
  let droppedRecords: Record<DropReason, number> | undefined
  for (const m of all) {
    processedRecords += m.processedRecords
    emittedRecords += m.emittedRecords
    punctuations += m.punctuations
    if (droppedRecords === undefined) droppedRecords = { ...m.droppedRecords }
    else for (const k of Object.keys(m.droppedRecords) as DropReason[]) droppedRecords[k] += m.droppedRecords[k]
  }
  return { processedRecords, emittedRecords, punctuations, droppedRecords: droppedRecords ?? { ...new TaskMetrics().droppedRecords } }
}
