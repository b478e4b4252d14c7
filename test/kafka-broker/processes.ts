import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

const INSTANCE = fileURLToPath(new URL('./instance.ts', import.meta.url))
/** Lines of an instance's log kept for a failing test to print. */
const KEPT_LINES = 400

/** What `instance.ts` runs: its application, topics, processing guarantee. */
export type InstanceArgs = readonly [app: string, input: string, output: string, guarantee: 'exactly_once_v2' | 'at_least_once']

export interface InstanceOptions {
  /** A broker other than the shared one of `npm run test:kafka` (a test that stops its own broker). */
  readonly bootstrap?: string
  /** The runtime's commit interval (100 ms unless given). */
  readonly commitIntervalMs?: number
  /** The runtime's state directory (a temporary one, removed at stop, unless given). */
  readonly stateDir?: string
  /** The process kills itself once this commit is complete on Kafka, before its local half (instance.ts). */
  readonly killAfterCommit?: number
  /** The runtime's `bufferedRecordsPerPartition`. */
  readonly bufferedRecordsPerPartition?: number
  /** The runtime's `commitMaxRecords`. */
  readonly commitMaxRecords?: number
  /** The heap the process may use (`--max-old-space-size`, in MB). */
  readonly heapMb?: number
  /** 'streams': the instance joins a streams group (PUNCTUAL_KAFKA_TEST_GROUP_PROTOCOL, which the test run may set for all). */
  readonly groupProtocol?: 'streams'
}

/**
 * An instance of the tests' application (`instance.ts`) in a process of its own, and what it last
 * reported. Its log (stderr) is kept, the last lines of it, for `log()`; with PUNCTUAL_KAFKA_TEST_DEBUG=1
 * it goes to this process's stderr as it comes. The lines saying it failed always do.
 */
export class Instance {
  processed = 0
  tasks: string[] = []
  restoring: string[] = []
  /** Its standby tasks (in a streams group), with the changelog records each applied. */
  standbys: Array<{ taskId: string; applied: number }> = []
  /** The runtime's state: RUNNING, PENDING_SHUTDOWN, ... */
  state = 'CREATED'
  /** Each input partition of its tasks (`topic-partition`): the offset of the next record it processes. */
  positions: Record<string, number> = {}
  /** With the `counts` workload: the store's entries (up to 10,000), once none of its tasks restores. */
  store: Record<string, number> | undefined
  /** The most heap the reports said the process used, in bytes. */
  peakHeapUsed = 0
  /** Reports received: one every 200 ms while the process runs its event loop. */
  reports = 0
  /** How the process ended, once it has: its exit code, or the signal that ended it. */
  exit: number | NodeJS.Signals | undefined
  /** Settles when the process ends, with its exit code or the signal that ended it. */
  readonly exited: Promise<number | NodeJS.Signals>
  /** The instance's report of its failure ('instance failed: ...', 'stop failed: ...'), if it made one. */
  failure: string | undefined
  private readonly kept: string[] = []
  private readonly child: ChildProcess

