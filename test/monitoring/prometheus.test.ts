import assert from 'node:assert/strict'
import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import { describe, it } from 'node:test'
import { EmbeddedRuntime, PunctualError, PunctuationType, Serdes, silentLogger, StateDescriptors, Topology } from '../../src/index.js'
import type { KeyedProcessorContext, RuntimeState } from '../../src/index.js'
import { ManualClock } from '../../src/testing/index.js'
import { PrometheusMetrics } from '../../src/monitoring/prometheus.js'
import type { RuntimeMetrics } from '../../src/metrics.js'

/** A keyed processor with a user event-time timer per record and a TTL'd state; a 1 s wall-clock punctuation. */
function topology(): Topology {
  return new Topology().addSource('in', 'input').addKeyedProcessor<string, string, string, string>(
    'keyed',
    () => {
      let ctx: KeyedProcessorContext<string, string, string>
      return {
        init(c) {
          ctx = c
          c.schedule({ type: PunctuationType.WALL_CLOCK_TIME, intervalMs: 1000, startTime: 0 }, () => {})
        },
        process(r) {
          ctx.getState(StateDescriptors.value<string>('last', { ttl: { ttlMs: 50, timeDomain: 'event' } })).update(r.value)
          ctx.timers.registerEventTimeTimer(r.timestamp + 100)
        },
      }
    },
    'in',
  )
}

/** One sample of Prometheus' text format: `name{label="value",...} number`. */
interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

/** Parses the exposition format's sample lines (comments skipped); throws on a line that is neither. */
function parsePrometheus(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = []
  const types = new Map<string, string>()
  for (const line of text.split('\n')) {
    if (line === '') continue
    const type = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line)
    if (type !== null) types.set(type[1] as string, type[2] as string)
    if (line.startsWith('#')) continue
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (m === null) throw new Error(`not a Prometheus sample line: ${JSON.stringify(line)}`)
    const labels: Record<string, string> = {}
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1] as string] = l[2] as string
    samples.push({ name: m[1] as string, labels, value: Number(m[3]) })
  }
  return { samples, types }
}

function value(samples: readonly Sample[], name: string, labels: Record<string, string>): number | undefined {
  return samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value
}

