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
    assert.equal(store.keyedStateDisk('0_0', 'p/v2').kind, undefined, 'a state with no entries has no kind')
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

describe('checkpoint store: changelog records written after their commit is durable elsewhere (saveRecordsAfter)', () => {
  const task = (streamTime: number) => () => new Map([['0_0', { streamTime, lastFires: {}, positions: { 'in:0': streamTime } }]])
  const records = (value: Buffer | null, key = 'a') => new Map([['0_0', [{ store: 'counts', key: Buffer.from(key), value }]]])
  const held = (store: CheckpointStore): string[] => [...store.records.of('0_0')].map((r) => `${r.store}/${Buffer.from(r.key).toString()}=${r.value === null ? null : Buffer.from(r.value).toString()}`)
  const turns = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve))
  }

  it('writes nothing until the commit it follows is durable, then all of it, as it was when taken', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'punctual-checkpoints-'))
    const store = CheckpointStore.open(stateDir)
    await store.saveRecordsAfter(Promise.resolve(true), task(1), records(Buffer.from('1')))
    let durable!: () => void
    const value = Buffer.from('2')
    const saving = store.saveRecordsAfter(new Promise<void>((resolve) => (durable = resolve)), task(2), records(value))
    // Changed after the take: the next commit's, not this one's.
    value.write('9')
    await turns(10)
    assert.equal(store.load('0_0')?.streamTime, 1, 'the task record is the previous commit')
    assert.deepEqual(held(store), ['counts/a=1'])
    durable()
    await saving
    assert.equal(store.load('0_0')?.streamTime, 2)
    assert.deepEqual(held(store), ['counts/a=2'], 'the bytes as they were when the commit was taken')
    // A tombstone removes the key.
    await store.saveRecordsAfter(Promise.resolve(true), task(3), records(null))
    assert.deepEqual(held(store), [])
    await store.close()
  })

  it('writes nothing of a commit whose other half failed, rejects with that failure, and leaves nothing for the next open to apply', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'punctual-checkpoints-'))
    const store = CheckpointStore.open(stateDir)
    await store.saveRecordsAfter(Promise.resolve(true), task(1), records(Buffer.from('1')))
    let failed!: (err: Error) => void
    const saving = store.saveRecordsAfter(new Promise<void>((_resolve, reject) => (failed = reject)), task(2), new Map([['0_0', [{ store: 'counts', key: Buffer.from('a'), value: Buffer.from('2') }, { store: 'counts', key: Buffer.from('b'), value: Buffer.from('2') }]]]))
    await turns(3)
    failed(new Error('the transaction was aborted'))
    await assert.rejects(saving, /the transaction was aborted/)
    assert.equal(store.load('0_0')?.streamTime, 1)
    assert.deepEqual(held(store), ['counts/a=1'])
    // The next commit goes on from the previous one.
    await store.saveRecordsAfter(Promise.resolve(true), task(3), records(Buffer.from('3')))
    assert.equal(store.load('0_0')?.streamTime, 3)
    await store.close()
    const reopened = CheckpointStore.open(stateDir)
    assert.equal(reopened.load('0_0')?.streamTime, 3)
    assert.deepEqual(held(reopened), ['counts/a=3'], "the failed commit's b is nowhere")
    await reopened.close()
  })
})

describe('checkpoint store: keys longer than lmdb takes', () => {
  it('a commit holding one fails before anything of it is written, naming the store, and the store opens again', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'punctual-checkpoints-'))
    const store = CheckpointStore.open(stateDir)
    const long = 'k'.repeat(2_100)
    const changes = new Map([['0_0', [{ store: 'counts', key: Buffer.from('short'), value: Buffer.from('1') }, { store: 'counts', key: Buffer.from(long), value: Buffer.from('2') }]]])
    await assert.rejects(store.saveRecordsAfter(Promise.resolve(true), () => new Map([['0_0', { streamTime: 1, lastFires: {}, positions: {} }]]), changes), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'STATE_DIR')
      assert.match(err.message, /a key of store "counts" of task 0_0 takes 21\d\d bytes on disk, more than the state directory's limit of 1978/)
      return true
    })
    assert.equal(store.load('0_0'), undefined)
    assert.equal(store.records.count('0_0'), 0, 'nothing of the commit')
    await store.close()
    const reopened = CheckpointStore.open(stateDir)
    assert.equal(reopened.load('0_0'), undefined)
    await reopened.close()
  })

  it('a large commit of the embedded layout holding one fails before its journal is sealed, naming the store', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'punctual-checkpoints-'))
    // Every commit through the journal.
    const store = CheckpointStore.open(stateDir, { sliceCommitsAbove: 0 })
    const changes = new Map([['0_0', new Map([['counts', [['short', 1], ['k'.repeat(2_100), 2]] as Array<readonly [string, number]>]])]])
    await assert.rejects(store.save(new Map([['0_0', { streamTime: 1, lastFires: {}, positions: {} }]]), new Map(), changes), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'STATE_DIR')
      assert.match(err.message, /a key of store "counts" of task 0_0 takes 21\d\d bytes on disk, more than the state directory's limit of 1978/)
      return true
    })
    assert.equal(store.load('0_0'), undefined)
    assert.equal(store.storeDisk('0_0', 'counts').get('short'), undefined, 'nothing of the commit')
    await store.close()
    const reopened = CheckpointStore.open(stateDir)
    assert.equal(reopened.load('0_0'), undefined)
    await reopened.close()
  })
})

describe('checkpoint store: saveRecordsAfter and close', () => {
  it('a commit still waiting for its other half when the store closes is not written, and rejects at once', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'punctual-checkpoints-'))
    const store = CheckpointStore.open(stateDir)
    await store.save(new Map([['0_0', { streamTime: 1, lastFires: {}, positions: {} }]]))
    // The other half never answers (a cluster away).
    const saving = store.saveRecordsAfter(new Promise<void>(() => {}), () => new Map([['0_0', { streamTime: 2, lastFires: {}, positions: {} }]]), new Map())
    await new Promise((resolve) => setImmediate(resolve))
    await store.close()
    await assert.rejects(saving, /closed before the commit was durable/)
    const reopened = CheckpointStore.open(stateDir)
    assert.equal(reopened.load('0_0')?.streamTime, 1)
    reopened.close()
  })
})
