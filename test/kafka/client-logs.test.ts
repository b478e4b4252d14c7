import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { PunctualError } from '../../src/errors.js'
import { ClientLog, levelOfSeverity, unreachable } from '../../src/kafka/client-logs.js'
import { validateKafkaRuntimeConfig } from '../../src/kafka/config.js'
import type { LogFields, Logger, LogLevel } from '../../src/util/logger.js'

interface Line {
  level: LogLevel
  fields: LogFields
  message: string | undefined
}

/** A logger that keeps its lines, with the bindings of its children among their fields. */
function capture(): { logger: Logger; lines: Line[] } {
  const lines: Line[] = []
  const make = (bindings: LogFields): Logger => {
    const at = (level: LogLevel) => (fields: LogFields, message?: string) => lines.push({ level, fields: { ...bindings, ...fields }, message })
    return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: (more) => make({ ...bindings, ...more }) }
  }
  return { logger: make({}), lines }
}

const refused = (after: string) => `[thrd:127.0.0.1:1/bootstrap]: 127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: Connection refused (${after})`

describe("the Kafka client's own reports", () => {
  it('map librdkafka’s syslog severities to logger levels: warning and above warn (the runtime reports what stops it), notice and info info, debug debug', () => {
    assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 7, undefined].map(levelOfSeverity), ['warn', 'warn', 'warn', 'warn', 'warn', 'info', 'info', 'debug', 'debug'])
  })

  it('tell a repeated connection failure once a minute, without the thread prefix, with the client and facility as fields', () => {
    let now = 0
    const { logger, lines } = capture()
    const log = new ClientLog(logger, 'consumer', () => now)
    log.line({ severity: 3, fac: 'FAIL', message: refused('after 0ms in state CONNECT') })
    now = 50
    log.line({ severity: 3, fac: 'FAIL', message: refused('after 1ms in state CONNECT, 1 identical error(s) suppressed') })
    // The error events that restate it, without the broker or the cause.
    log.error({ code: -1, message: 'broker transport failure' })
    log.error({ code: -1, message: 'all broker connections are down' })
    assert.deepEqual(
      lines.filter((l) => l.level !== 'debug'),
      [{ level: 'warn', fields: { client: 'consumer', fac: 'FAIL' }, message: '127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: Connection refused (after 0ms in state CONNECT)' }],
    )
    now = 61_000
    log.line({ severity: 3, fac: 'FAIL', message: refused('after 0ms in state CONNECT, 9 identical error(s) suppressed') })
    assert.equal(lines.filter((l) => l.level === 'warn').length, 2, 'told again after a minute')
    assert.equal(log.lastFailure(), '127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: Connection refused')
  })

  it('log other error events as warnings, and debug lines at debug', () => {
    const { logger, lines } = capture()
    const log = new ClientLog(logger, 'producer')
    log.error({ code: -181, message: 'Local: SSL error' })
    log.line({ severity: 7, fac: 'FETCH', message: '[thrd:main]: fetch' })
    log.line({ severity: 4, fac: 'CONFWARN', message: '[thrd:app]: Configuration property x is a consumer property and will be ignored' })
    assert.deepEqual(
      lines.map((l) => [l.level, l.message]),
      [
        ['warn', 'Kafka producer: Local: SSL error'],
        ['debug', 'fetch'],
        ['warn', 'Configuration property x is a consumer property and will be ignored'],
      ],
    )
    assert.equal(log.lastFailure(), undefined)
  })

  it('take the lines of the client’s JavaScript layer (its admin clients) instead of the console, its routine notes at debug', () => {
    const { logger, lines } = capture()
    const log = new ClientLog(logger, 'admin')
    const kafkaJs = log.kafkaJsLogger()
    kafkaJs.setLogLevel(1)
    kafkaJs.namespace().info('Admin client connected', { fac: 'BINDING', name: 'rdkafka#producer-2', timestamp: 1 })
    kafkaJs.error(refused('after 0ms in state CONNECT'), { fac: 'FAIL', name: 'rdkafka#producer-2', timestamp: 2 })
    kafkaJs.warn('something to know', { fac: 'X' })
    assert.deepEqual(
      lines.map((l) => [l.level, l.fields.fac, l.message]),
      [
        ['debug', 'BINDING', 'Admin client connected'],
        ['warn', 'FAIL', '127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: Connection refused (after 0ms in state CONNECT)'],
        ['warn', 'X', 'something to know'],
      ],
    )
    assert.equal(log.lastFailure(), '127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: Connection refused')
  })

  it('turn a transport failure into an error naming the bootstrap servers and the last connection failure', () => {
    const transport = Object.assign(new Error('Local: Broker transport failure'), { code: -195 })
    const err = unreachable(transport, 'kafka-1:9092,kafka-2:9092', '127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: Connection refused')
    assert.ok(err instanceof PunctualError)
    assert.equal(err.retriable, true)
    assert.equal(err.cause, transport)
    assert.equal(
      err.message,
      'no Kafka broker could be reached at bootstrapServers kafka-1:9092,kafka-2:9092 (Local: Broker transport failure; last connection failure: 127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: Connection refused): check the addresses, and that the brokers run and accept connections from this host',
    )
    const timedOut = Object.assign(new Error('Local: Timed out'), { code: -185 })
    assert.equal(unreachable(timedOut, 'k:9092', undefined), undefined, 'a timeout with no connection failure may be a slow cluster')
    assert.ok(unreachable(timedOut, 'k:9092', 'k:9092/bootstrap: Failed to resolve'))
    assert.equal(unreachable(Object.assign(new Error('Broker: Topic authorization failed'), { code: 29 }), 'k:9092', 'x'), undefined)
  })
})

describe('the Kafka runtime’s default error handler', () => {
  it('logs a record it skips (to the dead-letter topic) as one line with its topic, partition, offset and error, the stack only at debug', () => {
    const { logger, lines } = capture()
    const { errorHandler } = validateKafkaRuntimeConfig({ applicationId: 'app', bootstrapServers: 'localhost:9092', logger, deadLetterTopic: 'dlq' })
    const error = new SyntaxError('Unexpected token } in JSON at position 7')
    const message = `task 0_2: deserialization error at topic flights partition 2 offset 41: ${error.message}`
    assert.equal(errorHandler({ reason: 'deserialization', taskId: '0_2', topic: 'flights', partition: 2, offset: 41, error, message }), 'continue')
    const above = lines.filter((l) => l.level !== 'debug')
    assert.deepEqual(above, [
      {
        level: 'warn',
        fields: { applicationId: 'app', reason: 'deserialization', taskId: '0_2', processor: undefined, topic: 'flights', partition: 2, offset: 41, deadLetterTopic: 'dlq' },
        message: `${message}; skipped, written to dead-letter topic dlq and continuing`,
      },
    ])
    const debug = lines.filter((l) => l.level === 'debug')
    assert.equal(debug.length, 1)
    assert.equal(debug[0]?.fields.err, error, 'the stack at debug')
    // User code's exceptions still fail, as failOnUserCodeErrors decides.
    assert.equal(errorHandler({ reason: 'processing', taskId: '0_2', topic: 'flights', partition: 2, offset: 42, error: new Error('boom'), message: 'boom' }), 'fail')
    assert.equal(lines.length, 2)
  })
})
