import { PunctualError } from '../errors.js'
import { inspectStateDirectory } from '../state/inspect.js'
import type { InspectedTask, StateDirectoryReport } from '../state/inspect.js'
import type { Io } from './scenario-command.js'

/** `punctual inspect STATE_DIR [--json]`: what a state directory holds. Returns the exit code. */
export async function inspectCommand(stateDir: string, opts: { json?: boolean }, io: Io): Promise<number> {
  let report: StateDirectoryReport
  try {
    report = inspectStateDirectory(stateDir)
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
  if (r.runtime === 'kafka') lines.push("a Kafka instance's tasks as of their last commit here; the changelog topics hold their state too, and a restore here reads only the changelog after the offsets below")
  lines.push(`last commit ${r.lastCommitAt?.toISOString() ?? 'none'}; checkpoints ${megabytes(r.checkpointBytes)}${r.pendingJournal ? `; a commit is in the journal (${r.live === undefined ? 'the next start applies it' : 'being applied'})` : ''}`)
  if (r.tasks.length === 0) lines.push('no task has committed yet')
  for (const t of r.tasks) lines.push(...describeTask(t))
  const topics = Object.entries(r.topicRecords)
  if (topics.length > 0) lines.push(`topics: ${topics.map(([topic, n]) => `${topic} ${n} records`).join(', ')}`)
  return lines
}

function describeTask(t: InspectedTask): string[] {
  const time = (ms: number | undefined): string => (ms === undefined ? 'none' : `${ms} (${new Date(ms).toISOString()})`)
  const lines = [`task ${t.taskId}`]
  if (t.changelog !== undefined) {
    const offsets = Object.entries(t.changelog.offsets)
    lines.push(`  committed ${t.changelog.writtenAt.toISOString()}; changelog ${offsets.length === 0 ? 'none' : offsets.map(([topic, o]) => `${topic} to ${o}`).join(', ')}`)
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