  constructor(
    readonly name: string,
    args: InstanceArgs | string[],
    workload: string,
    options: InstanceOptions = {},
  ) {
    const env = { ...process.env, ...(options.bootstrap === undefined ? {} : { PUNCTUAL_KAFKA_BOOTSTRAP: options.bootstrap }), ...(options.stateDir === undefined ? {} : { PUNCTUAL_KAFKA_TEST_STATE_DIR: options.stateDir }), ...(options.killAfterCommit === undefined ? {} : { PUNCTUAL_KAFKA_TEST_KILL_AFTER_COMMIT: String(options.killAfterCommit) }), ...(options.bufferedRecordsPerPartition === undefined ? {} : { PUNCTUAL_KAFKA_TEST_BUFFERED: String(options.bufferedRecordsPerPartition) }), ...(options.commitMaxRecords === undefined ? {} : { PUNCTUAL_KAFKA_TEST_COMMIT_MAX_RECORDS: String(options.commitMaxRecords) }), ...(options.groupProtocol === undefined ? {} : { PUNCTUAL_KAFKA_TEST_GROUP_PROTOCOL: options.groupProtocol }) }
    const extra = options.commitIntervalMs === undefined ? [] : [String(options.commitIntervalMs)]
    const heap = options.heapMb === undefined ? [] : [`--max-old-space-size=${options.heapMb}`]
    this.child = spawn(process.execPath, [...heap, '--import', 'tsx', INSTANCE, ...args, name, workload, ...extra], { stdio: ['ignore', 'pipe', 'pipe'], env })
    createInterface({ input: this.child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      const report = JSON.parse(line) as { processed: number; tasks: string[]; restoring: string[]; standbys: Array<{ taskId: string; applied: number }>; state: string; positions: Record<string, number>; store?: Record<string, number>; heapUsed: number }
      this.processed = report.processed
      this.tasks = report.tasks
      this.restoring = report.restoring
      this.standbys = report.standbys
      this.state = report.state
      this.positions = report.positions
      this.store = report.store
      this.peakHeapUsed = Math.max(this.peakHeapUsed, report.heapUsed)
      this.reports++
    })
    const debug = process.env.PUNCTUAL_KAFKA_TEST_DEBUG === '1'
    createInterface({ input: this.child.stderr as NodeJS.ReadableStream }).on('line', (line) => {
      this.kept.push(line)
      if (this.kept.length > KEPT_LINES) this.kept.shift()
      const failed = / (instance|stop) failed: /.exec(line)
      if (failed !== null && this.failure === undefined) this.failure = line.slice(failed.index + 1)
      if (debug || failed !== null) process.stderr.write(`${line}\n`)
    })
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => {
        this.exit = code ?? (signal as NodeJS.Signals)
        resolve(this.exit)
      }),
    )
  }

  kill(signal: NodeJS.Signals): void {
    if (this.exit === undefined) this.child.kill(signal)
  }

  /** How the process ended if it did within `ms` of now; undefined if it still runs then. */
  async exitWithin(ms: number): Promise<number | NodeJS.Signals | undefined> {
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)))
    const how = await Promise.race([this.exited, timeout])
    clearTimeout(timer)
    return how
  }

  /** The last lines of its log. */
  log(): string {
    return this.kept.join('\n')
  }

  /** One line on what it reports now. */
  describe(): string {
    const ended = this.exit === undefined ? '' : `, exited (${this.exit})`
    const at = Object.entries(this.positions).map(([tp, offset]) => `${tp.slice(tp.lastIndexOf('-') + 1)}@${offset}`)
    return `${this.name}: ${this.state}, ${this.processed} records, tasks ${this.tasks.join(' ') || '-'}${at.length === 0 ? '' : ` (partitions at ${at.join(' ')})`}${this.restoring.length === 0 ? '' : `, restoring ${this.restoring.join(' ')}`}${ended}`
  }
}

/** Whether the tasks of these instances processed every record of `topic` up to `ends` (each partition's end offset). */
export function processedTo(instances: readonly Instance[], topic: string, ends: readonly number[]): boolean {
  const at = new Map<number, number>()
  for (const i of instances) for (const [tp, position] of Object.entries(i.positions)) if (tp.startsWith(`${topic}-`)) at.set(Number(tp.slice(topic.length + 1)), position)
  return ends.every((end, p) => at.get(p) === end)
}

/** Whether these instances share every task (each has some, none restores). */
export function sharing(instances: readonly Instance[], tasks: number): boolean {
  return instances.every((i) => i.tasks.length > 0 && i.restoring.length === 0) && instances.reduce((n, i) => n + i.tasks.length, 0) === tasks
}

/** The guarantees a test runs under: both, with either group protocol. */
export function guarantees(): ReadonlyArray<'exactly_once_v2' | 'at_least_once'> {
  return ['exactly_once_v2', 'at_least_once']
}
