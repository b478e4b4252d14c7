import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { open } from 'lmdb'
import type { RootDatabase } from 'lmdb'
import { CheckpointStore } from '../../src/state/checkpoint-store.js'
import { CommitJournal } from '../../src/state/commit-journal.js'

/** The checkpoint store's environment and keyed database, as it opens them. */
function openEnv(stateDir: string): { env: RootDatabase; keyed: ReturnType<RootDatabase['openDB']> } {
  const env = open({ path: join(stateDir, 'checkpoints'), compression: false, noSync: true })
  return { env, keyed: env.openDB({ name: 'keyed', useRecords: false } as { name: string }) }
}

const encode = (keyed: unknown, value: unknown): Uint8Array => (keyed as { encoder: { encode(v: unknown): Uint8Array } }).encoder.encode(value)

function entries(keyed: ReturnType<RootDatabase['openDB']>): Array<[unknown, unknown]> {
  return [...keyed.getRange()].map(({ key, value }) => [key, value])
}

describe('commit journal', () => {
  it('a sealed commit that was not applied is applied when the store opens again; one not sealed is dropped', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'punctual-journal-'))
    const { env, keyed } = openEnv(stateDir)
    await keyed.put(['s', '0_0', 'p/v', 'gone'], ['gone', 'value', { v: 1, a: 0 }])
    await keyed.put(['s', '0_0', 'p/v', 'kept'], ['kept', 'value', { v: 2, a: 0 }])
    const journal = CommitJournal.open(env, 'keyed')
    const sealed = journal.begin()
    sealed.put(['s', '0_0', 'p/v', 'new'], encode(keyed, ['new', 'value', { v: 3, a: 5 }]))
    sealed.remove(['s', '0_0', 'p/v', 'gone'])
    sealed.put(['T', '0_0', 0, 10, 1, 'p', 'new'], encode(keyed, null))
    sealed.seal()
    // A later commit whose process stopped before its marker: its chunk is there, its marker is not.
    const unsealed = journal.begin()
    unsealed.put(['s', '0_0', 'p/v', 'kept'], encode(keyed, ['kept', 'value', { v: 99, a: 9 }]))
    unsealed.seal()
    await env.committed
    await env.openDB({ name: 'journal', encoding: 'binary' }).remove([2, -1])
    // Not applied: the process stopped here.
    assert.deepEqual(entries(keyed).map(([k]) => k), [
      ['s', '0_0', 'p/v', 'gone'],
      ['s', '0_0', 'p/v', 'kept'],
    ])
    await env.close()

    // Reads right after the open, in the same turn (as a restore does), see the recovered commit.
    const store = CheckpointStore.open(stateDir)
    const state = store.keyedStateDisk('0_0', 'p/v')!
    assert.deepEqual(state.disk.get('new'), { v: 3, a: 5 })
    assert.equal(state.disk.get('gone'), undefined)
    assert.deepEqual(state.disk.get('kept'), { v: 2, a: 0 }, 'the unsealed commit is not applied')
    const reader = store.readTask('0_0', [])!
    while (!reader.done) reader.readSome(10)
    assert.deepEqual(reader.keyed()?.timers, [{ kind: 'user', domain: 'event', timestamp: 10, seq: 1, owner: 'p', key: 'new' }])
    store.close()
    const reopened = openEnv(stateDir)
    assert.deepEqual(entries(reopened.keyed), [
      [['T', '0_0', 0, 10, 1, 'p', 'new'], null],
      [['s', '0_0', 'p/v', 'kept'], ['kept', 'value', { v: 2, a: 0 }]],
      [['s', '0_0', 'p/v', 'new'], ['new', 'value', { v: 3, a: 5 }]],
    ])
    assert.equal([...reopened.env.openDB({ name: 'journal', encoding: 'binary' }).getKeys()].length, 0, 'the journal is empty once applied')
    await reopened.env.close()
  })

  it('applies a slice at a time when the deadline has passed, and the result is the same', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'punctual-journal-'))
    const { env, keyed } = openEnv(stateDir)
    const journal = CommitJournal.open(env, 'keyed')
    const write = journal.begin()
    for (let i = 0; i < 1000; i++) write.put(['kv', '0_0', 's', i], encode(keyed, [i, { n: i }]))
    // A value larger than a chunk gets a chunk of its own.
    const big = 'x'.repeat(2 << 20)
    write.put(['kv', '0_0', 's', 'big'], encode(keyed, ['big', big]))
    write.remove(['kv', '0_0', 's', 3])
    write.seal()
    await env.committed
    let slices = 0
    while (!write.apply(0)) slices++
    await env.committed
    assert.ok(slices >= 3, `a past deadline stops each slice early (${slices} slices)`)
    const got = entries(keyed)
    assert.equal(got.length, 1000)
    assert.deepEqual(got[0], [['kv', '0_0', 's', 0], [0, { n: 0 }]])
    assert.equal(got.find(([k]) => (k as unknown[])[3] === 3), undefined)
    assert.equal((keyed.get(['kv', '0_0', 's', 'big']) as [string, string])[1].length, big.length)
    assert.equal([...env.openDB({ name: 'journal', encoding: 'binary' }).getKeys()].length, 0, 'the last slice deletes the journal entries')
    await env.close()
  })
})
