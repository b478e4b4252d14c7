import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { open } from 'lmdb'
import { CheckpointStore } from '../../src/state/checkpoint-store.js'

describe('checkpoint store', () => {
  it('reads keyed entries written as msgpack records (with their record definitions) and as maps alike', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'punctual-checkpoints-'))
    // An entry as lmdb's default msgpack encoding writes it: the cell object as a record.
    const env = open({ path: join(stateDir, 'checkpoints'), compression: false, noSync: true })
    await env.openDB({ name: 'tasks' }).put('0_0', { streamTime: 7, lastFires: {}, positions: { 'in:0': 3 } })
    await env.openDB({ name: 'keyed' }).put(['s', '0_0', 'p/v', 'old'], ['old', 'value', { v: 5, a: 1 }])
    await env.close()

    const store = CheckpointStore.open(stateDir)
    await store.save(new Map([['0_0', { streamTime: 8, lastFires: {}, positions: { 'in:0': 4 } }]]), new Map([['0_0', { states: [{ state: 'p/v', key: 'new', kind: 'value', entries: { v: 6, a: 2 } }], timers: [] }]]))
    const reader = store.readTask('0_0', [])!
    assert.equal(reader.remaining(), 2)
    while (!reader.done) reader.readSome(1)
    assert.equal(reader.state?.streamTime, 8)
    assert.deepEqual(reader.keyed()?.states['p/v']?.entries, [
      ['new', { v: 6, a: 2 }],
      ['old', { v: 5, a: 1 }],
    ])
    assert.equal(reader.read, 2)
    assert.equal(store.readTask('0_1', []), undefined, 'a task with no commit has nothing to read')
    store.close()
  })
})
