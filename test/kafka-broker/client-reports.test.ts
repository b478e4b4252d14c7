import assert from 'node:assert/strict'
import { createServer } from 'node:net'
import { describe, it } from 'node:test'
import { PunctualError, Serdes, StreamsBuilder } from '../../src/index.js'
import { KafkaRuntime } from '../../src/kafka/kafka-runtime.js'
import type { LogFields, Logger, LogLevel } from '../../src/util/logger.js'

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

// Needs the client, not the broker: the cluster here is one that cannot be reached.
describe('KafkaRuntime: a cluster out of reach', () => {
  it('fails its start naming the bootstrap servers, and every report of the client goes through the logger, once', async () => {
    const port = await closedPort()
    const lines: Array<{ level: LogLevel; fields: LogFields; message: string | undefined }> = []
    const make = (bindings: LogFields): Logger => {
      const at = (level: LogLevel) => (fields: LogFields, message?: string) => lines.push({ level, fields: { ...bindings, ...fields }, message })
      return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: (more) => make({ ...bindings, ...more }) }
    }
    const b = new StreamsBuilder()
    b.stream<string, string>('in', { keySerde: Serdes.String(), valueSerde: Serdes.String() }).to('out', { keySerde: Serdes.String(), valueSerde: Serdes.String() })
    const runtime = new KafkaRuntime(b.build(), { applicationId: 'unreachable', bootstrapServers: `127.0.0.1:${port}`, logger: make({}) })

    // What the client would print past the logger goes to the console.
    const printed: unknown[][] = []
    const saved = { log: console.log, info: console.info, warn: console.warn, error: console.error, debug: console.debug }
    for (const name of Object.keys(saved) as Array<keyof typeof saved>) console[name] = (...args: unknown[]) => void printed.push(args)
    try {
      await assert.rejects(runtime.start(), (err: unknown) => {
        assert.ok(err instanceof PunctualError, String(err))
        assert.equal(err.retriable, true)
        assert.match(err.message, new RegExp(`^no Kafka broker could be reached at bootstrapServers 127\\.0\\.0\\.1:${port} \\(Local: Broker transport failure; last connection failure: 127\\.0\\.0\\.1:${port}/bootstrap: Connect to ipv4#127\\.0\\.0\\.1:${port} failed: Connection refused\\)`))
        return true
      })
    } finally {
      Object.assign(console, saved)
    }
    assert.deepEqual(printed, [], 'nothing printed past the logger')
    const failures = lines.filter((l) => l.fields.fac === 'FAIL' && l.level !== 'debug')
    assert.deepEqual(
      failures.map((l) => [l.level, l.fields.client, l.fields.applicationId, l.message?.replace(/\(after \d+ms/, '(after Nms')]),
      [['warn', 'admin', 'unreachable', `127.0.0.1:${port}/bootstrap: Connect to ipv4#127.0.0.1:${port} failed: Connection refused (after Nms in state CONNECT)`]],
      'the refused connection told once',
    )
  })
})
