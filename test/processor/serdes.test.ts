import assert from 'node:assert/strict'
import { isUtf8 } from 'node:buffer'
import { test } from 'node:test'
import fc from 'fast-check'
import { Serdes } from '../../src/processor/serdes.js'

const string = Serdes.String()

test('String reads back any string it wrote, U+FFFD included', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'binary' }), (s) => {
      assert.equal(string.deserialize('t', string.serialize('t', s)), s)
    }),
  )
  assert.equal(string.deserialize('t', string.serialize('t', 'a\uFFFDb')), 'a\uFFFDb')
})

test('String refuses exactly the bytes that are not UTF-8, naming the topic', () => {
  // Mostly-valid bytes with a stray one make the interesting cases: truncated and overlong sequences,
  // lone continuation bytes, surrogates, and the encoded U+FFFD itself (EF BF BD).
  const bytes = fc.oneof(
    fc.uint8Array({ maxLength: 12 }),
    fc.tuple(fc.string({ unit: 'binary', maxLength: 6 }), fc.uint8Array({ minLength: 1, maxLength: 3 }), fc.string({ unit: 'binary', maxLength: 6 })).map(([a, b, c]) => Buffer.concat([Buffer.from(a), b, Buffer.from(c)])),
  )
  fc.assert(
    fc.property(bytes, (b) => {
      const buf = Buffer.from(b)
      if (isUtf8(buf)) assert.equal(string.deserialize('t', buf), buf.toString('utf8'))
      else assert.throws(() => string.deserialize('flights', buf), new RegExp(`invalid UTF-8 in a ${buf.byteLength}-byte string on topic flights`))
    }),
    { numRuns: 2000 },
  )
  for (const bad of [[0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0x80], [0x61, 0xef, 0xbf]]) assert.throws(() => string.deserialize('t', Uint8Array.from(bad)), /invalid UTF-8/)
  assert.equal(string.deserialize('t', Uint8Array.from([0xef, 0xbf, 0xbd])), '\uFFFD')
})
