import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { EmbeddedRuntime, PunctuationType, silentLogger, StateDescriptors, StreamsBuilder, Topology } from '../src/index.js'
import type { KeyedProcessorContext, Logger, ValueState } from '../src/index.js'
import { percentiles, preciseClock } from './stats.js'

export interface RestoreResult {
  readonly keys: number
  readonly timers: number
  readonly firstRunSeconds: number
  readonly commitMeanMs: number
  readonly commitMaxMs: number
  /** The part of a commit on the event loop (collecting changes, queuing the lmdb writes): per commit in all (mean), and the longest single hold. */
  readonly commitBlockingMeanMs: number
  readonly commitBlockingMaxMs: number
  readonly commits: number
  readonly restoreSeconds: number
}

export interface ChangelogRestoreResult {
  readonly keys: number
  readonly timers: number
  /** Changelog records the task was rebuilt from. */
  readonly records: number
  /** Revoking the task: a commit, then its checkpoint as changelog records. */
  readonly revokeSeconds: number
  /** Assigning it again: restored from those records until it processes. */
  readonly restoreSeconds: number
}

export interface CommitLatenessResult {
  readonly keys: number
  readonly commits: number
  readonly commitMeanMs: number
  readonly commitMaxMs: number
  readonly commitBlockingMeanMs: number
  readonly commitBlockingMaxMs: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly maxMs: number
  readonly fires: number
}

const TICK_MS = 100

/**
 * A keyed processor keeping one value and one event-time timer per key, with a 100 ms wall-clock
 * punctuation whose lateness (the wall clock at the call minus the grid point it was due at) goes to
 * `lateness`.
 */
function topology(lateness?: number[]): Topology {
  return new Topology().addSource('in', 'input').addKeyedProcessor<string, string>(
    'k',
    () => {
      let ctx: KeyedProcessorContext<string>
      let state: ValueState<number>
      return {
        init(c) {
          ctx = c
          state = c.getState(StateDescriptors.value<number>('v'))
          if (lateness === undefined) return
          let nextDue = Math.ceil(preciseClock.now() / TICK_MS) * TICK_MS + TICK_MS
          c.schedule({ type: PunctuationType.WALL_CLOCK_TIME, intervalMs: TICK_MS, startTime: nextDue - TICK_MS }, (now) => {
            lateness.push(now - nextDue)
            nextDue += (Math.floor((now - nextDue) / TICK_MS) + 1) * TICK_MS
          })
        },
        process(r) {
          state.update(r.timestamp)
          ctx.timers.registerEventTimeTimer(r.timestamp + 1_000_000_000)
        },
      }
    },
    'in',
  )
}

/** Writes `keys` records (one per key) through the runtime, keeping its backlog at one batch at most. */
async function writeKeys(runtime: EmbeddedRuntime, keys: number): Promise<void> {
  const p = runtime.producer<string, string>('input')
  // At most BACKLOG records ahead of processing, sent SEND_SLICE per event turn: the writer itself
  // holds the event loop no longer than that takes (a few ms), so punctuation lateness measures the runtime.
  const BACKLOG = 50_000
  const SEND_SLICE = 1_000
  for (let start = 0; start < keys; start += SEND_SLICE) {
    for (let i = start; i < Math.min(keys, start + SEND_SLICE); i++) p.send(`key-${i}`, 'v', i)
    await new Promise((r) => setImmediate(r))
    while (runtime.metrics().processedRecords < start - BACKLOG) await new Promise((r) => setImmediate(r))
  }
}

/**
 * Durable state at scale: one task with `keys` keys in value state and as many pending timers, written
 * by incremental commits; then the time a restart takes to restore them (start() of a new runtime, in a
 * process of its own).
 */
export async function restoreTime(keys = 1_000_000): Promise<RestoreResult> {
  const dir = join(mkdtempSync(join(tmpdir(), 'punctual-durable-')), 'state')
  const t0 = performance.now()
  const first = new EmbeddedRuntime(topology(), { applicationId: 'bench-durable', stateDir: dir, logger: silentLogger })
  await first.start()
  await writeKeys(first, keys)
  await first.stop()
  const firstRunSeconds = (performance.now() - t0) / 1000
  const stats = first.commitStats()
  // A restart is a new process: the restore runs in one, not in this one with the writing run's heap.
  const child = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), '--restore', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
  rmSync(dir, { recursive: true, force: true })
  if (child.status !== 0) throw new Error(`the restoring process failed (exit ${child.status})`)
  const restoreSeconds = (JSON.parse(child.stdout.trim().split('\n').at(-1) as string) as { restoreSeconds: number }).restoreSeconds
  return { keys, timers: keys, firstRunSeconds, commitMeanMs: stats.meanMs, commitMaxMs: stats.maxMs, commitBlockingMeanMs: stats.blockingMeanMs, commitBlockingMaxMs: stats.blockingMaxMs, commits: stats.commits, restoreSeconds }
}