describe('metrics over HTTP (Prometheus)', () => {
  it('GET /metrics gives the tasks’ counters, clocks, timers and punctuation lateness, from the runtime as it stands', async () => {
    const clock = new ManualClock(10_000)
    const states: string[] = []
    // The runtime's timer wakes it 5 ms after each due time: every wall-clock punctuation fires 5 ms late.
    const scheduler = { at: (due: number, callback: () => void) => clock.at(due + 5, callback) }
    const rt = new EmbeddedRuntime(topology(), { applicationId: 'prom', clock, scheduler, logger: silentLogger, metrics: { port: 0 } })
    rt.on('stateChange', (next: RuntimeState, previous: RuntimeState) => void states.push(`${previous}->${next}`))
    await rt.start()
    try {
      const address = await rt.metricsAddress()
      assert.ok(address !== undefined)
      assert.equal(address.host, '127.0.0.1', 'loopback by default')
      const input = rt.producer('input', { keySerde: Serdes.String(), valueSerde: Serdes.String() })
      // a@700 comes 300 behind stream time, b@500 700 behind.
      for (const [key, ts] of [['a', 1000], ['a', 700], ['a', 1200], ['b', 500]] as const) input.send(key, 'v', ts)
      await rt.idle()
      clock.advance(1005) // to 11005: the punctuation due at 11000 fires
      await rt.idle()

      const res = await fetch(address.url)
      assert.equal(res.status, 200)
      assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/)
      const { samples, types } = parsePrometheus(await res.text())
      const onA = { application_id: 'prom', task_id: '0_0' }
      assert.equal(types.get('punctual_task_process_total'), 'counter')
      assert.equal(value(samples, 'punctual_task_process_total', onA), 4)
      assert.equal(value(samples, 'punctual_processed_records_total', { application_id: 'prom' }), 4)
      assert.equal(value(samples, 'punctual_task_stream_time_ms', onA), 1200)
      assert.equal(value(samples, 'punctual_task_stream_time_lag_ms', onA), 11_005 - 1200)
      assert.equal(value(samples, 'punctual_task_record_lateness_max_ms', onA), 700)
      assert.equal(value(samples, 'punctual_task_record_lateness_avg_ms', onA), (300 + 700) / 4)
      assert.equal(value(samples, 'punctual_task_pending_timers', { ...onA, kind: 'user', domain: 'event' }), 1, 'the timer at 1300 (600, 800, 1100 fired)')
      assert.equal(value(samples, 'punctual_task_pending_timers', { ...onA, kind: 'ttl', domain: 'event' }), 2, 'a and b, both last written at stream time 1200')
      assert.equal(value(samples, 'punctual_task_dropped_records_total', { ...onA, reason: 'late' }), 0)
      assert.equal(types.get('punctual_task_punctuation_lateness_ms'), 'histogram')
      assert.equal(value(samples, 'punctual_task_punctuation_lateness_ms_bucket', { ...onA, le: '2' }), 0)
      assert.equal(value(samples, 'punctual_task_punctuation_lateness_ms_bucket', { ...onA, le: '5' }), 1)
      assert.equal(value(samples, 'punctual_task_punctuation_lateness_ms_bucket', { ...onA, le: '+Inf' }), 1)
      assert.equal(value(samples, 'punctual_task_punctuation_lateness_ms_sum', onA), 5)
      assert.equal(value(samples, 'punctual_task_punctuation_lateness_ms_count', onA), 1)
      assert.equal(value(samples, 'punctual_task_record_e2e_latency_max_ms', onA), 10_000 - 500, 'processed at 10000')
      assert.equal(value(samples, 'punctual_task_record_e2e_latency_min_ms', onA), 10_000 - 1200)
      assert.equal(value(samples, 'punctual_task_next_event_time_timer_ms', onA), 1250, 'the TTL timers at 1250 come before the user timer at 1300')
      assert.equal(value(samples, 'punctual_task_ttl_expired_total', onA), 0)
      assert.equal(value(samples, 'punctual_processor_process_total', { ...onA, processor: 'keyed' }), 4)
      assert.equal(value(samples, 'punctual_task_input_position', { ...onA, topic: 'input', partition: '0' }), 4)
      assert.equal(value(samples, 'punctual_task_input_lag', { ...onA, topic: 'input', partition: '0' }), 0)
      assert.equal(value(samples, 'punctual_runtime_state', { application_id: 'prom', state: 'RUNNING' }), 1)
      assert.ok((value(samples, 'punctual_commit_total', { application_id: 'prom' }) ?? 0) >= 1)

      const missing = await fetch(address.url.replace('/metrics', '/nothing'))
      assert.equal(missing.status, 404)
      await missing.text()
    } finally {
      await rt.stop()
    }
    assert.deepEqual(states, ['CREATED->RUNNING', 'RUNNING->PENDING_SHUTDOWN', 'PENDING_SHUTDOWN->NOT_RUNNING'])
  })

  it('a port in use stops the runtime with an error naming it; a bad port is refused at construction', async () => {
    const taken = createServer()
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
    const port = (taken.address() as AddressInfo).port
    try {
      const rt = new EmbeddedRuntime(topology(), { applicationId: 'prom-taken', clock: new ManualClock(0), logger: silentLogger, metrics: { port } })
      const errors: Error[] = []
      rt.on('error', (e) => errors.push(e))
      await rt.start()
      assert.equal(await rt.metricsAddress(), undefined)
      assert.equal(rt.state, 'ERROR')
      assert.match(errors[0]?.message ?? '', new RegExp(`cannot serve metrics on 127\\.0\\.0\\.1:${port}`))
      await assert.rejects(rt.stop(), /cannot serve metrics/)
    } finally {
      taken.close()
    }
    assert.throws(() => new EmbeddedRuntime(topology(), { applicationId: 'x', metrics: { port: 70_000 } }), (e: unknown) => e instanceof PunctualError && /metrics\.port must be an integer from 0 to 65535, got 70000/.test(e.message))
  })

  it('a restore in progress: records read and remaining per task, whose rate Prometheus derives', async () => {
    const snapshot: RuntimeMetrics = {
      applicationId: 'r',
      state: 'RUNNING',
      wallClockTime: 0,
      processedRecords: 0,
      emittedRecords: 0,
      punctuations: 0,
      droppedRecords: { 'invalid-timestamp': 0, deserialization: 0, processing: 0, punctuation: 0, timer: 0, late: 0 },
      tasks: [],
      restoring: [
        { taskId: '0_1', from: 'changelog', restored: 1500, remaining: 500 },
        { taskId: '1_0', from: 'stateDirectory', restored: 7, remaining: undefined },
      ],
      commits: undefined,
    }
    const { samples } = parsePrometheus(await new PrometheusMetrics(() => snapshot).scrape())
    assert.equal(value(samples, 'punctual_restore_restored_records', { task_id: '0_1', from: 'changelog' }), 1500)
    assert.equal(value(samples, 'punctual_restore_remaining_records', { task_id: '0_1' }), 500)
    assert.equal(value(samples, 'punctual_restore_restored_records', { task_id: '1_0', from: 'stateDirectory' }), 7)
    assert.equal(value(samples, 'punctual_restore_remaining_records', { task_id: '1_0' }), undefined, 'not known')
  })
})
