// One punctual instance on the broker for bench/kafka.ts, in a process of its own (as Kafka Streams runs
// in its JVM):
//   node --import tsx bench/kafka-instance.ts windowed BOOTSTRAP APP INPUT OUTPUT GUARANTEE
//   node --import tsx bench/kafka-instance.ts lateness BOOTSTRAP APP INPUT SECONDS
//   node --import tsx bench/kafka-instance.ts counts BOOTSTRAP APP INPUT STATE_DIR
//   node --import tsx bench/kafka-instance.ts failover BOOTSTRAP APP INPUT STATE_DIR OUTPUT
// It speaks the protocol of KafkaBench.java: JSON lines {"started":ms} just before start, then
// {"t":ms,"processed":n} every 100 ms; the windowed mode stops (committing) when stdin closes, the
// lateness mode after SECONDS, printing {"lateness":[ms,...]}. The counts mode (a count per key in a
// persistent store, exactly-once, on STATE_DIR; bench/kafka-restart.ts) prints each task's restore
// {"restored":{"records":n,"local":n,"ms":n}} as its log reports it, and runs until killed.
// The failover mode (bench/kafka-failover.ts) counts per key in a streams group (KIP-1071), at least
// once, commits every 1000 ms, on STATE_DIR, every count written to OUTPUT; it prints, each with the wall
// clock "t", {"processed","state","tasks","standbys":[{taskId,applied}],"restoring":[taskId]} every 100 ms,
// each task event ({"task":{type,taskId,...}}) and each restore ({"restored":{taskId,records,local,ms}});
// its info log (debug log with PUNCTUAL_KAFKA_FAILOVER_DEBUG=1) goes to stderr. It runs until killed.
import { BufferConfig, createConsoleLogger, PunctuationType, Serdes, silentLogger, StreamsBuilder, Suppressed, TimeWindows, Topology } from '../src/index.js'
import type { ProcessorContext, Windowed } from '../src/index.js'
import type { ProcessingGuarantee } from '../src/kafka/config.js'
import { KafkaRuntime } from '../src/kafka/kafka-runtime.js'
import { preciseClock } from './stats.js'

const HOUR = 3_600_000
const str = { keySerde: Serdes.String(), valueSerde: Serdes.String() }
const [mode, bootstrapServers, applicationId, input, fifth, sixth] = process.argv.slice(2) as [string, string, string, string, string, string | undefined]

/** The flights windowed-final workload, written as KafkaBench.java writes it: "origin@start" -> count. */
function windowedFinal(output: string): Topology {
  const b = new StreamsBuilder()
  b.stream<string, string>(input, str)
    .groupByKey()
    .windowedBy(TimeWindows.ofSizeAndGrace(HOUR, HOUR / 2))
    .count({ name: 'counts' })
    .suppress(Suppressed.untilWindowCloses<Windowed<string>, number>(BufferConfig.unbounded()))
    .toStream()
    .map((k, v) => ({ key: `${k.key}@${k.window.start}`, value: String(v) }))
    .to(output, str)
  return b.build()
}

const print = (o: unknown): boolean => process.stdout.write(`${JSON.stringify(o)}\n`)

