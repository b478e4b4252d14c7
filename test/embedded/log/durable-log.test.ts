import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { open } from 'lmdb'
import type { Database, RootDatabase } from 'lmdb'
import { DurableLog } from '../../../src/embedded/log/durable-log.js'
import type { DurableTopic, LogCommitWriter } from '../../../src/embedded/log/durable-log.js'
import { PartitionLog } from '../../../src/embedded/log/partition-log.js'
import { Serdes } from '../../../src/processor/serdes.js'
import type { Serde } from '../../../src/processor/serdes.js'

const STRING = Serdes.String() as Serde<unknown>

/** A commit: its work runs at once, its writes at the seal, in one transaction. */
async function commit(env: RootDatabase, write: (writer: LogCommitWriter) => void): Promise<void> {
  const sealed: Array<() => void> = []
  write({ later: (work) => work(), atSeal: (w) => void sealed.push(w) })
  await env.transaction(() => sealed.forEach((w) => w()))
}

function openLog(path: string): { env: RootDatabase; log: DurableLog; records: Database<Buffer, Array<string | number>> } {
  const env = open({ path, compression: false })
  const records = env.openDB<Buffer, Array<string | number>>({ name: 'log-records', encoding: 'binary' })
  return { env, records, log: new DurableLog(records, env.openDB<DurableTopic, string>({ name: 'log-ranges' })) }
}

/** The chunks on disk as [first offset, count]. */
const chunks = (records: Database<Buffer, Array<string | number>>): number[][] => [...records.getKeys({ start: ['t', 0], end: ['t', 0, Number.MAX_SAFE_INTEGER] })].map((k) => [k[2] as number, k[3] as number])

describe('durable log chunks', () => {
  it('deletes chunks once every record is consumed, within a run and after a restart', async () => {
    const path = mkdtempSync(join(tmpdir(), 'punctual-log-'))
    const source = new PartitionLog('t', 0)
    for (let i = 0; i < 10_000; i++) source.appendFields(`k${i}`, STRING, 'v', STRING, i, [])
    let { env, log, records } = openLog(path)
    await commit(env, (w) => log.append(w, 't', 0, source, 0, 5000, 1))
    assert.deepEqual(chunks(records), [[0, 4096], [4096, 904]])
    await commit(env, (w) => {
      log.removeBefore(w, 't', 0, 4500) // the second chunk still holds unconsumed records
      log.append(w, 't', 0, source, 5000, 10_000, 2)
    })
    assert.deepEqual(chunks(records), [[4096, 904], [5000, 4096], [9096, 904]])
    await env.close()
    ;({ env, log, records } = openLog(path))
    assert.equal(log.get('t', 0, 4096)?.key, 'k4096', 'the chunks left read back')
    await commit(env, (w) => log.removeBefore(w, 't', 0, 9096))
    assert.deepEqual(chunks(records), [[9096, 904]], 'a restarted log finds the chunks on disk to delete')
    await env.close()
  })

  it('retention deletes chunks appended at or before the bound, never those its commit writes', async () => {
    const path = mkdtempSync(join(tmpdir(), 'punctual-log-'))
    const source = new PartitionLog('t', 0)
    for (let i = 0; i < 30; i++) source.appendFields(`k${i}`, STRING, 'v', STRING, i, [])
    const { env, log, records } = openLog(path)
    await commit(env, (w) => log.append(w, 't', 0, source, 0, 10, 100))
    await commit(env, (w) => log.append(w, 't', 0, source, 10, 20, 200))
    let start = -1
    // Retention 0 at time 300: everything committed before goes, the commit's own records stay.
    await commit(env, (w) => {
      log.append(w, 't', 0, source, 20, 30, 300)
      start = log.removeAppendedBy(w, 't', 0, 300, 20)
    })
    assert.equal(start, 20)
    assert.deepEqual(chunks(records), [[20, 10]])
    await env.close()
  })
})
