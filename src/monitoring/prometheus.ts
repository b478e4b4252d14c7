import { Counter, Gauge, Registry } from 'prom-client'
import type { RuntimeMetrics, TaskMetricsSnapshot } from '../metrics.js'

/** One sample of a metric: its labels beside application_id, and its value (undefined: none now). */
type Sample = readonly [Readonly<Record<string, string | number>>, number | undefined]

/**
 * A runtime's metrics in Prometheus form, through `prom-client`: a registry whose metrics read one
 * snapshot per scrape (`scrape`). Nothing is recorded on the processing path; the tasks' own counters
 * and preallocated histogram are read when Prometheus asks. Names follow Kafka Streams' metrics where it
 * has one (process-total, punctuate-total, dropped-records-total, record-lateness-avg/max,
 * commit-latency-avg/max, suppression-buffer-count/size-current), in Prometheus' style.
 */
export class PrometheusMetrics {
  readonly registry = new Registry()
  private current: RuntimeMetrics | undefined

  constructor(private readonly source: () => RuntimeMetrics) {
    /**
     * A counter or gauge whose samples are read from the snapshot at each scrape: `samples` gives each
     * one's labels (beside application_id) and value; an undefined value is left out.
     */
    const define = (kind: 'counter' | 'gauge', name: string, help: string, labels: readonly string[], samples: (m: RuntimeMetrics) => Iterable<Sample>): void => {
      const snapshot = (): RuntimeMetrics => this.snapshot()
      const collect = (metric: Gauge | Counter): void => {
        metric.reset()
        const m = snapshot()
        for (const [sampleLabels, value] of samples(m)) {
          if (value === undefined) continue
          const all = { application_id: m.applicationId, ...sampleLabels }
          if (metric instanceof Counter) metric.inc(all, value)
          else metric.set(all, value)
        }
      }
      const options = { name, help, labelNames: ['application_id', ...labels], registers: [this.registry], collect: function (this: Gauge | Counter) { collect(this) } }
      if (kind === 'counter') new Counter(options)
      else new Gauge(options)
    }
    const perTask = (name: string, help: string, value: (t: TaskMetricsSnapshot) => number | undefined, kind: 'counter' | 'gauge' = 'gauge'): void =>
      define(kind, name, help, ['task_id'], (m) => m.tasks.map((t): Sample => [{ task_id: t.taskId }, value(t)]))

    define('gauge', 'punctual_runtime_state', 'The runtime state: 1 for the current one (CREATED, RUNNING, PENDING_SHUTDOWN, NOT_RUNNING, ERROR)', ['state'], (m) => [[{ state: m.state }, 1]])
    define('counter', 'punctual_processed_records_total', 'Records processed by every task this instance ran, those it no longer runs included', [], (m) => [[{}, m.processedRecords]])
    define('counter', 'punctual_emitted_records_total', 'Records written by the sinks of every task this instance ran, those it no longer runs included', [], (m) => [[{}, m.emittedRecords]])

    perTask('punctual_task_process_total', 'Records processed by the task (Kafka Streams: process-total)', (t) => t.processedRecords, 'counter')
    perTask('punctual_task_emitted_records_total', 'Records the task’s sinks wrote', (t) => t.emittedRecords, 'counter')
    perTask('punctual_task_process_latency_avg_ms', 'Time to process a record, on average (Kafka Streams: process-latency-avg)', (t) => t.processLatencyAvgMs)
    perTask('punctual_task_punctuate_latency_avg_ms', 'Time a punctuation took, on average (Kafka Streams: punctuate-latency-avg)', (t) => t.punctuateLatency.avgMs)
    perTask('punctual_task_punctuate_latency_max_ms', 'Time a punctuation took, at most (Kafka Streams: punctuate-latency-max)', (t) => t.punctuateLatency.maxMs)
    perTask('punctual_task_record_e2e_latency_avg_ms', 'Wall clock at processing minus record timestamp, on average (Kafka Streams: record-e2e-latency-avg)', (t) => t.e2eLatency?.avgMs)
    perTask('punctual_task_record_e2e_latency_min_ms', 'Wall clock at processing minus record timestamp, at least (Kafka Streams: record-e2e-latency-min)', (t) => t.e2eLatency?.minMs)
    perTask('punctual_task_record_e2e_latency_max_ms', 'Wall clock at processing minus record timestamp, at most (Kafka Streams: record-e2e-latency-max)', (t) => t.e2eLatency?.maxMs)
    perTask('punctual_task_ttl_expired_total', 'Keyed-state entries removed by TTL cleanup', (t) => t.ttlExpired, 'counter')
    perTask('punctual_task_next_event_time_timer_ms', 'The stream time at which the task’s earliest event-time timer (user or TTL) is due', (t) => t.nextTimer.event)
    perTask('punctual_task_next_processing_time_timer_ms', 'When the task’s earliest processing-time timer (user or TTL) is due (ms since the epoch)', (t) => t.nextTimer.processing)
    perTask('punctual_task_punctuate_total', 'Punctuations the task ran (Kafka Streams: punctuate-total)', (t) => t.punctuations, 'counter')
    perTask('punctual_task_stream_time_ms', 'The task’s stream time: the largest timestamp it processed (ms since the epoch)', (t) => t.streamTime)
    perTask('punctual_task_stream_time_lag_ms', 'The wall clock minus the task’s stream time', (t) => t.streamTimeLagMs)
    perTask('punctual_task_record_lateness_avg_ms', 'How far behind stream time records arrived, on average (Kafka Streams: record-lateness-avg)', (t) => t.recordLateness.avgMs)
    perTask('punctual_task_record_lateness_max_ms', 'How far behind stream time records arrived, at most (Kafka Streams: record-lateness-max)', (t) => t.recordLateness.maxMs)
    perTask('punctual_task_next_wall_clock_punctuation_ms', 'When the task’s next wall-clock punctuation is due (ms since the epoch)', (t) => t.nextPunctuation.wallClock)
    perTask('punctual_task_next_stream_time_punctuation_ms', 'The stream time at which the task’s next stream-time punctuation is due', (t) => t.nextPunctuation.streamTime)

    define('counter', 'punctual_task_dropped_records_total', 'Records the task dropped, by reason (Kafka Streams: dropped-records-total)', ['task_id', 'reason'], (m) =>
      m.tasks.flatMap((t) => Object.entries(t.droppedRecords).map(([reason, count]): Sample => [{ task_id: t.taskId, reason }, count])),
    )
    define('counter', 'punctual_processor_process_total', 'Records a processor node (source, processor or sink) of the task was given (Kafka Streams: processor-node process-total)', ['task_id', 'processor'], (m) =>
      m.tasks.flatMap((t) => t.processors.map((p): Sample => [{ task_id: t.taskId, processor: p.name }, p.records])),
    )
    define('gauge', 'punctual_task_pending_timers', 'Timers pending in the task, by kind (user, ttl) and time domain (event, processing)', ['task_id', 'kind', 'domain'], (m) =>
      m.tasks.flatMap((t) =>
        (['user', 'ttl'] as const).flatMap((kind) => (['event', 'processing'] as const).map((domain): Sample => [{ task_id: t.taskId, kind, domain }, t.pendingTimers[kind][domain]])),
      ),
    )
    for (const [name, help, field] of [
      ['punctual_suppression_buffer_records', 'Records a suppression buffers (Kafka Streams: suppression-buffer-count-current)', 'records'],
      ['punctual_suppression_buffer_bytes', 'Bytes a suppression buffers (Kafka Streams: suppression-buffer-size-current)', 'bytes'],
      ['punctual_suppression_buffer_spilled_records', 'Of the records a suppression buffers, those spilled to disk', 'spilled'],
    ] as const) {
      define('gauge', name, help, ['task_id', 'store'], (m) => m.tasks.flatMap((t) => t.suppressionBuffers.map((b): Sample => [{ task_id: t.taskId, store: b.store }, b[field]])))
    }
    for (const [name, help, field] of [
      ['punctual_task_input_position', 'The offset of the next record the task processes from an input partition', 'position'],
      ['punctual_task_input_end_offset', 'An input partition’s end as last known (on Kafka, its high watermark)', 'endOffset'],
      ['punctual_task_input_lag', 'Records of an input partition not processed yet (Kafka Streams: records-lag)', 'lag'],
    ] as const) {
      define('gauge', name, help, ['task_id', 'topic', 'partition'], (m) =>
        m.tasks.flatMap((t) => t.inputs.map((i): Sample => [{ task_id: t.taskId, topic: i.topic, partition: i.partition }, i[field]])),
      )
    }
    this.registry.registerMetric(new PunctuationLatenessHistogram(() => this.snapshot()) as unknown as Gauge)
    define('gauge', 'punctual_restore_remaining_records', 'Changelog records or state directory entries a restoring task still has to read', ['task_id'], (m) =>
      m.restoring.map((r): Sample => [{ task_id: r.taskId }, r.remaining]),
    )
    define('gauge', 'punctual_restore_restored_records', 'Changelog records or state directory entries a restoring task has read so far (its rate is the restore rate)', ['task_id', 'from'], (m) =>
      m.restoring.map((r): Sample => [{ task_id: r.taskId, from: r.from }, r.restored]),
    )
    define('counter', 'punctual_commit_total', 'Commits made', [], (m) => [[{}, m.commits?.commits ?? 0]])
    for (const [name, help, field] of [
      ['punctual_commit_latency_avg_ms', 'How long a commit takes until durable, on average (Kafka Streams: commit-latency-avg)', 'meanMs'],
      ['punctual_commit_latency_max_ms', 'How long a commit took until durable, at most (Kafka Streams: commit-latency-max)', 'maxMs'],
      ['punctual_commit_blocking_max_ms', 'The longest a commit held the event loop at once', 'blockingMaxMs'],
    ] as const) {
      define('gauge', name, help, [], (m) => [[{}, m.commits?.[field]]])
    }
  }

