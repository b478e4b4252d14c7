import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { PunctualError } from '../errors.js'
import { EmbeddedRuntime } from '../runtime/embedded-runtime.js'
import { KafkaRuntime } from '../kafka/kafka-runtime.js'
import type { ProcessingGuarantee } from '../kafka/config.js'
import type { PunctualApp } from '../runtime/app.js'
import { createConsoleLogger } from '../util/logger.js'
import type { Io } from './scenario-command.js'

/** Loads an app module; TypeScript files need tsx (a dev dependency of most TypeScript projects). */
/** An application module's default export; `command` names the command in errors. */
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

/** `punctual run APP --state-dir DIR`: runs an application durably in DIR until its input ends or a signal. */
export async function runApp(path: string, stateDir: string, io: Io): Promise<number> {
  const app = await loadApp(path)
  // The command says when the app starts, resumes and stops; the runtime's own logger (unless the app
  // brings one) speaks only of problems, so nothing is said twice.
  const logger = app.config?.logger ?? createConsoleLogger({ level: 'warn', write: io.err })
  const runtime = new EmbeddedRuntime(app.topology(), { ...(app.config ?? {}), logger, applicationId: app.applicationId, stateDir })
  const failed = new Promise<Error>((resolveFailure) => runtime.on('error', resolveFailure))
  runtime.start()
  io.err(runtime.resumed ? `punctual: ${app.applicationId} resumed from its state in ${stateDir}` : `punctual: ${app.applicationId} started with fresh state in ${stateDir}`)
  const abort = new AbortController()
  const signals = untilSignal()
  const fed = Promise.resolve(app.start?.(runtime, { resumed: runtime.resumed, signal: abort.signal }))
  // Without a start promise that ends, run until a signal.
  const ended = app.start === undefined ? new Promise<void>(() => {}) : fed
  const outcome = await Promise.race([ended.then(() => 'input ended'), signals.signalled, failed.then((e) => e)])
  abort.abort()
  signals.off()
  return stopAndReport(runtime, app.applicationId, outcome, `state kept in ${stateDir}`, io)
}

/** Stops the runtime unless it failed, and says why it stopped; the exit code (1: an error). */
async function stopAndReport(runtime: { stop(): Promise<void> }, applicationId: string, outcome: string | Error, stateIs: string, io: Io): Promise<number> {
  if (outcome instanceof Error) {
    io.err(`punctual: ${applicationId} stopped on an error: ${outcome.message}`)
    return 1
  }
  try {
    await runtime.stop()
  } catch (err) {
    io.err(`punctual: ${applicationId} stopped on an error: ${(err as Error).message}`)
    return 1
  }
  io.err(`punctual: ${applicationId} stopped (${outcome}); ${stateIs}`)
  return 0
}

/** Resolves with the name of the first SIGINT or SIGTERM; `off` stops listening. */
function untilSignal(): { signalled: Promise<string>; off: () => void } {
  let onSignal: ((sig: NodeJS.Signals) => void) | undefined
  const signalled = new Promise<string>((resolveSignal) => {
    onSignal = (sig) => resolveSignal(sig)
    process.once('SIGINT', onSignal)
    process.once('SIGTERM', onSignal)
  })
  return {
    signalled,
    off: () => {
      if (onSignal === undefined) return
      process.off('SIGINT', onSignal)
      process.off('SIGTERM', onSignal)
    },
  }
}

/**
 * `punctual run APP --kafka BOOTSTRAP`: runs the application as one instance on Kafka until a signal (its
 * input comes from its source topics; `start` is not called).
 */
export async function runKafkaApp(path: string, bootstrapServers: string, opts: { stateDir?: string; guarantee?: string }, io: Io): Promise<number> {
  const app = await loadApp(path)
  const logger = app.kafka?.logger ?? app.config?.logger ?? createConsoleLogger({ level: 'warn', write: io.err })
  const runtime = new KafkaRuntime(app.topology(), {
    ...(app.kafka ?? {}),
    logger,
    applicationId: app.applicationId,
    bootstrapServers,
    ...(opts.guarantee === undefined ? {} : { processingGuarantee: opts.guarantee as ProcessingGuarantee }),
    ...(opts.stateDir === undefined ? {} : { stateDir: opts.stateDir }),
  })
  const failed = new Promise<Error>((resolveFailure) => runtime.on('error', resolveFailure))
  await runtime.start()
  io.err(`punctual: ${app.applicationId} joined its group on ${bootstrapServers}`)
  const signals = untilSignal()
  const outcome = await Promise.race([signals.signalled, failed.then((e) => e)])
  signals.off()
  return stopAndReport(runtime, app.applicationId, outcome, 'its state is in its changelog topics', io)
}
