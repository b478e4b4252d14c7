import { PunctualError } from '../errors.js'
import type { LogFields, Logger, LogLevel } from '../util/logger.js'

/** A log line of librdkafka (the client's `event.log`): its level is syslog's, 0 (emerg) to 7 (debug). */
export interface LibrdkafkaLogLine {
  severity?: number
  fac?: string
  message?: string
}

/**
 * The logger level of a librdkafka line by its syslog severity: warning and above (0-4) are warnings,
 * notice and info (5-6) info, debug (7, only with librdkafka's `debug` setting) debug; a line without a
 * severity is debug. None is an error: what librdkafka logs at err (a refused connection, a broker gone)
 * it retries, and what it logs as fatal (a fenced transactional producer) the runtime handles, replacing
 * the producer or stopping; the runtime reports what stops it itself, at error level, once.
 */
export function levelOfSeverity(severity: number | undefined): LogLevel {
  if (severity === undefined || !Number.isFinite(severity)) return 'debug'
  if (severity <= 4) return 'warn'
  if (severity <= 6) return 'info'
  return 'debug'
}

/**
 * librdkafka's error events that only restate, without the broker or the cause, what its log lines
 * (facility FAIL) have already said: a connection failed, every connection is down.
 */
const RESTATED_ERRORS = /^(local: )?(broker transport failure|all broker connections are down)$/i

/** How long a report with the same text stays told: librdkafka repeats a failure while it lasts. */
const REPEAT_MS = 60_000

/** What a repeated report is told by: without the thread prefix and the trailing counts ("after 0ms", "1 identical error(s) suppressed"). */
function sameReport(text: string): string {
  return withoutThread(text)
    .replace(/,? *\d+ identical error\(s\) suppressed/, '')
    .replace(/\s*\([^()]*\)\s*$/, '')
}

/** The text of a librdkafka line without its thread prefix. */
function withoutThread(text: string): string {
  return text.replace(/^\[thrd:[^\]]*\]:\s*/, '')
}

/** The logger of the client's JavaScript layer (KafkaJS' `Logger`), which its admin clients write to. */
export interface KafkaJsLogger {
  info(message: string, extra?: Record<string, unknown>): void
  warn(message: string, extra?: Record<string, unknown>): void
  error(message: string, extra?: Record<string, unknown>): void
  debug(message: string, extra?: Record<string, unknown>): void
  namespace(): KafkaJsLogger
  setLogLevel(level: number): void
}

/**
 * One Kafka client's own reports, on punctual's logger: librdkafka's log lines at the level their
 * severity maps to, its error events as warnings, and the lines of the client's JavaScript layer (its
 * admin clients print raw objects to the console otherwise). A warning or error with the same text is
 * told once a minute, and error events that restate a FAIL line are left at debug, so one failure is
 * one line. The last connection failure is kept, for an error that says why the cluster could not be
 * reached.
 */
export class ClientLog {
  private readonly logger: Logger
  private readonly told = new Map<string, number>()
  private failure: string | undefined

  constructor(
    logger: Logger,
    readonly client: string,
    private readonly now: () => number = Date.now,
  ) {
    this.logger = logger.child?.({ client }) ?? logger
  }

  /** A line of librdkafka's `event.log`. */
  line(log: LibrdkafkaLogLine): void {
    const text = withoutThread(log.message ?? '')
    const level = levelOfSeverity(log.severity)
    if (log.fac === 'FAIL' && level !== 'debug') this.failure = text
    this.tell(level, { fac: log.fac }, text)
  }

  /** A non-fatal error event (the client retries; a fatal one is the runtime's to handle). */
  error(err: { code?: number; message: string }): void {
    const level: LogLevel = RESTATED_ERRORS.test(err.message) ? 'debug' : 'warn'
    this.tell(level, { code: err.code }, `Kafka ${this.client}: ${err.message}`)
  }

  /** The last connection failure librdkafka logged ("host:port/bootstrap: Connect to ... failed: Connection refused"), if any. */
  lastFailure(): string | undefined {
    return this.failure === undefined ? undefined : sameReport(this.failure)
  }

  /** A KafkaJS logger for the client's JavaScript layer, mapped onto this one. */
  kafkaJsLogger(): KafkaJsLogger {
    const at = (severity: number) => (message: string, extra?: Record<string, unknown>) => {
      const fac = typeof extra?.fac === 'string' ? extra.fac : undefined
      // The layer's own notes ("Admin client connected") are routine.
      this.line({ severity: fac === 'BINDING' && severity > 4 ? 7 : severity, fac, message })
    }
    const adapter: KafkaJsLogger = {
      error: at(3),
      warn: at(4),
      info: at(6),
      debug: at(7),
      namespace: () => adapter,
      // Levels are punctual's logger's to filter.
      setLogLevel: () => {},
    }
    return adapter
  }

  private tell(level: LogLevel, fields: LogFields, message: string): void {
    if (level === 'warn' || level === 'error') {
      const key = sameReport(message)
      const now = this.now()
      if ((this.told.get(key) ?? -Infinity) > now - REPEAT_MS) return
      this.told.set(key, now)
    }
    this.logger[level](fields, message)
  }
}

/** librdkafka's errors of a cluster out of reach: a transport failure, every broker down, a call timed out. */
const TRANSPORT = -195
const ALL_BROKERS_DOWN = -187
const TIMED_OUT = -185

/**
 * The error to fail with when a call to the cluster failed because no broker could be reached: it names
 * the bootstrap servers and the last connection failure librdkafka logged, where librdkafka's own says
 * only "Local: Broker transport failure". Undefined for any other error. A call that timed out counts
 * only when a connection failed meanwhile (else the cluster may just be slow).
 */
export function unreachable(err: unknown, bootstrapServers: string, lastFailure: string | undefined): PunctualError | undefined {
  const code = (err as { code?: unknown } | null)?.code
  if (code !== TRANSPORT && code !== ALL_BROKERS_DOWN && !(code === TIMED_OUT && lastFailure !== undefined)) return undefined
  const message = err instanceof Error ? err.message : String((err as { message?: unknown }).message)
  const detail = lastFailure === undefined ? message : `${message}; last connection failure: ${lastFailure}`
  return new PunctualError(
    'ILLEGAL_STATE',
    `no Kafka broker could be reached at bootstrapServers ${bootstrapServers} (${detail}): check the addresses, and that the brokers run and accept connections from this host`,
    { cause: err, retriable: true },
  )
}