  /** The metrics in Prometheus' text format, from one snapshot of the runtime. */
  async scrape(): Promise<string> {
    this.current = this.source()
    try {
      return await this.registry.metrics()
    } finally {
      this.current = undefined
    }
  }

  get contentType(): string {
    return this.registry.contentType
  }

  private snapshot(): RuntimeMetrics {
    return this.current ?? this.source()
  }
}

/**
 * The tasks' wall-clock punctuation lateness as a Prometheus histogram: prom-client's Histogram takes
 * observations, and the tasks keep their buckets themselves (preallocated, filled on the task loop), so
 * this one reports those buckets as they are.
 */
class PunctuationLatenessHistogram {
  readonly name = 'punctual_task_punctuation_lateness_ms'
  readonly help = 'How long after its due time a wall-clock punctuation fired'
  readonly type = 'histogram'
  readonly aggregator = 'sum'

  constructor(private readonly source: () => RuntimeMetrics) {}

  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Array<{ metricName: string; labels: Record<string, string | number>; value: number }> }> {
    const snapshot = this.source()
    const values: Array<{ metricName: string; labels: Record<string, string | number>; value: number }> = []
    for (const task of snapshot.tasks) {
      const labels = { application_id: snapshot.applicationId, task_id: task.taskId }
      const h = task.punctuationLateness
      for (const b of h.buckets) values.push({ metricName: `${this.name}_bucket`, labels: { ...labels, le: b.le }, value: b.count })
      values.push({ metricName: `${this.name}_bucket`, labels: { ...labels, le: '+Inf' }, value: h.count })
      values.push({ metricName: `${this.name}_sum`, labels, value: h.sum })
      values.push({ metricName: `${this.name}_count`, labels, value: h.count })
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values }
  }
}
