import { Counter, Gauge, Registry } from 'prom-client'
import type { RuntimeMetrics, TaskMetricsSnapshot } from '../metrics.js'

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
    const current = (): RuntimeMetrics => this.snapshot()
    const app = (): Record<string, string> => ({ application_id: current().applicationId })
    const perTask = (name: string, help: string, value: (t: TaskMetricsSnapshot) => number | undefined, kind: 'counter' | 'gauge' = 'gauge'): void => {
      const labelNames = ['application_id', 'task_id']
      const collect = (metric: Gauge | Counter): void => {
        metric.reset()
        for (const task of current().tasks) {
          const v = value(task)
          if (v === undefined) continue
          const labels = { ...app(), task_id: task.taskId }
          if (metric instanceof Counter) metric.inc(labels, v)
          else metric.set(labels, v)
        }
      }
      if (kind === 'counter') new Counter({ name, help, labelNames, registers: [this.registry], collect: function () { collect(this) } })
      else new Gauge({ name, help, labelNames, registers: [this.registry], collect: function () { collect(this) } })
    }

    new Gauge({
      name: 'punctual_runtime_state',
      help: 'The runtime state: 1 for the current one (CREATED, RUNNING, PENDING_SHUTDOWN, NOT_RUNNING, ERROR)',
      labelNames: ['application_id', 'state'],
      registers: [this.registry],
      collect: function () {
        this.reset()
        this.set({ ...app(), state: current().state }, 1)
      },
    })
    new Counter({
      name: 'punctual_processed_records_total',
      help: 'Records processed by every task this instance ran, those it no longer runs included',
      labelNames: ['application_id'],
      registers: [this.registry],
      collect: function () {
        this.reset()
        this.inc(app(), current().processedRecords)
      },
    })
    new Counter({
      name: 'punctual_emitted_records_total',
      help: 'Records written by the sinks of every task this instance ran, those it no longer runs included',
      labelNames: ['application_id'],
      registers: [this.registry],
      collect: function () {
        this.reset()
        this.inc(app(), current().emittedRecords)
      },
    })

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

    new Counter({
      name: 'punctual_task_dropped_records_total',
      help: 'Records the task dropped, by reason (Kafka Streams: dropped-records-total)',
      labelNames: ['application_id', 'task_id', 'reason'],
      registers: [this.registry],
      collect: function () {
        this.reset()
        for (const task of current().tasks) {
          for (const [reason, count] of Object.entries(task.droppedRecords)) this.inc({ ...app(), task_id: task.taskId, reason }, count)
        }
      },
    })
    new Counter({
      name: 'punctual_processor_process_total',
      help: 'Records a processor node (source, processor or sink) of the task was given (Kafka Streams: processor-node process-total)',
      labelNames: ['application_id', 'task_id', 'processor'],
      registers: [this.registry],
      collect: function () {
        this.reset()
        for (const task of current().tasks) for (const p of task.processors) this.inc({ ...app(), task_id: task.taskId, processor: p.name }, p.records)
      },
    })
    new Gauge({
      name: 'punctual_task_pending_timers',
      help: 'Timers pending in the task, by kind (user, ttl) and time domain (event, processing)',
      labelNames: ['application_id', 'task_id', 'kind', 'domain'],
      registers: [this.registry],
      collect: function () {
        this.reset()
        for (const task of current().tasks) {
          for (const kind of ['user', 'ttl'] as const) {
            for (const domain of ['event', 'processing'] as const) this.set({ ...app(), task_id: task.taskId, kind, domain }, task.pendingTimers[kind][domain])
          }
        }
      },
    })
    for (const [name, help, field] of [
      ['punctual_suppression_buffer_records', 'Records a suppression buffers (Kafka Streams: suppression-buffer-count-current)', 'records'],
      ['punctual_suppression_buffer_bytes', 'Bytes a suppression buffers (Kafka Streams: suppression-buffer-size-current)', 'bytes'],
      ['punctual_suppression_buffer_spilled_records', 'Of the records a suppression buffers, those spilled to disk', 'spilled'],
    ] as const) {
      new Gauge({
        name,
        help,
        labelNames: ['application_id', 'task_id', 'store'],
        registers: [this.registry],
        collect: function () {
          this.reset()
          for (const task of current().tasks) for (const b of task.suppressionBuffers) this.set({ ...app(), task_id: task.taskId, store: b.store }, b[field])
        },
      })
    }
    for (const [name, help, field] of [
      ['punctual_task_input_position', 'The offset of the next record the task processes from an input partition', 'position'],
      ['punctual_task_input_end_offset', 'An input partition’s end as last known (on Kafka, its high watermark)', 'endOffset'],
      ['punctual_task_input_lag', 'Records of an input partition not processed yet (Kafka Streams: records-lag)', 'lag'],
    ] as const) {
      new Gauge({
        name,
        help,
        labelNames: ['application_id', 'task_id', 'topic', 'partition'],
        registers: [this.registry],
        collect: function () {
          this.reset()
          for (const task of current().tasks) {
            for (const input of task.inputs) {
              const v = input[field]
              if (v !== undefined) this.set({ ...app(), task_id: task.taskId, topic: input.topic, partition: input.partition }, v)
            }
          }
        },
      })
    }
    this.registry.registerMetric(new PunctuationLatenessHistogram(() => this.snapshot()) as unknown as Gauge)
    new Gauge({
      name: 'punctual_restore_remaining_records',
      help: 'Changelog records or state directory entries a restoring task still has to read',
      labelNames: ['application_id', 'task_id'],
      registers: [this.registry],
      collect: function () {
        this.reset()
        for (const r of current().restoring) if (r.remaining !== undefined) this.set({ ...app(), task_id: r.taskId }, r.remaining)
      },
    })
    new Gauge({
      name: 'punctual_restore_restored_records',
      help: 'Changelog records or state directory entries a restoring task has read so far (its rate is the restore rate)',
      labelNames: ['application_id', 'task_id', 'from'],
      registers: [this.registry],
      collect: function () {
        this.reset()
        for (const r of current().restoring) this.set({ ...app(), task_id: r.taskId, from: r.from }, r.restored)
      },
    })
    new Counter({
      name: 'punctual_commit_total',
      help: 'Commits made',
      labelNames: ['application_id'],
      registers: [this.registry],
      collect: function () {
        this.reset()
        this.inc(app(), current().commits?.commits ?? 0)
      },
    })
    for (const [name, help, field] of [
      ['punctual_commit_latency_avg_ms', 'How long a commit takes until durable, on average (Kafka Streams: commit-latency-avg)', 'meanMs'],
      ['punctual_commit_latency_max_ms', 'How long a commit took until durable, at most (Kafka Streams: commit-latency-max)', 'maxMs'],
      ['punctual_commit_blocking_max_ms', 'The longest a commit held the event loop at once', 'blockingMaxMs'],
    ] as const) {
      new Gauge({
        name,
        help,
        labelNames: ['application_id'],
        registers: [this.registry],
        collect: function () {
          this.reset()
          const commits = current().commits
          if (commits !== undefined) this.set(app(), commits[field])
        },
      })
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
