import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { EmbeddedRuntime, PunctualError, Topology } from '../../src/index.js'
import type { Logger, LogFields } from '../../src/index.js'
import { validateKafkaRuntimeConfig } from '../../src/kafka/config.js'
import { guardedLogger } from '../../src/util/logger.js'

/** A logger that keeps its lines, and throws on those whose message contains "boom". */
function picky(lines: string[], bindings: LogFields = {}): Logger {
  const log = (level: string) => (fields: LogFields, message?: string) => {
    if (message?.includes('boom') === true) throw new Error(`cannot take ${message}`)
    lines.push(`${level} ${message ?? ''} ${JSON.stringify({ ...bindings, ...fields })}`)
  }
  return { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error'), child: (more) => picky(lines, { ...bindings, ...more }) }
}

describe('the application logger', () => {
  it('a line the logger throws on goes to the fallback, with what it threw; the call returns and later lines reach the logger', () => {
    const lines: string[] = []
    const fallback: string[] = []
    const logger = guardedLogger(picky(lines), (line) => fallback.push(line))
    logger.info({ task: '0_1' }, 'tasks assigned')
    logger.error({ task: '0_1' }, 'boom in a client callback')
    logger.warn({}, 'after')
    assert.deepEqual(lines, ['info tasks assigned {"task":"0_1"}', 'warn after {}'])
    assert.equal(fallback.length, 1)
    assert.match(fallback[0] as string, /ERROR boom in a client callback \(task=0_1 loggerThrew="cannot take boom in a client callback"\)/)
  })

  it('its children are guarded too, and keep their bindings', () => {
    const lines: string[] = []
    const fallback: string[] = []
    const child = guardedLogger(picky(lines), (line) => fallback.push(line)).child?.({ applicationId: 'app' })
    assert.ok(child !== undefined)
    child.info({}, 'started')
    child.warn({}, 'boom')
    assert.deepEqual(lines, ['info started {"applicationId":"app"}'])
    assert.equal(fallback.length, 1)
  })

  it('a child the logger cannot make: the lines go to the logger without the bindings, and the fallback says why', () => {
    const lines: string[] = []
    const fallback: string[] = []
    const base = picky(lines)
    const logger = guardedLogger({ ...base, child: () => { throw new Error('no children here') } }, (line) => fallback.push(line))
    logger.child?.({ applicationId: 'app' }).info({}, 'started')
    assert.deepEqual(lines, ['info started {}'])
    assert.match(fallback[0] as string, /could not make a child logger.*loggerThrew="no children here"/)
  })

  it('a runtime given something that is not a logger refuses it, naming what is missing', () => {
    const topology = new Topology().addSource('in', 'in')
    const notLogger = { info: () => {}, warn: () => {} } as unknown as Logger
    assert.throws(() => new EmbeddedRuntime(topology, { applicationId: 'app', logger: notLogger }), (e: unknown) => e instanceof PunctualError && e.code === 'INVALID_CONFIG' && /logger must be a pino-compatible logger.*it has no method debug, error/.test(e.message))
    assert.throws(() => validateKafkaRuntimeConfig({ applicationId: 'app', bootstrapServers: 'localhost:9092', logger: 'pino' as unknown as Logger }), /logger must be a pino-compatible logger.*got string/)
  })
})
