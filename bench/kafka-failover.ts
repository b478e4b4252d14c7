import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import type * as Client from '@confluentinc/kafka-javascript'
import { buildHarness } from '../conformance/kafka-streams/harness.js'
import { kafkaTool } from '../scripts/kafka-broker.mjs'
import { loadKafkaClient } from '../src/kafka/client.js'
import type { KafkaClient } from '../src/kafka/client.js'
import { partitionForStringKey } from '../src/processor/murmur2.js'
import { benchBroker } from './broker.js'

// `npm run bench -- --only failover`: failover time on a real broker. An input topic of two partitions,
// partition 0 with KEYS distinct keys, partition 1 with SMALL_KEYS; a count per key (persistent store
// "counts", every count written to an output topic), at least once, commits every 1000 ms, in a streams
// group (KIP-1071), three instances (processes), each on a state directory of its own: the first processes
// the input alone, then the other two join together (so that the standby of task 0_0 lands on the instance
// without an active task, the only one the broker's assignor moves the task to). Once every record
// is committed (and, with a standby replica, once the standby of task 0_0 applied its whole changelog),
// the owner of task 0_0 is killed with SIGKILL and a probe record is written at once to partition 0, on a
// key counted once already; the figure is the time from the kill to the probe's count ("2") in the output
// topic, by the broker's clock (the output topic keeps LogAppendTime). Cases: punctual with one standby
// replica and with none, and Kafka Streams 4.4 (FailoverBench.java, group.protocol=streams, one stream
// thread per JVM, no record cache) with one and with none. The standby replicas are the group's config
// streams.num.standby.replicas, set before the members join (the broker's default applies otherwise). The
// time to notice the death is the broker's group.streams.session.timeout.ms, reported with the results.
// The broker is PUNCTUAL_KAFKA_BOOTSTRAP's, or one this starts and stops.
// PUNCTUAL_KAFKA_FAILOVER_KEYS: the keys of task 0_0 (1,000,000); PUNCTUAL_KAFKA_FAILOVER_ROUNDS: rounds
// of every case (1); PUNCTUAL_KAFKA_FAILOVER_CASES: some of the cases (punctual-1,punctual-0,
// kafka-streams-1,kafka-streams-0: engine and standby replicas); PUNCTUAL_KAFKA_FAILOVER_LOGS: a directory
// where each instance's log is kept.

export type FailoverEngine = 'punctual' | 'kafka-streams'

/** How the new owner of task 0_0 restored it (changelog records; a restore timed by the engine). */
export interface FailoverRestore {
  /** Records in all: local state and the changelog's tail. */
  readonly records: number
  /**
   * From the local state (a standby's), when the engine tells. punctual counts the records it read back
   * from its local changelog records, not the entries of a persistent store, which it uses in place (so
   * 2 with a caught-up standby: the task's own internal records); Kafka Streams, the store's changelog
   * offset where the restore started.
   */
  readonly local: number | undefined
  /** Read from the changelog. */
  readonly tail: number
  readonly ms: number
}

export interface FailoverRun {
  readonly round: number
  readonly engine: FailoverEngine
  readonly standbyReplicas: 0 | 1
  /** From the kill until the probe's count was appended to the output topic (the broker's LogAppendTime). */
  readonly killToOutputMs: number
  /** From the kill until this process's consumer received it. */
  readonly killToReceivedMs: number
  /**
   * From the kill until the new owner heard of its assignment of task 0_0: punctual's log line "tasks
   * assigned"; Kafka Streams: the first of its standby's suspension (promoted), its state change to
   * REBALANCING, its restore start, its first report listing the task.
   */
  readonly killToAssignedMs: number | undefined
  /** From the kill until the probe record was acknowledged by the broker. */
  readonly probeWrittenMs: number
  /** The probe's count in the output (2 when the count went on from where it was). */
  readonly probeCount: string
  readonly newOwnerWasStandby: boolean
  /** Each instance's tasks and standbys at the kill, and which was killed and which took the task over. */
  readonly layout: readonly string[]
  readonly restore: FailoverRestore | undefined
  /** Changelog records of task 0_0 when its owner was killed. */
  readonly changelogRecords: number
  /** From the first instance's start until the group committed every input record (that instance alone). */
  readonly processSeconds: number
  /** With a standby: from the other two instances' settling until the standby had applied the whole changelog. */
  readonly standbyCatchUpSeconds: number | undefined
  /** The machine's load average (1 min) at the kill: the machine's other work shows here. */
  readonly loadAverage: number
  /**
   * What the new owner did after the kill, in ms from it: punctual, its log lines on task 0_0 and its
   * tasks and standbys, and its task events; Kafka Streams, its state changes and restore and standby
   * listener calls.
   */
  readonly timeline: readonly string[]
}

