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
    assert.equal(reader.state?.streamTime, 8)
    assert.equal(reader.remaining(), 0, 'keyed state stays on disk: the restore reads none of it')
    const onDisk = store.keyedStateDisk('0_0', 'p/v')!
    assert.equal(onDisk.kind, 'value')
    assert.deepEqual(onDisk.disk.get('old'), { v: 5, a: 1 })
    assert.deepEqual(onDisk.disk.get('new'), { v: 6, a: 2 })
    assert.equal(onDisk.disk.get('other'), undefined)
    assert.deepEqual(
      [...onDisk.disk.entries()],
      [
        ['new', { v: 6, a: 2 }],
        ['old', { v: 5, a: 1 }],
      ],
    )
    assert.equal(store.keyedStateDisk('0_0', 'p/v2'), undefined, 'a state with no entries has no disk')
    assert.equal(store.readTask('0_1', []), undefined, 'a task with no commit has nothing to read')
    store.close()
  })
})

describe('checkpoint store timers', () => {
  it('reads timers in firing order, and rewrites timers of the earlier layout when it opens', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'punctual-checkpoints-'))
    // The earlier layout: ['t', task, kind, domain, owner, key, timestamp] -> [key, seq].
    const env = open({ path: join(stateDir, 'checkpoints'), compression: false, noSync: true })
    await env.openDB({ name: 'tasks' }).put('0_0', { streamTime: 7, lastFires: {}, positions: {} })
    const old = env.openDB({ name: 'keyed', useRecords: false } as { name: string })
    await old.put(['t', '0_0', 'user', 'event', 'p', 'b', 20], ['b', 3])
    await old.put(['t', '0_0', 'user', 'event', 'p', 'a', 20], ['a', 4])
    await old.put(['t', '0_0', 'ttl', 'processing', 'p/v', '\u0000n5', 10], [5n, 1])
    await old.put(['t', '0_0', 'user', 'event', 'p', 'c', 5], ['c', 9])
    await env.close()

    const store = CheckpointStore.open(stateDir)
    const read = (): unknown => {
      const reader = store.readTask('0_0', [])!
      while (!reader.done) reader.readSome(2)
      return reader.keyed()?.timers
    }
    const migrated = [
      { kind: 'user', domain: 'event', timestamp: 5, seq: 9, owner: 'p', key: 'c' },
      { kind: 'user', domain: 'event', timestamp: 20, seq: 3, owner: 'p', key: 'b' },
      { kind: 'user', domain: 'event', timestamp: 20, seq: 4, owner: 'p', key: 'a' },
      { kind: 'ttl', domain: 'processing', timestamp: 10, seq: 1, owner: 'p/v', key: 5n },
    ]
    assert.deepEqual(read(), migrated)
    // A commit removes one (by the timer with its sequence) and adds one before the others.
    await store.save(
      new Map([['0_0', { streamTime: 8, lastFires: {}, positions: {} }]]),
      new Map([
        [
          '0_0',
          {
            states: [],
            timers: [
              { added: false, record: migrated[1]! as never },
              { added: true, record: { kind: 'user', domain: 'event', timestamp: -1, seq: 10, owner: 'p', key: 'd' } },
            ],
          },
        ],
      ]),
    )
    assert.deepEqual(read(), [{ kind: 'user', domain: 'event', timestamp: -1, seq: 10, owner: 'p', key: 'd' }, migrated[0], migrated[2], migrated[3]])
    store.close()
  })
})
