import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { ChangelogTopics } from '../../src/kafka/changelog-topics.js'
import { KEYED_STATE_STORE_PREFIX, TASK_STORE, TIMER_STORE } from '../../src/runtime/changelog-records.js'

describe('changelog records on Kafka topics', () => {
  const topics = new ChangelogTopics('app', 1, ['counts-store', 'window-store'])

  it("sends a store's records to its own topic as they are, and punctual's parts to the sub-topology's topic", () => {
    assert.deepEqual(topics.topics(), ['app-counts-store-changelog', 'app-window-store-changelog', 'app-punctual-1-changelog'])
    const store = topics.toMessage({ store: 'counts-store', key: Uint8Array.of(1, 2), value: Uint8Array.of(3) })
    assert.deepEqual(store, { topic: 'app-counts-store-changelog', key: Buffer.of(1, 2), value: Buffer.of(3) })
    const timer = topics.toMessage({ store: TIMER_STORE, key: Uint8Array.of(9), value: null })
    assert.equal(timer.topic, 'app-punctual-1-changelog')
    assert.deepEqual(timer.key, Buffer.concat([Buffer.of(0, TIMER_STORE.length), Buffer.from(TIMER_STORE), Buffer.of(9)]))
    assert.equal(timer.value, null)
    assert.throws(() => topics.toMessage({ store: 'other', key: Uint8Array.of(), value: null }), /store "other", which the sub-topology does not have/)
  })

  it('reads back every record it sends (property)', () => {
    const store = fc.constantFrom('counts-store', 'window-store', TASK_STORE, TIMER_STORE, `${KEYED_STATE_STORE_PREFIX}proc/state`, `${KEYED_STATE_STORE_PREFIX}p/é ü`)
    const bytes = fc.uint8Array({ maxLength: 40 })
    fc.assert(
      fc.property(store, bytes, fc.option(bytes), (s, key, value) => {
        const m = topics.toMessage({ store: s, key, value })
        const back = topics.fromMessage(m.topic, m.key, m.value)
        assert.equal(back.store, s)
        assert.deepEqual(Buffer.from(back.key), Buffer.from(key))
        assert.deepEqual(back.value === null ? null : Buffer.from(back.value), value === null ? null : Buffer.from(value))
      }),
    )
  })

  it('refuses a malformed key on the shared topic, and a topic not its own', () => {
    assert.throws(() => topics.fromMessage('app-punctual-1-changelog', Buffer.of(0, 50, 1), null), /a record key is malformed \(3 bytes\)/)
    assert.throws(() => topics.fromMessage('app-punctual-1-changelog', Buffer.concat([Buffer.of(0, 3), Buffer.from('abc')]), null), /names the part "abc", which is not punctual's/)
    assert.throws(() => topics.fromMessage('app-x-changelog', Buffer.of(), null), /app-x-changelog is not a changelog topic of this sub-topology/)
  })
})