export interface KafkaFailoverResult {
  readonly keys: number
  readonly smallKeys: number
  /** The broker's streams group settings (session timeout, heartbeat, assignment interval, standby default). */
  readonly broker: Readonly<Record<string, string>>
  readonly runs: readonly FailoverRun[]
}

const KEYS = Number(process.env.PUNCTUAL_KAFKA_FAILOVER_KEYS ?? 1_000_000)
const SMALL_KEYS = 5000
const ROUNDS = Number(process.env.PUNCTUAL_KAFKA_FAILOVER_ROUNDS ?? 1)
const ALL_CASES: ReadonlyArray<{ engine: FailoverEngine; standbyReplicas: 0 | 1 }> = [
  { engine: 'punctual', standbyReplicas: 1 },
  { engine: 'punctual', standbyReplicas: 0 },
  { engine: 'kafka-streams', standbyReplicas: 1 },
  { engine: 'kafka-streams', standbyReplicas: 0 },
]
const CASES = ALL_CASES.filter((c) => process.env.PUNCTUAL_KAFKA_FAILOVER_CASES?.split(',').includes(`${c.engine}-${c.standbyReplicas}`) ?? true)
const TASK = '0_0'
/** PUNCTUAL_KAFKA_FAILOVER_LOGS: a directory to keep each instance's log (stderr) in, as APP-NAME.log. */
const LOGS = process.env.PUNCTUAL_KAFKA_FAILOVER_LOGS
const HERE = fileURLToPath(new URL('.', import.meta.url))
const HARNESS = join(HERE, '..', 'conformance', 'kafka-streams')
const MINUTE = 60_000

type Report = Record<string, unknown> & { t: number }

/** One instance of either engine in a process of its own, and what it last reported. */
class Instance {
  processed = 0
  tasks: string[] = []
  restoring: string[] = []
  standbys: Array<{ taskId: string; applied: number }> = []
  /** The timed messages other than the periodic reports: task events, restores, state changes. */
  readonly events: Report[] = []
  /** Per task, since when the reports list it (tasks or restoring), while they do. */
  readonly heldSince = new Map<string, number>()
  /** Its log (stderr), each line as it came. */
  readonly log: string[] = []
  exit: number | string | undefined
  readonly exited: Promise<void>
  private readonly child: ChildProcess