if (mode === 'counts') {
  const b = new StreamsBuilder()
  b.stream<string, string>(input, str).groupByKey().count({ name: 'counts' })
  // The restore report: the info line with the task, its records and time (ChangelogRestore.restored).
  const logger = {
    ...silentLogger,
    info: (fields: unknown) => {
      const f = fields as { taskId?: unknown; records?: unknown; local?: unknown; ms?: unknown }
      if (typeof f.taskId === 'string' && typeof f.records === 'number' && typeof f.ms === 'number') print({ restored: { records: f.records, local: f.local, ms: f.ms } })
    },
    child: () => logger,
  }
  const rt = new KafkaRuntime(b.build(), { applicationId, bootstrapServers, groupProtocol: 'consumer', processingGuarantee: 'exactly_once_v2', stateDir: fifth, logger })
  rt.on('error', (err) => {
    process.stderr.write(`instance failed: ${err.stack ?? err.message}\n`)
    process.exit(1)
  })
  print({ started: Date.now() })
  await rt.start()
  setInterval(() => print({ t: Date.now(), processed: rt.metrics().processedRecords }), 100)
} else if (mode === 'failover') {
  const b = new StreamsBuilder()
  b.stream<string, string>(input, str)
    .groupByKey()
    .count({ name: 'counts' })
    .toStream()
    .mapValues((v) => String(v))
    .to(sixth as string, str)
  // PUNCTUAL_KAFKA_FAILOVER_DEBUG=1: the runtime's debug log.
  const log = createConsoleLogger({ level: process.env.PUNCTUAL_KAFKA_FAILOVER_DEBUG === '1' ? 'debug' : 'info' })
  const at = (o: Record<string, unknown>): boolean => print({ t: Date.now(), ...o })
  // The restore report: the info line with the task, its records and time (ChangelogRestore.restored).
  const logger = {
    ...log,
    info: (fields: Record<string, unknown>, message?: string) => {
      log.info(fields, message)
      const { taskId, records, local, ms } = fields
      if (typeof taskId === 'string' && typeof records === 'number' && typeof ms === 'number') at({ restored: { taskId, records, local, ms } })
    },
    child: () => logger,
  }
  const rt = new KafkaRuntime(b.build(), { applicationId, bootstrapServers, processingGuarantee: 'at_least_once', groupProtocol: 'streams', commitIntervalMs: 1000, stateDir: fifth, logger })
  rt.on('error', (err) => {
    process.stderr.write(`instance failed: ${err.stack ?? err.message}\n`)
    process.exit(1)
  })
  rt.on('task', (event) => at({ task: event }))
  at({ started: Date.now() })
  await rt.start()
  setInterval(() => at({ processed: rt.metrics().processedRecords, state: rt.state, tasks: rt.taskIds(), standbys: rt.standbyProgress(), restoring: rt.restoreProgress().map((r) => r.taskId) }), 100)
} else if (mode === 'windowed') {
  const rt = new KafkaRuntime(windowedFinal(fifth), { applicationId, bootstrapServers, groupProtocol: 'consumer', processingGuarantee: sixth as ProcessingGuarantee, logger: silentLogger })
  rt.on('error', (err) => {
    process.stderr.write(`instance failed: ${err.stack ?? err.message}\n`)
    process.exit(1)
  })
  print({ started: Date.now() })
  await rt.start()
  const report = setInterval(() => print({ t: Date.now(), processed: rt.metrics().processedRecords }), 100)
  process.stdin.resume()
  process.stdin.once('end', () => {
    clearInterval(report)
    rt.stop().then(
      () => {
        print({ closed: Date.now(), commits: rt.commitStats() })
        process.exit(0)
      },
      (err: unknown) => {
        process.stderr.write(`stop failed: ${String(err)}\n`)
        process.exit(1)
      },
    )
  })
} else {
  // A 1 s punctuation anchored at whole seconds: the call due at each grid point is late by now - due.
  const lateness: number[] = []
  const start = Math.ceil(preciseClock.now() / 1000) * 1000 + 1000
  let nextDue = start
  const topology = new Topology().addSource('in', input, str).addProcessor(
    'tick',
    () => ({
      init(ctx: ProcessorContext) {
        ctx.schedule({ type: PunctuationType.WALL_CLOCK_TIME, intervalMs: 1000, startTime: start }, (now) => {
          lateness.push(now - nextDue)
          nextDue += (Math.floor((now - nextDue) / 1000) + 1) * 1000
        })
      },
      process() {},
    }),
    'in',
  )
  const rt = new KafkaRuntime(topology, { applicationId, bootstrapServers, groupProtocol: 'consumer', clock: preciseClock, logger: silentLogger })
  print({ started: Date.now() })
  await rt.start()
  await new Promise((r) => setTimeout(r, Number(fifth) * 1000))
  await rt.stop()
  print({ lateness })
  process.exit(0)
}
