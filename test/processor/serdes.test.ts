import assert from 'node:assert/strict'
import { isUtf8 } from 'node:buffer'
import { test } from 'node:test'
import fc from 'fast-check'
import { PunctualError } from '../../src/errors.js'
import { checkWritable, Serdes } from '../../src/processor/serdes.js'
import type { Serde } from '../../src/processor/serdes.js'

const string = Serdes.String()

test('String reads back any string it wrote, U+FFFD included', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'binary' }), (s) => {
      assert.equal(string.deserialize(string.serialize(s, 't'), 't'), s)
    }),
  )
  assert.equal(string.deserialize(string.serialize('a\uFFFDb', 't'), 't'), 'a\uFFFDb')
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
      if (isUtf8(buf)) assert.equal(string.deserialize(buf, 't'), buf.toString('utf8'))
      else assert.throws(() => string.deserialize(buf, 'flights'), new RegExp(`invalid UTF-8 in a ${buf.byteLength}-byte string on topic flights`))
    }),
    { numRuns: 2000 },
  )
  for (const bad of [[0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0x80], [0x61, 0xef, 0xbf]]) assert.throws(() => string.deserialize(Uint8Array.from(bad), 't'), /invalid UTF-8/)
  assert.equal(string.deserialize(Uint8Array.from([0xef, 0xbf, 0xbd]), 't'), '\uFFFD')
})

test('checkWritable refuses a key or value a built-in serde cannot write, naming the target, the key and the type it takes', () => {
  const refused = (serde: Serde<unknown>, part: 'key' | 'value', data: unknown, message: RegExp): void => {
    assert.throws(
      () => checkWritable(serde, part, data, part === 'key' ? data : 'k1', 'topic', 'words', 'producer'),
      (err: unknown) => err instanceof PunctualError && err.code === 'INVALID_ARGUMENT' && message.test(err.message),
    )
  }
  refused(Serdes.String() as Serde<unknown>, 'key', 42, /^producer: topic "words" cannot take key 42: its key serde Serdes\.String\(\) takes a string$/)
  refused(Serdes.String() as Serde<unknown>, 'value', undefined, /topic "words" cannot take value undefined of key "k1": its value serde Serdes\.String\(\) takes a string/)
  refused(Serdes.Double() as Serde<unknown>, 'value', '1.5', /value "1\.5" of key "k1": its value serde Serdes\.Double\(\) takes a number/)
  refused(Serdes.Integer() as Serde<unknown>, 'value', 2 ** 31, /Serdes\.Integer\(\) takes a 32-bit integer/)
  refused(Serdes.Long() as Serde<unknown>, 'key', 1.5, /key 1\.5: its key serde Serdes\.Long\(\) takes a safe integer/)
  refused(Serdes.Bytes() as Serde<unknown>, 'value', 'text', /Serdes\.Bytes\(\) takes a Uint8Array/)
  refused(Serdes.JSON() as Serde<unknown>, 'value', 10n, /value 10n of key "k1": its value serde Serdes\.JSON\(\) takes a JSON value/)
  // What fits passes, null (a tombstone) always, and a serde of the application's own is its own judge.
  checkWritable(Serdes.String() as Serde<unknown>, 'key', 'a', 'a', 'topic', 'words')
  checkWritable(Serdes.String() as Serde<unknown>, 'key', null, null, 'topic', 'words')
  checkWritable(Serdes.Double() as Serde<unknown>, 'value', NaN, 'a', 'topic', 'words')
  checkWritable(Serdes.Bytes() as Serde<unknown>, 'value', Buffer.from('x'), 'a', 'topic', 'words')
  checkWritable(Serdes.JSON() as Serde<unknown>, 'value', { a: [1] }, 'a', 'topic', 'words')
  checkWritable({ name: 'Custom', serialize: () => null, deserialize: () => null }, 'key', 42, 42, 'topic', 'words')
})

test('Bytes gives back a copy of bytes that are a view of a larger buffer (a fetched response), and whole buffers as they are', () => {
  const response = Buffer.from('....the value....')
  const view = response.subarray(4, 13)
  const read = Serdes.Bytes().deserialize(view, 't') as Uint8Array
  assert.deepEqual(Buffer.from(read), Buffer.from('the value'))
  assert.notEqual(read.buffer, response.buffer, 'does not hold the response')
  const whole = new Uint8Array([1, 2, 3])
  assert.equal(Serdes.Bytes().deserialize(whole, 't'), whole)
  assert.equal(Serdes.Bytes().deserialize(null, 't'), null)
})