  constructor(
    readonly name: string,
    readonly engine: FailoverEngine,
    args: { bootstrap: string; app: string; input: string; output: string; stateDir: string },
  ) {
    const { bootstrap, app, input, output, stateDir } = args
    const cp = `${join(HARNESS, 'target', 'classes')}:${join(HARNESS, 'target', 'lib', '*')}`
    this.child =
      engine === 'punctual'
        ? spawn(process.execPath, ['--import', 'tsx', join(HERE, 'kafka-instance.ts'), 'failover', bootstrap, app, input, stateDir, output], { stdio: ['ignore', 'pipe', 'pipe'] })
        : spawn('java', ['-Xmx1g', '-cp', cp, 'punctual.reference.FailoverBench', bootstrap, app, input, output, stateDir], { stdio: ['ignore', 'pipe', 'pipe'] })
    createInterface({ input: this.child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      if (!line.startsWith('{')) return
      const m = JSON.parse(line) as Report
      if (m.processed === undefined) {
        this.events.push(m)
        return
      }
      this.processed = m.processed as number
      const held = [...(m.tasks as string[]), ...((m.restoring as string[] | undefined) ?? [])]
      this.tasks = m.tasks as string[]
      this.restoring = (m.restoring as string[] | undefined) ?? []
      this.standbys = m.standbys as Array<{ taskId: string; applied: number }>
      for (const id of held) if (!this.heldSince.has(id)) this.heldSince.set(id, m.t)
      for (const id of [...this.heldSince.keys()]) if (!held.includes(id)) this.heldSince.delete(id)
    })
    createInterface({ input: this.child.stderr as NodeJS.ReadableStream }).on('line', (line) => this.log.push(line))
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => {
        this.exit = code ?? signal ?? undefined
        resolve()
      }),
    )
  }

  kill(): void {
    if (this.exit === undefined) this.child.kill('SIGKILL')
  }

  describe(): string {
    const standbys = this.standbys.map((s) => `${s.taskId}@${s.applied}`).join(' ')
    const restoring = this.restoring.length === 0 ? '' : `, restoring ${this.restoring.join(' ')}`
    return `${this.name}: ${this.processed} records, tasks ${this.tasks.join(' ') || '-'}${restoring}, standbys ${standbys || '-'}${this.exit === undefined ? '' : `, exited (${this.exit})`}`
  }
}

