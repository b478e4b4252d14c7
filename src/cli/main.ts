import { readFileSync } from 'node:fs'
import { Command, CommanderError, InvalidArgumentError } from 'commander'
import { describeError } from './errors.js'
import { inspectCommand } from './inspect-command.js'
import { topologyCommand } from './topology-command.js'
import { DEFAULT_UI_PORT, runApp, runKafkaApp } from './run-command.js'
import { scenarioRun } from './scenario-command.js'
import type { Io } from './scenario-command.js'

let stdio: Io | undefined

/**
 * Standard output and error. A reader that goes away (`punctual inspect DIR | head`) ends what is
 * printed there, quietly: the command goes on to its end and its exit code, with no EPIPE stack.
 */
function processIo(): Io {
  const lines = (stream: NodeJS.WriteStream): ((line: string) => void) => {
    let closed = false
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE' && err.code !== 'ERR_STREAM_DESTROYED') throw err
      closed = true
    })
    return (line) => {
      if (!closed) stream.write(line + '\n')
    }
  }
  return (stdio ??= { out: lines(process.stdout), err: lines(process.stderr) })
}

/** The package's version: `src/cli/` and `dist/cli/` both sit two folders below package.json. */
function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
  return pkg.version
}

/**
 * The `punctual` command line. Returns the exit code instead of exiting, so it is testable: 0, 1 when
 * the command failed (an application stopped on an error, a state directory that cannot be read), 2
 * when it could not begin (a wrong option, a module that is not an application or throws while loading).
 */
export async function main(argv: readonly string[], io: Io = processIo()): Promise<number> {
  let code = 0
  const program = new Command('punctual')
    .description('punctual: stateful stream processing for TypeScript whose strength is time')
    .version(packageVersion(), '-V, --version', 'print the version of punctual')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s.trimEnd()), writeErr: (s) => io.err(s.trimEnd()) })
  const scenario = program.command('scenario').description('conformance scenarios (the format: conformance/FORMAT.md in the package; scenarios: conformance/scenarios)')
  scenario
    .command('run')
    .description('run scenario files or folders; print outputs as JSON lines, or compare them with --check')
    .argument('<paths...>', 'scenario files or folders of them')
    .option('--check', 'compare outputs with each scenario\'s "expect" (exit 1 on a mismatch)')
    .option('--kinds <kinds>', 'only run scenarios of these kinds (comma-separated); others are skipped', (v) => v.split(',').map((s) => s.trim()))
    .action((paths: string[], opts: { check?: boolean; kinds?: string[] }) => {
      code = scenarioRun(paths, opts, io)
    })
  program
    .command('run')
    .description('run an application module durably: its state lives in --state-dir and survives restarts')
    .argument('<app>', 'a module whose default export is { applicationId, topology(), config?, start? }')
    .option('--state-dir <dir>', 'the state directory (created if missing; held exclusively while running); required without --kafka, with it .punctual/<applicationId> by default')
    .option('--kafka <bootstrap>', 'run on Apache Kafka (host:port[,host:port]) as one instance of the application: its consumer group shares the input partitions, its state is in changelog topics')
    .option('--guarantee <guarantee>', "with --kafka: 'at_least_once' (default) or 'exactly_once_v2'")
    .option('--ui', 'serve the live page (and Prometheus metrics at /metrics) while it runs, and print its address')
    .option('--port <port>', `with --ui: the live page's port (default ${DEFAULT_UI_PORT}; 0 takes a free one)`, parsePort)
    .action(async (app: string, opts: { stateDir?: string; kafka?: string; guarantee?: string; ui?: boolean; port?: number }) => {
      if (opts.port !== undefined && opts.ui !== true) {
        io.err('punctual run: --port is the live page\'s port; give --ui with it')
        code = 2
      } else if (opts.kafka !== undefined) code = await runKafkaApp(app, opts.kafka, opts, io)
      else if (opts.stateDir === undefined) {
        io.err("punctual run: --state-dir <dir> is required (or --kafka <bootstrap> to run on Kafka)")
        code = 2
      } else code = await runApp(app, opts.stateDir, io, opts)
    })
  program
    .command('topology')
    .description("print an application's topology (describe()), and with --svg draw it to a file")
    .argument('<app>', 'a module whose default export is { applicationId, topology(), ... }, as for run')
    .option('--svg <file>', 'write the topology as an SVG drawing')
    .action(async (app: string, opts: { svg?: string }) => {
      code = await topologyCommand(app, opts, io)
    })
  program
    .command('inspect')
    .description('what a state directory holds: its application, each task\'s stream time, input positions, punctuations, pending timers, keyed states and stores (read-only; a running application\'s too)')
    .argument('<state-dir>', 'the state directory')
    .option('--json', 'print the report as JSON')
    .action(async (stateDir: string, opts: { json?: boolean }) => {
      code = await inspectCommand(stateDir, opts, io)
    })
  try {
    await program.parseAsync([...argv])
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2
    io.err(describeError(err))
    return 2
  }
  return code
}

function parsePort(value: string): number {
  const port = Number(value)
  if (!/^\d+$/.test(value) || port > 65_535) throw new InvalidArgumentError('a port is an integer from 0 to 65535')
  return port
}
