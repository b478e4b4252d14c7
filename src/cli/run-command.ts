import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { PunctualError } from '../errors.js'
import { EmbeddedRuntime } from '../embedded/embedded-runtime.js'
import { KafkaRuntime } from '../kafka/kafka-runtime.js'
import type { ProcessingGuarantee } from '../kafka/config.js'
import type { PunctualApp } from './app.js'
import { createConsoleLogger } from '../util/logger.js'
import type { Io } from './scenario-command.js'
import { describeError } from './errors.js'
import type { StreamsRuntime } from '../runtime/runtime.js'

/** An application module's default export; `command` names the command in errors. TypeScript files need tsx (a dev dependency of most TypeScript projects). */
export async function loadApp(path: string, command = 'run'): Promise<PunctualApp> {
  const file = resolve(path)
  if (/\.[cm]?ts$/.test(file)) {
    try {
      const tsx = (await import('tsx/esm/api')) as { register: () => unknown }
      tsx.register()
    } catch (err) {
      throw new PunctualError('INVALID_CONFIG', `punctual ${command}: ${path} is TypeScript; install tsx or run a compiled .js file (${(err as Error).message})`, { cause: err })
    }
  }
  const mod = (await import(pathToFileURL(file).href)) as { default?: PunctualApp }
  const app = mod.default
  if (app === undefined || typeof app !== 'object' || typeof app.applicationId !== 'string' || typeof app.topology !== 'function') {
    throw new PunctualError('INVALID_CONFIG', `punctual ${command}: ${path} must export default { applicationId, topology(), config?, start? }`)
  }
  return app
}

/** What `punctual run` serves besides running: the live page (`--ui`, on `--port`). */
export interface RunOptions {
  readonly ui?: boolean
  /** The live page's port; 0 takes a free one. */
  readonly port?: number
}

/** Why a run ended. */
type Outcome =
  | { readonly kind: 'input ended' }
  | { readonly kind: 'signal'; readonly signal: string }
  | { readonly kind: 'start failed'; readonly error: unknown }
  | { readonly kind: 'failed'; readonly error: Error }

/** `punctual run APP --state-dir DIR`: runs an application durably in DIR until its input ends or a signal. */
export async function runApp(path: string, stateDir: string, io: Io, opts: RunOptions = {}): Promise<number> {
  const app = await loadApp(path)
  // The command says when the app starts, resumes and stops; the runtime's own logger (unless the app
  // brings one) speaks only of problems, so nothing is said twice.
  const logger = app.config?.logger ?? createConsoleLogger({ level: 'warn', write: io.err })
  const runtime = new EmbeddedRuntime(app.topology(), { ...(app.config ?? {}), ...metricsSetting(opts), logger, applicationId: app.applicationId, stateDir })
  const failed = new Promise<Outcome>((resolveFailure) => runtime.on('error', (error) => resolveFailure({ kind: 'failed', error })))
  try {
    await runtime.start()
  } catch (err) {
    // Nothing runs when start fails: there is nothing to stop.
    io.err(`punctual: ${app.applicationId} cannot start: ${describeError(err)}`)
    return 1
  }
  // Listening before saying it started: whoever sees the line may signal at once.
  const signals = untilSignal()
  io.err(runtime.resumed ? `punctual: ${app.applicationId} resumed from its state in ${stateDir}` : `punctual: ${app.applicationId} started with fresh state in ${stateDir}`)
  const abort = new AbortController()
  let outcome: Outcome
  try {
    if (opts.ui === true) await announcePage(runtime, io)
    // Without a start promise that ends, run until a signal. A port the page cannot have has failed the
    // runtime: the app is not started on it. A start that throws has failed, as one whose promise rejects.
    const start = app.start === undefined || runtime.state !== 'RUNNING' ? undefined : app.start.bind(app)
    const ended = start === undefined ? new Promise<never>(() => {}) : new Promise<void>((resolveFed) => resolveFed(start(runtime, { resumed: runtime.resumed, signal: abort.signal })))
    outcome = await Promise.race([ended.then((): Outcome => ({ kind: 'input ended' }), (error: unknown): Outcome => ({ kind: 'start failed', error })), signals.signalled, failed])
  } finally {
    abort.abort()
    signals.off()
  }
  return stopAndReport(runtime, app.applicationId, outcome, `state kept in ${stateDir}`, io)
}

/** The runtime's `metrics` setting for `--ui [--port N]` (the live page is served with the metrics). */
function metricsSetting(opts: RunOptions): { metrics?: { port: number } } {
  return opts.ui === true ? { metrics: { port: opts.port ?? DEFAULT_UI_PORT } } : {}
}

/** The live page's port unless `--port` says otherwise: the Prometheus exporter's customary one, as the demo uses. */
export const DEFAULT_UI_PORT = 9464

/** Prints where the live page is, once it listens (a port it cannot have fails the runtime, which ends the run). */
async function announcePage(runtime: Pick<StreamsRuntime, 'metricsAddress'>, io: Io): Promise<void> {
  const address = await runtime.metricsAddress()
  if (address !== undefined) io.err(`punctual: live page at ${address.pageUrl} (Prometheus metrics at ${address.url})`)
}

