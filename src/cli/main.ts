import { readFileSync } from 'node:fs'
import { Command, CommanderError } from 'commander'
import { inspectCommand } from './inspect-command.js'
import { topologyCommand } from './topology-command.js'
import { runApp, runKafkaApp } from './run-command.js'
import { scenarioRun } from './scenario-command.js'
import type { Io } from './scenario-command.js'

const stdio: Io = {
  out: (line) => process.stdout.write(line + '\n'),
  err: (line) => process.stderr.write(line + '\n'),
}

/** The package's version: `src/cli/` and `dist/cli/` both sit two folders below package.json. */
function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
  return pkg.version
}

/** The `punctual` command line. Returns the exit code instead of exiting, so it is testable. */
export async function main(argv: readonly string[], io: Io = stdio): Promise<number> {
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
    .option('--state-dir <dir>', 'the state directory (created if missing; held exclusively while running); required without --kafka')
    .option('--kafka <bootstrap>', 'run on Apache Kafka (host:port[,host:port]) as one instance of the application: its consumer group shares the input partitions, its state is in changelog topics')
    .option('--guarantee <guarantee>', "with --kafka: 'at_least_once' (default) or 'exactly_once_v2'")
    .action(async (app: string, opts: { stateDir?: string; kafka?: string; guarantee?: string }) => {
      if (opts.kafka !== undefined) code = await runKafkaApp(app, opts.kafka, opts, io)
      else if (opts.stateDir === undefined) {
        io.err("punctual run: --state-dir <dir> is required (or --kafka <bootstrap> to run on Kafka)")
        code = 2
      } else code = await runApp(app, opts.stateDir, io)
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
    .description('what a state directory holds: its application, each task\'s stream time, input positions, punctuations, pending timers, keyed states and stores (read-only; refused while a process holds it)')
    .argument('<state-dir>', 'the state directory')
    .option('--json', 'print the report as JSON')
    .action((stateDir: string, opts: { json?: boolean }) => {
      code = inspectCommand(stateDir, opts, io)
    })
  try {
    await program.parseAsync([...argv])
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2
    throw err
  }
  return code
}