/**
 * How late a wall-clock punctuation fires while durable commits of the restore benchmark's size run:
 * the same writing run, with a 100 ms schedule in the task. A commit collects the changes and queues
 * the lmdb writes on the event loop (lmdb writes them on its own thread), so a punctuation due then
 * waits for that part. The schedule's fires commit too (their last fire times must be durable), at
 * about the commit interval's pace.
 */
export async function latenessDuringCommits(keys = 1_000_000): Promise<CommitLatenessResult> {
  const dir = join(mkdtempSync(join(tmpdir(), 'punctual-durable-')), 'state')
  const lateness: number[] = []
  const rt = new EmbeddedRuntime(topology(lateness), { applicationId: 'bench-durable-lateness', stateDir: dir, clock: preciseClock, logger: silentLogger })
  await rt.start()
  await writeKeys(rt, keys)
  await rt.stop()
  rmSync(dir, { recursive: true, force: true })
  const stats = rt.commitStats()
  const p = percentiles(lateness)
  return { keys, commits: stats.commits, commitMeanMs: stats.meanMs, commitMaxMs: stats.maxMs, commitBlockingMeanMs: stats.blockingMeanMs, commitBlockingMaxMs: stats.blockingMaxMs, p50Ms: p.p50, p99Ms: p.p99, maxMs: p.max, fires: p.count }
}

/**
 * The same task rebuilt from changelog records instead of a state directory, as a task that moves to
 * another instance is: an in-memory run with `keys` keys and timers revokes the task (which keeps its
 * checkpoint as changelog records) and assigns it again, timed until it processes.
 */
export async function changelogRestoreTime(keys = 1_000_000): Promise<ChangelogRestoreResult> {
  let records = 0
  // The runtime logs how many records a restore read.
  const logger: Logger = {
    ...silentLogger,
    info: (fields) => void (typeof fields.records === 'number' && (records = fields.records)),
    child: () => logger,
  }
  const rt = new EmbeddedRuntime(topology(), { applicationId: 'bench-changelog', logger })
  await rt.start()
  await writeKeys(rt, keys)
  await rt.idle()
  let t0 = performance.now()
  await rt.revokeTasks(['0_0'])
  const revokeSeconds = (performance.now() - t0) / 1000
  t0 = performance.now()
  await rt.assignTasks(['0_0'])
  const restoreSeconds = (performance.now() - t0) / 1000
  await rt.stop()
  return { keys, timers: keys, records, revokeSeconds, restoreSeconds }
}

export interface CountKeysResult {
  readonly keys: number
  readonly recordsPerSecond: number
  readonly commits: number
  readonly commitMeanMs: number
  readonly commitBlockingMeanMs: number
  readonly commitBlockingMaxMs: number
}

/**
 * The DSL's count per key over `keys` distinct keys with a state directory, its store `storeType`: a
 * persistent one keeps its committed entries on disk (a read cache of 10,000 in memory), so every record
 * reads the disk for a key it has not seen, and each commit writes up to commitMaxRecords changed
 * counts; an in-memory one holds every count in the heap, and its commits write the same changes.
 */
export async function countKeys(keys: number, storeType: 'persistent' | 'inMemory'): Promise<CountKeysResult> {
  const dir = join(mkdtempSync(join(tmpdir(), 'punctual-durable-')), 'state')
  const b = new StreamsBuilder()
  b.stream<string, string>('input').groupByKey().count({ name: 'counts', storeType })
  const rt = new EmbeddedRuntime(b.build(), { applicationId: 'bench-count-keys', stateDir: dir, logger: silentLogger })
  await rt.start()
  const t0 = performance.now()
  await writeKeys(rt, keys)
  await rt.stop()
  const seconds = (performance.now() - t0) / 1000
  rmSync(dir, { recursive: true, force: true })
  const stats = rt.commitStats()
  return { keys, recordsPerSecond: keys / seconds, commits: stats.commits, commitMeanMs: stats.meanMs, commitBlockingMeanMs: stats.blockingMeanMs, commitBlockingMaxMs: stats.blockingMaxMs }
}

/** `--restore DIR`: times the start of a runtime on the writing run's state directory, printed as JSON. */
async function restoreProcess(dir: string): Promise<void> {
  const t0 = performance.now()
  const rt = new EmbeddedRuntime(topology(), { applicationId: 'bench-durable', stateDir: dir, logger: silentLogger })
  await rt.start()
  const restoreSeconds = (performance.now() - t0) / 1000
  await rt.stop()
  console.log(JSON.stringify({ restoreSeconds }))
}

if (process.argv[2] === '--restore') await restoreProcess(process.argv[3] as string)
