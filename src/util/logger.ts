import { format } from 'node:util'

/** Structured fields of a log line. An `err` field holds an Error, logged with its stack and causes. */
export type LogFields = Record<string, unknown>

/**
 * Where punctual writes diagnostics: any pino-compatible logger (pino itself, or one with the same
 * `level(fields, message)` shape). punctual always passes the fields first, as pino expects, and an
 * Error under `err`. When the logger has `child`, the runtime binds its application id with it.
 */
export interface Logger {
  /** Detail for diagnosing: the steps of a group rebalance, the error of each record skipped, the clients' own debug lines. */
  debug(fields: LogFields, message?: string): void
  /** What an operator wants to see: the runtime starting and stopping, tasks assigned and restored. */
  info(fields: LogFields, message?: string): void
  /** Something went wrong and punctual goes on: a skipped record, a client's warning, a retry. */
  warn(fields: LogFields, message?: string): void
  /** Something that stops the application or loses work: a failure, a commit that did not complete. */
  error(fields: LogFields, message?: string): void
  /** A logger that adds `bindings` to every line (pino's `child`); optional. */
  child?(bindings: LogFields): Logger
}

/** The levels punctual logs at, lowest first. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error'

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 }

/** Options of {@link createConsoleLogger}. */
export interface ConsoleLoggerOptions {
  /** Lines below this level are not written. @default 'info' */
  level?: LogLevel
  /** Where lines go. @default standard error */
  write?: (line: string) => void
}

/**
 * A logger that writes one readable line per event: time, level, message, then the fields as
 * `key=value`; an `err` field adds its stack and the chain of causes on the lines below.
 */
export function createConsoleLogger(options: ConsoleLoggerOptions = {}): Logger {
  const min = RANK[options.level ?? 'info']
  const write = options.write ?? ((line: string) => process.stderr.write(line + '\n'))
  const make = (bindings: LogFields): Logger => {
    const log = (level: LogLevel) => (fields: LogFields, message?: string) => {
      if (RANK[level] < min) return
      write(formatLine(level, { ...bindings, ...fields }, message))
    }
    return { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error'), child: (more) => make({ ...bindings, ...more }) }
  }
  return make({})
}

function formatLine(level: LogLevel, fields: LogFields, message: string | undefined): string {
  const { err, ...rest } = fields
  const pairs = Object.entries(rest)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${typeof v === 'string' && !/[\s"]/.test(v) ? v : format('%j', v)}`)
  let line = `${new Date().toISOString()} ${level.toUpperCase().padEnd(5)} ${message ?? ''}${pairs.length > 0 ? ` (${pairs.join(' ')})` : ''}`
  for (let e: unknown = err, depth = 0; e !== undefined && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const text = e instanceof Error ? (e.stack ?? `${e.name}: ${e.message}`) : format('%o', e)
    line += `\n  ${depth === 0 ? '' : 'caused by: '}${text.replace(/\n/g, '\n  ')}`
    if (!(e instanceof Error)) break
  }
  return line
}

/** What keeps `value` from being a {@link Logger} (a missing method), or undefined when it is one. */
export function notALogger(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return `got ${value === null ? 'null' : typeof value}`
  const missing = (['debug', 'info', 'warn', 'error'] as const).filter((m) => typeof (value as Partial<Logger>)[m] !== 'function')
  return missing.length === 0 ? undefined : `it has no method ${missing.join(', ')}`
}

/**
 * The application's logger, made safe to call from anywhere: a line it throws on is written to
 * `fallback` (standard error) instead, with what the logger threw, and the call returns. punctual logs
 * from inside the Kafka client's event callbacks, where an exception breaks the client itself (its admin
 * connection then reports only "not connected", hiding the cause).
 */
export function guardedLogger(logger: Logger, fallback: (line: string) => void = (line) => process.stderr.write(line + '\n')): Logger {
  const refused = (level: LogLevel, fields: LogFields, message: string | undefined, err: unknown): void =>
    fallback(formatLine(level, { ...fields, loggerThrew: err instanceof Error ? err.message : String(err) }, message))
  const call = (level: LogLevel) => (fields: LogFields, message?: string) => {
    try {
      logger[level](fields, message)
    } catch (err) {
      refused(level, fields, message, err)
    }
  }
  const guarded: Logger = { debug: call('debug'), info: call('info'), warn: call('warn'), error: call('error') }
  const child = logger.child
  if (child !== undefined) {
    guarded.child = (bindings) => {
      try {
        return guardedLogger(child.call(logger, bindings), fallback)
      } catch (err) {
        refused('warn', bindings, 'the logger could not make a child logger: lines go to it without these bindings', err)
        return guarded
      }
    }
  }
  return guarded
}

/** The default logger: readable lines on standard error, from level info. */
export const consoleLogger: Logger = createConsoleLogger()

const nothing = (): void => {}

/** A logger that writes nothing. */
export const silentLogger: Logger = { debug: nothing, info: nothing, warn: nothing, error: nothing, child: () => silentLogger }
