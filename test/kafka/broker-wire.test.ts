import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { compressionsAlgorithms } from '@platformatic/kafka'
import { connectWire, isXerialFramed, parseBootstrap } from '../../src/kafka/broker-wire.js'

/** Snappy data as Kafka's Java producer writes it: snappy-java's framing around raw snappy blocks. */
function xerialFramed(blocks: Buffer[]): Buffer {
  const header = Buffer.alloc(16)
  Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]).copy(header)
  header.writeInt32BE(1, 8)
  header.writeInt32BE(1, 12)
  const framed = blocks.flatMap((b) => {
    const raw = compressionsAlgorithms.snappy.compressSync(b) as Buffer
    const length = Buffer.alloc(4)
    length.writeInt32BE(raw.length)
    return [length, raw]
  })
  return Buffer.concat([header, ...framed])
}

describe("the direct fetch's wire", () => {
  it('decompresses snappy as librdkafka writes it (raw) and as Java clients do (snappy-java framing, several blocks)', async () => {
    // No request is made: connections open on first use.
    const wire = await connectWire('127.0.0.1:9', 'test', undefined)
    const one = Buffer.from('a'.repeat(3000) + 'the first block')
    const two = Buffer.from('b'.repeat(2000) + 'the second block')
    const framed = xerialFramed([one, two])
    assert.ok(isXerialFramed(framed))
    assert.deepEqual(wire.decompress(2, framed), Buffer.concat([one, two]))
    const raw = compressionsAlgorithms.snappy.compressSync(one) as Buffer
    assert.ok(!isXerialFramed(raw))
    assert.deepEqual(wire.decompress(2, raw), one)
    assert.throws(() => wire.decompress(2, framed.subarray(0, framed.length - 3)), /corrupt snappy framing/)
    wire.close()
  })

  it('reads the bootstrap servers as librdkafka does, an IPv6 host in brackets', () => {
    assert.deepEqual(parseBootstrap('a.example:9092, 10.0.0.1:9093,[::1]:9094'), [
      { host: 'a.example', port: 9092 },
      { host: '10.0.0.1', port: 9093 },
      { host: '::1', port: 9094 },
    ])
  })
})