/** Polls `condition` (every `everyMs`) until it holds; fails after `timeoutMs`, or when an instance died. */
async function until(what: string, condition: () => boolean | Promise<boolean>, timeoutMs: number, instances: readonly Instance[] = [], everyMs = 100): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await condition())) {
    const dead = instances.find((i) => i.exit !== undefined)
    if (dead !== undefined) throw new Error(`benchmark: instance ${dead.name} exited (${dead.exit}) while waiting until ${what}; its log:\n${dead.log.slice(-40).join('\n')}`)
    if (Date.now() > deadline) throw new Error(`benchmark: timed out waiting until ${what}: ${instances.map((i) => i.describe()).join(' | ')}`)
    await new Promise((r) => setTimeout(r, everyMs))
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** `n` keys that the default partitioner puts on `partition` of a 2-partition topic. */
function keysOf(partition: number, n: number, prefix: string): string[] {
  const out: string[] = []
  for (let i = 0; out.length < n; i++) if (partitionForStringKey(`${prefix}${i}`, 2) === partition) out.push(`${prefix}${i}`)
  return out
}

/** A consumer on the output topic from `from` (each partition's offset), waiting for the first record of `key`. */
class OutputWatcher {
  readonly found: Promise<{ appendTime: number; receivedAt: number; value: string }>
  private closed = false

  private constructor(private readonly consumer: Client.KafkaConsumer, key: string) {
    this.found = new Promise((resolve, reject) => {
      const poll = (): void => {
        consumer.consume(100, (err, messages) => {
          if (this.closed) return
          if (err) return reject(err)
          const receivedAt = Date.now()
          const m = messages.find((x) => x.key?.toString() === key)
          if (m !== undefined) return resolve({ appendTime: m.timestamp ?? 0, receivedAt, value: String(m.value) })
          setImmediate(poll)
        })
      }
      poll()
    })
  }

  static async start(client: KafkaClient, bootstrap: string, topic: string, from: readonly number[], key: string): Promise<OutputWatcher> {
    const consumer = new client.RdKafka.KafkaConsumer({ 'bootstrap.servers': bootstrap, 'group.id': `watch-${topic}`, 'enable.auto.commit': false, 'fetch.wait.max.ms': 10 } as Client.ConsumerGlobalConfig)
    await new Promise<void>((resolve, reject) => consumer.connect({}, (err) => (err ? reject(err) : resolve())))
    consumer.setDefaultConsumeTimeout(20)
    consumer.assign(from.map((offset, partition) => ({ topic, partition, offset })))
    return new OutputWatcher(consumer, key)
  }

  async close(): Promise<void> {
    this.closed = true
    await new Promise<void>((resolve) => this.consumer.disconnect(() => resolve()))
  }
}

/** The broker's settings that decide how soon a streams group reassigns a dead member's tasks. */
function brokerSettings(bootstrap: string, brokerId: number): Record<string, string> {
  const r = kafkaTool('org.apache.kafka.tools.ConfigCommand', ['--bootstrap-server', bootstrap, '--describe', '--entity-type', 'brokers', '--entity-name', String(brokerId), '--all'])
  if (r.status !== 0) throw new Error(`kafka-configs.sh --describe failed: ${r.stderr}`)
  const wanted = ['group.streams.session.timeout.ms', 'group.streams.heartbeat.interval.ms', 'group.streams.assignment.interval.ms', 'group.streams.num.standby.replicas', 'group.streams.initial.rebalance.delay.ms']
  const out: Record<string, string> = {}
  for (const line of r.stdout.split('\n')) {
    const m = /^\s*([\w.]+)=(\S*) sensitive=/.exec(line)
    if (m !== null && wanted.includes(m[1] as string)) out[m[1] as string] = m[2] as string
  }
  return out
}

export async function kafkaFailoverBench(): Promise<KafkaFailoverResult> {
  if (CASES.some((c) => c.engine === 'kafka-streams')) buildHarness()
  const broker = await benchBroker()
  const { bootstrap, cluster } = broker
  const client = await loadKafkaClient()
  const kafka = new client.KafkaJS.Kafka({ kafkaJS: { brokers: [bootstrap], logLevel: client.KafkaJS.logLevel.ERROR } })
  const admin = kafka.admin()
  const producer = kafka.producer({ kafkaJS: { idempotent: true } })
  const name = `failover${Date.now()}`
  const dir = mkdtempSync(join(tmpdir(), 'punctual-failover-bench-'))
  const running: Instance[] = []
  try {
    await admin.connect()
    await producer.connect()
    const input = `${name}-in`
    await cluster.createTopic(input, 2)
    const big = keysOf(0, KEYS, 'key-')
    const small = keysOf(1, SMALL_KEYS, 'key-')
    await cluster.produce(input, 2, [...big, ...small].map((key, i) => ({ key, value: 'v', timestamp: 1_700_000_000_000 + i })))
    const [meta] = await admin.fetchTopicMetadata({ topics: [input] })
    const settings = brokerSettings(bootstrap, meta?.partitions[0]?.leader ?? 1)

    const runs: FailoverRun[] = []
    let probes = 0
    for (let round = 1; round <= ROUNDS; round++) {
      for (const { engine, standbyReplicas } of CASES) {
        const app = `${name}-${engine}-${standbyReplicas}-${round}`
        const output = `${app}-out`
        await admin.createTopics({ topics: [{ topic: output, numPartitions: 2, configEntries: [{ name: 'message.timestamp.type', value: 'LogAppendTime' }] }] })
        await until(`topic ${output} exists`, async () => (await cluster.offsets(output).catch(() => [])).length === 2, MINUTE)
        if (standbyReplicas > 0) {
          const set = kafkaTool('org.apache.kafka.tools.ConfigCommand', ['--bootstrap-server', bootstrap, '--entity-type', 'groups', '--entity-name', app, '--alter', '--add-config', `streams.num.standby.replicas=${standbyReplicas}`])
          if (set.status !== 0) throw new Error(`setting streams.num.standby.replicas of group ${app} failed: ${set.stderr}`)
        }
        // The probe: a key of task 0_0 counted once (every run its own, as every run reads the whole input topic).
        const probe = big[probes++] as string
        const ends = (await cluster.offsets(input)).map((o) => o.high)
        // The first instance runs both tasks and processes the input alone; the other two then join at once.
        // The broker's sticky assignor keeps task 0_0 on the first, gives 0_1 to one newcomer, a standby of 0_1
        // to the first (its previous owner) and the standby of 0_0 to the other newcomer, which has nothing
        // else: the only place from which it can take task 0_0 over (the assignor moves an active task to a
        // standby only while that member is below its quota of active tasks). Started all at once, the
        // standby of 0_0 may land on the owner of 0_1, and the task then moves to the third instance, which
        // restores it from scratch.
        const started = Date.now()
        const instance = (n: string): Instance => new Instance(n, engine, { bootstrap, app, input, output, stateDir: join(dir, app, n) })
        const instances = [instance('a')]
        running.push(...instances)
        const committed = async (): Promise<boolean> => {
          const c = await cluster.committed(app, input).catch(() => [])
          return ends.every((end, p) => c[p] === end)
        }
        await until(`${app} committed every input record`, committed, 30 * MINUTE, instances, 500)
        const processSeconds = (Date.now() - started) / 1000
        const newcomers = [instance('b'), instance('c')]
        instances.push(...newcomers)
        running.push(...newcomers)
        const settled = (): boolean => {
          const held = (id: string): Instance[] => instances.filter((i) => i.tasks.includes(id))
          return held(TASK).length === 1 && held('0_1').length === 1 && held(TASK)[0] !== held('0_1')[0] && instances.every((i) => i.restoring.length === 0)
        }
        await until(`${app}: the three instances share the tasks`, settled, 10 * MINUTE, instances)
        await until(`${app} committed every input record`, committed, 10 * MINUTE, instances, 500)
        const changelogs = engine === 'punctual' ? [`${app}-counts-changelog`, `${app}-punctual-0-changelog`] : [`${app}-counts-changelog`]
        let changelogRecords = 0
        for (const topic of changelogs) changelogRecords += (await cluster.offsets(topic))[0]?.high ?? 0
        let standbyCatchUpSeconds: number | undefined
        if (standbyReplicas > 0) {
          const since = Date.now()
          await until(`the standby of task ${TASK} applied its ${changelogRecords} changelog records`, () => instances.some((i) => i.standbys.some((s) => s.taskId === TASK && s.applied >= changelogRecords)), 30 * MINUTE, instances)
          standbyCatchUpSeconds = (Date.now() - since) / 1000
        }
        await sleep(2000) // past a commit of every instance
        if (!settled()) throw new Error(`${app}: the assignment changed: ${instances.map((i) => i.describe()).join(' | ')}`)
        const owners = instances.filter((i) => i.tasks.includes(TASK))
        if (owners.length !== 1) throw new Error(`task ${TASK} has ${owners.length} owners: ${instances.map((i) => i.describe()).join(' | ')}`)
        const owner = owners[0] as Instance
        const standby = instances.find((i) => i !== owner && i.standbys.some((s) => s.taskId === TASK))
        const others = instances.filter((i) => i !== owner)

        const layout = instances.map((i) => `${i.describe()}${i === owner ? ' (killed)' : ''}`)
        const before = (await cluster.offsets(output)).map((o) => o.high)
        const watcher = await OutputWatcher.start(client, bootstrap, output, before, probe)
        await sleep(1000) // the watcher's first fetches, and a quiet second
        const loadAverage = loadavg()[0] ?? 0
        const killedAt = Date.now()
        owner.kill()
        await producer.send({ topic: input, messages: [{ key: probe, value: 'v', partition: 0, timestamp: String(1_700_000_000_000 + KEYS + SMALL_KEYS + probes) }] })
        const probeWrittenMs = Date.now() - killedAt
        const seen = await Promise.race([watcher.found, sleep(10 * MINUTE).then(() => undefined)])
        if (seen === undefined) throw new Error(`the probe's count did not come within 10 minutes of the kill: ${instances.map((i) => i.describe()).join(' | ')}`)
        await watcher.close()
        // The reports of the new owner's restore come through another pipe than the output: a moment for them.
        let newOwner: Instance | undefined
        await until(`a new owner of task ${TASK} reports it`, () => (newOwner = others.find((i) => i.tasks.includes(TASK))) !== undefined, MINUTE, others)
        await sleep(1000)
        const now = newOwner as Instance
        const after = now.events.filter((e) => e.t >= killedAt)
        const steps = timeline(now, killedAt)
        const assigned = steps.find((x) => x.assigned)
        runs.push({
          round,
          engine,
          standbyReplicas,
          killToOutputMs: seen.appendTime - killedAt,
          killToReceivedMs: seen.receivedAt - killedAt,
          killToAssignedMs: assigned?.ms,
          probeWrittenMs,
          probeCount: seen.value,
          newOwnerWasStandby: now === standby,
          layout: [...layout, `task ${TASK} moved to ${now.name}`],
          restore: restoreOf(engine, after),
          changelogRecords,
          processSeconds,
          standbyCatchUpSeconds,
          loadAverage,
          timeline: [...steps.map((x) => `+${x.ms} ms ${x.what}`), `+${seen.appendTime - killedAt} ms the probe's count ${seen.value} appended to the output`],
        })
        for (const i of instances) i.kill()
        await Promise.all(instances.map((i) => i.exited))
        if (LOGS !== undefined) {
          mkdirSync(LOGS, { recursive: true })
          for (const i of instances) writeFileSync(join(LOGS, `${app}-${i.name}.log`), `${i.log.join('\n')}\n`)
        }
        rmSync(join(dir, app), { recursive: true, force: true })
      }
    }
    return { keys: KEYS, smallKeys: SMALL_KEYS, broker: settings, runs }
  } finally {
    for (const i of running) i.kill()
    await Promise.all(running.map((i) => i.exited))
    await producer.disconnect().catch(() => {})
    await admin.disconnect().catch(() => {})
    await cluster.deleteTopics(name).catch(() => {})
    rmSync(dir, { recursive: true, force: true })
    await broker.close()
  }
}

/** The new owner's steps after the kill (ms from it), `assigned` on the first that shows it heard of task 0_0. */
function timeline(i: Instance, killedAt: number): Array<{ ms: number; what: string; assigned: boolean }> {
  const out: Array<{ ms: number; what: string; assigned: boolean }> = []
  if (i.engine === 'punctual') {
    for (const line of i.log) {
      const t = Date.parse(line.slice(0, 24))
      if (Number.isNaN(t) || t < killedAt || !/0_0|tasks (assigned|revoked|lost)|standby/.test(line)) continue
      out.push({ ms: t - killedAt, what: `log: ${line.slice(25).trim()}`, assigned: /tasks assigned \(tasks=[^)]*0_0/.test(line) })
    }
  } else {
    const held = i.heldSince.get(TASK)
    if (held !== undefined && held >= killedAt) out.push({ ms: held - killedAt, what: `reports task ${TASK} active`, assigned: true })
  }
  for (const e of i.events) {
    if (e.t < killedAt) continue
    const { t, ...what } = e
    const task = (what.task ?? what.restoreStart ?? what.restored ?? what.standbySuspended) as { taskId?: string } | undefined
    if (task !== undefined && task.taskId !== TASK) continue
    const assigned = i.engine === 'kafka-streams' && (what.stateChange === 'REBALANCING' || what.restoreStart !== undefined || what.standbySuspended !== undefined)
    out.push({ ms: t - killedAt, what: JSON.stringify(what), assigned })
  }
  return out.sort((a, b) => a.ms - b.ms)
}

/** The new owner's restore of task 0_0, from its reports after the kill. */
function restoreOf(engine: FailoverEngine, events: readonly Report[]): FailoverRestore | undefined {
  type Restored = { taskId: string; records: number; local?: number; ms: number; store?: string }
  const restored = events.map((e) => e.restored as Restored | undefined).find((r) => r !== undefined && r.taskId === TASK && (r.store === undefined || r.store === 'counts'))
  if (engine === 'punctual') return restored === undefined ? undefined : { records: restored.records, local: restored.local, tail: restored.records - (restored.local ?? 0), ms: restored.ms }
  // Kafka Streams: the restore listener's start (the store's offset: the records its local state holds)
  // and end (the records read from the changelog); the standby's suspension tells the store's offset too.
  const start = events.map((e) => e.restoreStart as { taskId: string; store: string; from: number; to: number } | undefined).find((r) => r !== undefined && r.taskId === TASK && r.store === 'counts')
  const suspended = events.map((e) => e.standbySuspended as { taskId: string; storeOffset: number } | undefined).find((r) => r !== undefined && r.taskId === TASK)
  const local = start?.from ?? suspended?.storeOffset
  if (restored === undefined) return start === undefined && suspended === undefined ? undefined : { records: local ?? 0, local, tail: 0, ms: 0 }
  return { records: (local ?? 0) + restored.records, local, tail: restored.records, ms: restored.ms }
}