/**
 * Stops the runtime unless it failed, and says why it stopped; the exit code (1: an error). Input that
 * ended is processed to its end first; a signal or a failed start stops after committing what was
 * processed, since a backlog may take long to drain and whoever pressed Ctrl-C wants it to stop.
 */
async function stopAndReport(runtime: Pick<StreamsRuntime, 'stop'>, applicationId: string, outcome: Outcome, stateIs: string, io: Io): Promise<number> {
  if (outcome.kind === 'failed') {
    io.err(`punctual: ${applicationId} stopped on an error: ${describeError(outcome.error)}`)
    return 1
  }
  try {
    await runtime.stop({ drain: outcome.kind === 'input ended' })
  } catch (err) {
    io.err(`punctual: ${applicationId} stopped on an error: ${describeError(err)}`)
    return 1
  }
  if (outcome.kind === 'start failed') {
    io.err(`punctual: ${applicationId} stopped: its start failed: ${describeError(outcome.error)}; ${stateIs}`)
    return 1
  }
  io.err(`punctual: ${applicationId} stopped (${outcome.kind === 'signal' ? outcome.signal : outcome.kind}); ${stateIs}`)
  return 0
}

/** Resolves with the first SIGINT or SIGTERM; `off` stops listening. */
function untilSignal(): { signalled: Promise<Outcome>; off: () => void } {
  let onSignal: ((sig: NodeJS.Signals) => void) | undefined
  const signalled = new Promise<Outcome>((resolveSignal) => {
    onSignal = (signal) => resolveSignal({ kind: 'signal', signal })
    process.once('SIGINT', onSignal)
    process.once('SIGTERM', onSignal)
  })
  // A signal listener does not keep the process alive, and an idle runtime (no input, nothing scheduled)
  // holds nothing open: this timer keeps the process waiting for the signal.
  const keepAlive = setInterval(() => {}, 2 ** 30)
  return {
    signalled,
    off: () => {
      clearInterval(keepAlive)
      if (onSignal === undefined) return
      process.off('SIGINT', onSignal)
      process.off('SIGTERM', onSignal)
    },
  }
}

/**
 * Where `punctual run APP --kafka` keeps an instance's local state without `--state-dir`: a lasting
 * place, `.punctual/<applicationId>` under the working directory, so that a restart reads its local
 * state and the changelogs' tails rather than the whole changelogs (Kafka Streams' `state.dir` is a fixed place too).
 */
export function defaultKafkaStateDir(applicationId: string, cwd: string = process.cwd()): string {
  return resolve(cwd, '.punctual', applicationId)
}

/**
 * `punctual run APP --kafka BOOTSTRAP`: runs the application as one instance on Kafka until a signal (its
 * input comes from its source topics; `start` is not called, `startOnKafka` runs beside it).
 */
export async function runKafkaApp(path: string, bootstrapServers: string, opts: { stateDir?: string; guarantee?: string } & RunOptions, io: Io): Promise<number> {
  const app = await loadApp(path)
  const stateDir = opts.stateDir ?? defaultKafkaStateDir(app.applicationId)
  const logger = app.kafka?.logger ?? app.config?.logger ?? createConsoleLogger({ level: 'warn', write: io.err })
  const runtime = new KafkaRuntime(app.topology(), {
    ...(app.kafka ?? {}),
    ...metricsSetting(opts),
    logger,
    applicationId: app.applicationId,
    bootstrapServers,
    ...(opts.guarantee === undefined ? {} : { processingGuarantee: opts.guarantee as ProcessingGuarantee }),
    stateDir,
  })
  const failed = new Promise<Outcome>((resolveFailure) => runtime.on('error', (error) => resolveFailure({ kind: 'failed', error })))
  try {
    await runtime.start()
  } catch (err) {
    // A start that fails has shut down what it opened.
    io.err(`punctual: ${app.applicationId} cannot start: ${describeError(err)}`)
    return 1
  }
  const signals = untilSignal()
  io.err(`punctual: ${app.applicationId} joined its group on ${bootstrapServers}; local state in ${stateDir}`)
  const abort = new AbortController()
  let outcome: Outcome
  try {
    if (opts.ui === true) await announcePage(runtime, io)
    // The hook settling does not end the run (the input is the topics'); its failure does.
    const hook = app.startOnKafka === undefined || runtime.state !== 'RUNNING' ? undefined : app.startOnKafka.bind(app)
    const hookFailed =
      hook === undefined
        ? new Promise<never>(() => {})
        : new Promise<void>((resolveHook) => resolveHook(hook(runtime, { signal: abort.signal }))).then(
            () => new Promise<never>(() => {}),
            (error: unknown): Outcome => ({ kind: 'start failed', error }),
          )
    outcome = await Promise.race([signals.signalled, failed, hookFailed])
  } finally {
    abort.abort()
    signals.off()
  }
  return stopAndReport(runtime, app.applicationId, outcome, `its state is in its changelog topics, its local state in ${stateDir}`, io)
}
