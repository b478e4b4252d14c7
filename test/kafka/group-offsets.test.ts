import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { silentLogger } from '../../src/index.js'
import type { ClientError, GroupConsumer } from '../../src/kafka/client-supplier.js'
import { GroupOffsets } from '../../src/kafka/group-offsets.js'

/** A group consumer whose next offset commit ends with `result` (undefined: taken). */
function consumerCommitting(result: ClientError | undefined): GroupConsumer {
  let report: ((err: ClientError | undefined) => void) | undefined
  return {
    on: (event: string, listener: (err: ClientError | undefined) => void) => {
      if (event === 'offset.commit') report = listener
    },
    commit: () => setImmediate(() => report?.(result)),
  } as unknown as GroupConsumer
}

const commit = (result: ClientError | undefined) => new GroupOffsets(consumerCommitting(result), silentLogger).commit([{ topic: 'in', partition: 0, offset: 7 }])

describe('GroupOffsets.commit', () => {
  it('tells a commit taken, a lapse (the coordinator away or moving, a rebalance), and a fenced member apart; anything else fails, naming it', async () => {
    assert.equal(await commit(undefined), 'committed')
    // A broker just restarted: the client has no coordinator yet, or it is loading.
    assert.equal(await commit({ message: 'Local: Waiting for coordinator', code: -180 }), 'lapsed')
    assert.equal(await commit({ message: 'Broker: Coordinator load in progress', code: 14 }), 'lapsed')
    assert.equal(await commit({ message: 'Local: All broker connections are down', code: -187 }), 'lapsed')
    assert.equal(await commit({ message: 'Broker: The member epoch is stale', code: 113 }), 'lapsed')
    assert.equal(await commit({ message: 'Broker: Unknown member', code: 25 }), 'fenced')
    await assert.rejects(commit({ message: 'Broker: Group authorization failed', code: 30 }), /committing the group's offsets: Broker: Group authorization failed/)
  })
})
