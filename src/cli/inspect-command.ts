import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { PunctualError } from '../errors.js'
import { inspectStateDirectory } from '../state/inspect.js'
import type { InspectedTask, StateDirectoryReport } from '../state/inspect.js'
import { inspectKafkaStateDirectory } from './inspect-kafka.js'
import type { Io } from './scenario-command.js'

/** `punctual inspect STATE_DIR [--json]`: what a state directory holds. Returns the exit code. */
export async function inspectCommand(stateDir: string, opts: { json?: boolean }, io: Io): Promise<number> {
  let report: StateDirectoryReport
  try {
    // The embedded runtime opens its checkpoint store as it starts; a Kafka instance keeps none.
    report = existsSync(join(stateDir, 'punctual.json')) && !existsSync(join(stateDir, 'checkpoints', 'data.mdb')) ? await inspectKafkaStateDirectory(stateDir) : inspectStateDirectory(stateDir)
  } catch (err) {
    if (!(err instanceof PunctualError)) throw err
    io.err(`punctual inspect: ${err.message}`)
    return 1
  }
  if (opts.json === true) io.out(JSON.stringify(report, null, 2))
  else for (const line of describeReport(report)) io.out(line)
  return 0
}

function describeReport(r: StateDirectoryReport): string[] {
  const lines = [`state directory ${r.path}: application ${r.applicationId}, format ${r.format}${r.runtime === 'kafka' ? ', a Kafka instance' : ''}`]
  if (r.live !== undefined) {
    const who = r.live.thisProcess ? `a runtime in this process (pid ${r.live.pid})` : `process ${r.live.pid}`
    lines.push(`live: the application is running (${who}); this is its state as of the last commit when read, and it goes on changing`)
  }
  if (r.runtime === 'kafka') lines.push(...describeKafka(r))
  else {
    lines.push(`last commit ${r.lastCommitAt?.toISOString() ?? 'none'}; checkpoints ${megabytes(r.checkpointBytes)}${r.pendingJournal ? `; a commit is in the journal (${r.live === undefined ? 'the next start applies it' : 'being applied'})` : ''}`)
    if (r.tasks.length === 0) lines.push('no task has committed yet')
  }
  for (const t of r.tasks) lines.push(...describeTask(t))
  const topics = Object.entries(r.topicRecords)
  if (topics.length > 0) lines.push(`topics: ${topics.map(([topic, n]) => `${topic} ${n} records`).join(', ')}`)
  return lines
}

function describeKafka(r: StateDirectoryReport): string[] {
  const lines = ["its state is in the application's changelog topics; this directory holds a local checkpoint per task the instance gave up or held when it stopped, which shortens that task's next restore"]
  if (r.tasks.length === 0) lines.push('no task checkpoint: the instance has not given up a task or stopped since it started')
  else lines.push(`task checkpoints: ${r.tasks.length}, ${megabytes(r.checkpointBytes)}; the last written ${r.lastCommitAt?.toISOString() ?? 'never'}`)
  return lines
}

function describeTask(t: InspectedTask): string[] {
  const time = (ms: number | undefined): string => (ms === undefined ? 'none' : `${ms} (${new Date(ms).toISOString()})`)
  const lines = [`task ${t.taskId}`]
  if (t.checkpoint !== undefined) {
    const offsets = Object.entries(t.checkpoint.changelogOffsets)
    lines.push(`  checkpoint written ${t.checkpoint.writtenAt.toISOString()}, ${megabytes(t.checkpoint.bytes)}, ${t.checkpoint.records} records; changelog ${offsets.length === 0 ? 'none' : offsets.map(([topic, o]) => `${topic} to ${o}`).join(', ')}`)
  }
  lines.push(`  stream time ${time(t.streamTime)}`)
  const positions = Object.entries(t.positions)
  lines.push(`  input positions ${positions.length === 0 ? 'none' : positions.map(([p, o]) => `${p} at ${o}`).join(', ')}`)
  for (const [name, at] of Object.entries(t.lastFires)) lines.push(`  punctuation ${name} last fired ${time(at)}`)
  const { user, ttl } = t.timers
  lines.push(`  timers: user ${user.event} event-time, ${user.processing} processing-time; ttl ${ttl.event} event-time, ${ttl.processing} processing-time`)
  for (const [name, n] of Object.entries(t.keyedStates)) lines.push(`  keyed state ${name}: ${n} keys`)
  for (const [name, n] of Object.entries(t.stores)) lines.push(`  store ${name}: ${n} entries`)
  return lines
}

function megabytes(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(1)} MB`
}
