import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { PunctualError } from '../../src/errors.js'
import { StreamsGroupMember } from '../../src/kafka/streams-group/member.js'
import type { StreamsAssignment, TaskOffsetSums } from '../../src/kafka/streams-group/member.js'
import type { GroupStatus, HeartbeatRequest, HeartbeatResponse, TaskIds } from '../../src/kafka/streams-group/protocol.js'
import { ManualClock } from '../../src/time/clock.js'
import { silentLogger } from '../../src/util/logger.js'

const TOPOLOGY = [{ id: '0', sourceTopics: ['in'], repartitionSinkTopics: [], stateChangelogTopics: [], repartitionSourceTopics: [], copartitionGroups: [] }]
const INTERVAL = 5_000

/** A coordinator the test answers by hand: each heartbeat waits for `answer`. */
function coordinator() {
  const requests: HeartbeatRequest[] = []
  const waiting: Array<{ resolve: (r: HeartbeatResponse) => void; reject: (e: Error) => void }> = []
  return {
    requests,
    send: (r: HeartbeatRequest): Promise<HeartbeatResponse> => {
      requests.push(r)
      return new Promise((resolve, reject) => waiting.push({ resolve, reject }))
    },
    pending: (): number => waiting.length,
    answer(r: Partial<HeartbeatResponse> & { epoch?: number; active?: string[]; standby?: string[] }): void {
      const w = waiting.shift()
      if (w === undefined) throw new Error('no heartbeat is waiting for an answer')
      const lists = (ids: string[]): TaskIds[] => [...new Set(ids.map((i) => i.split('_')[0] as string))].map((s) => ({ subtopologyId: s, partitions: ids.filter((i) => i.startsWith(`${s}_`)).map((i) => Number(i.split('_')[1])) }))
      w.resolve({
        errorCode: 0,
        errorMessage: null,
        memberId: 'm1',
        memberEpoch: r.epoch ?? 1,
        heartbeatIntervalMs: INTERVAL,
        acceptableRecoveryLag: 10_000,
        taskOffsetIntervalMs: 60_000,
        status: [],
        assigned: r.active === undefined ? undefined : { active: lists(r.active), standby: lists(r.standby ?? []), warmup: [] },
        endpointInformationEpoch: 0,
        partitionsByUserEndpoint: undefined,
        ...r,
      })
    },
    fail(err: Error): void {
      waiting.shift()?.reject(err)
    },
  }
}

function member(taskOffsets?: () => TaskOffsetSums) {
  const clock = new ManualClock(1_000)
  const c = coordinator()
  const calls: string[] = []
  const statuses: Array<readonly GroupStatus[]> = []
  const fatal: PunctualError[] = []
  let release: ((err?: Error) => void) | undefined
  const m = new StreamsGroupMember(
    { groupId: 'app', memberId: 'm1', processId: 'p1', topology: TOPOLOGY, rebalanceTimeoutMs: 300_000, ...(taskOffsets === undefined ? {} : { taskOffsets }) },
    c.send,
    {
      revoke: async (tasks) => {
        calls.push(`revoke ${tasks.join(',')}`)
        await new Promise<void>((resolve, reject) => (release = (err?: Error) => (err === undefined ? resolve() : reject(err))))
      },
      assign: async (a: StreamsAssignment) => {
        calls.push(`assign active ${[...a.active].sort().join(',')} standby ${[...a.standby].sort().join(',')}`)
      },
      lost: () => calls.push('lost'),
      status: (s) => statuses.push(s),
      fatal: (e) => fatal.push(e),
    },
    clock,
    clock,
    silentLogger,
  )
  /** Lets promise callbacks run (the member's reactions to an answer). */
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r))
  }
  /** Joins, takes `active`, has the acknowledgement answered, and lets the interval pass: the next heartbeat waits for its answer. */
  const joinedWith = async (epoch: number, active: string[]): Promise<void> => {
    m.start()
    c.answer({ epoch, active })
    await settle()
    clock.advance(0)
    c.answer({ epoch })
    await settle()
    clock.advance(INTERVAL)
  }
  return { m, c, clock, calls, statuses, fatal, settle, joinedWith, releaseRevoke: (err?: Error) => release?.(err) }
}

const owned = (r: HeartbeatRequest | undefined): string | undefined => (r?.owned === undefined ? undefined : `${r.owned.active.map((t) => `${t.subtopologyId}:${t.partitions.join('.')}`).join(' ')} | ${r.owned.standby.map((t) => `${t.subtopologyId}:${t.partitions.join('.')}`).join(' ')}`)

describe('StreamsGroupMember', () => {
  it('joins with its topology at epoch 0, takes its assignment, acknowledges it at once, then heartbeats at the interval without the unchanged task lists', async () => {
    const { m, c, clock, calls, settle } = member()
    m.start()
    const join = c.requests[0] as HeartbeatRequest
    assert.equal(join.memberEpoch, 0)
    assert.equal(join.memberId, 'm1')
    assert.equal(join.processId, 'p1')
    assert.equal(join.rebalanceTimeoutMs, 300_000)
    assert.deepEqual(join.topology, { epoch: 0, subtopologies: TOPOLOGY })
    assert.equal(owned(join), ' | ')
    c.answer({ epoch: 3, active: ['0_0', '0_1'], standby: ['0_2'] })
    await settle()
    assert.deepEqual(calls, ['assign active 0_0,0_1 standby 0_2'])
    // The acknowledgement goes at once: it reports what is owned now.
    clock.advance(0)
    assert.equal(c.requests.length, 2)
    const ack = c.requests[1] as HeartbeatRequest
    assert.equal(ack.memberEpoch, 3)
    assert.equal(ack.topology, undefined)
    assert.equal(ack.rebalanceTimeoutMs, -1)
    assert.equal(owned(ack), '0:0.1 | 0:2')
    c.answer({ epoch: 3 })
    await settle()
    clock.advance(INTERVAL - 1)
    assert.equal(c.requests.length, 2, 'the next heartbeat waits for the interval')
    clock.advance(1)
    assert.equal(c.requests.length, 3)
    assert.equal(owned(c.requests[2]), undefined, 'unchanged task lists are not sent')
    assert.equal(m.memberEpoch, 3)
  })

  it('reports its task offsets at the join, then once the coordinator’s task offset interval passed, only when they changed; without them, never', async () => {
    const offsets = new Map([['1_0', 40], ['0_2', 7]])
    const endOffsets = new Map([['0_2', 9]])
    let asked = 0
    const { c, clock, m, settle } = member(() => {
      asked++
      return { offsets: new Map(offsets), endOffsets: new Map(endOffsets) }
    })
    const reported = (r: HeartbeatRequest | undefined): string | undefined => (r?.taskOffsets === undefined ? undefined : JSON.stringify([r.taskOffsets.map((t) => `${t.subtopologyId}_${t.partition}=${t.offset}`), r.taskEndOffsets?.map((t) => `${t.subtopologyId}_${t.partition}=${t.offset}`)]))
    m.start()
    assert.equal(reported(c.requests[0]), JSON.stringify([['0_2=7', '1_0=40'], ['0_2=9']]), 'at the join, sorted by task')
    c.answer({ epoch: 1, active: ['0_0'], taskOffsetIntervalMs: 20_000 })
    await settle()
    clock.advance(0)
    // Sent again after a join: one that creates the group loses them on Kafka 4.4.
    assert.equal(reported(c.requests[1]), JSON.stringify([['0_2=7', '1_0=40'], ['0_2=9']]), 'the acknowledgement after the join')
    c.answer({ epoch: 1, taskOffsetIntervalMs: 20_000 })
    await settle()
    offsets.set('0_2', 9)
    // Heartbeats every 5 s: the offsets are looked at again only once 20 s passed.
    for (let beat = 1; beat <= 3; beat++) {
      clock.advance(INTERVAL)
      assert.equal(reported(c.requests.at(-1)), undefined, `heartbeat ${beat}`)
      c.answer({ epoch: 1, taskOffsetIntervalMs: 20_000 })
      await settle()
    }
    assert.equal(asked, 2, 'looked at for the join and the acknowledgement only')
    clock.advance(INTERVAL)
    assert.equal(reported(c.requests.at(-1)), JSON.stringify([['0_2=9', '1_0=40'], ['0_2=9']]), 'changed, once the interval passed')
    c.answer({ epoch: 1, taskOffsetIntervalMs: 20_000 })
    await settle()
    for (let beat = 1; beat <= 4; beat++) {
      clock.advance(INTERVAL)
      assert.equal(reported(c.requests.at(-1)), undefined, `unchanged: heartbeat ${beat} after the change`)
      c.answer({ epoch: 1, taskOffsetIntervalMs: 20_000 })
      await settle()
    }
    assert.equal(asked, 4, 'looked at again once the next interval passed')

    const plain = member()
    plain.m.start()
    assert.equal(plain.c.requests[0]?.taskOffsets, undefined)
    assert.equal(plain.c.requests[0]?.taskEndOffsets, undefined)
  })

  it('task offsets that cannot be summed are left out of that heartbeat; after a heartbeat that got no answer they are sent again', async () => {
    let broken = true
    const { c, clock, m, settle } = member(() => {
      if (broken) throw new Error('the state directory is closed')
      return { offsets: new Map([['0_1', 5]]), endOffsets: new Map() }
    })
    m.start()
    assert.equal(c.requests[0]?.taskOffsets, undefined, 'the join goes without them')
    broken = false
    c.answer({ epoch: 1, active: ['0_0'] })
    await settle()
    clock.advance(0)
    assert.deepEqual(c.requests[1]?.taskOffsets, [{ subtopologyId: '0', partition: 1, offset: 5 }], 'the acknowledgement carries them')
    c.answer({ epoch: 1 })
    await settle()
    clock.advance(INTERVAL)
    assert.equal(c.requests.at(-1)?.taskOffsets, undefined, 'unchanged: not sent')
    c.fail(new Error('connection reset'))
    await settle()
    clock.advance(10_000)
    assert.deepEqual(c.requests.at(-1)?.taskOffsets, [{ subtopologyId: '0', partition: 1, offset: 5 }], 'sent again after a heartbeat that got no answer')
  })

  it('revokes the active tasks the group takes away before it takes the new assignment, and acknowledges only once the revocation is done', async () => {
    const { c, clock, calls, settle, releaseRevoke, m, joinedWith } = member()
    await joinedWith(1, ['0_0', '0_1'])
    // A second member joined: the group takes 0_1 away.
    c.answer({ epoch: 2, active: ['0_0'] })
    await settle()
    assert.deepEqual(calls, ['assign active 0_0,0_1 standby ', 'revoke 0_1'])
    clock.advance(INTERVAL)
    const whileRevoking = c.requests.at(-1) as HeartbeatRequest
    assert.equal(owned(whileRevoking), undefined, 'while it revokes, the member still owns 0_1 and says nothing new')
    c.answer({ epoch: 2 })
    await settle()
    releaseRevoke()
    await settle()
    assert.deepEqual(calls, ['assign active 0_0,0_1 standby ', 'revoke 0_1', 'assign active 0_0 standby '])
    clock.advance(0)
    assert.equal(owned(c.requests.at(-1)), '0:0 | ', 'the acknowledgement reports 0_0 alone')
    assert.deepEqual([...m.assignment.active], ['0_0'])
  })

  it('fenced (FENCED_MEMBER_EPOCH): every task is lost, and it joins again at epoch 0 with the same member id and its topology', async () => {
    const { c, clock, calls, settle, m, joinedWith } = member()
    await joinedWith(4, ['0_0'])
    c.answer({ errorCode: 110, errorMessage: 'The member epoch is fenced', epoch: 0 })
    await settle()
    assert.deepEqual(calls, ['assign active 0_0 standby ', 'lost'])
    assert.equal(m.assignment.active.size, 0)
    clock.advance(0)
    const rejoin = c.requests.at(-1) as HeartbeatRequest
    assert.equal(rejoin.memberEpoch, 0)
    assert.equal(rejoin.memberId, 'm1')
    assert.deepEqual(rejoin.topology?.subtopologies, TOPOLOGY)
  })

  it('fenced while it revokes: the revocation that then fails is not fatal, `lost` comes once it settled, never before, and the member joins again', async () => {
    const { c, clock, calls, settle, releaseRevoke, fatal, joinedWith } = member()
    await joinedWith(1, ['0_0', '0_1'])
    c.answer({ epoch: 2, active: ['0_0'] })
    await settle()
    assert.deepEqual(calls.slice(1), ['revoke 0_1'])
    // The revocation's commit takes long: the member is fenced meanwhile.
    clock.advance(INTERVAL)
    c.answer({ errorCode: 25, errorMessage: 'unknown member' })
    await settle()
    assert.deepEqual(calls.slice(1), ['revoke 0_1'], 'lost waits for the revocation under way')
    releaseRevoke(new Error('the group refused the commit: UNKNOWN_MEMBER_ID'))
    await settle()
    assert.deepEqual(calls.slice(1), ['revoke 0_1', 'lost'], 'no assign of the old target after the fencing')
    assert.deepEqual(fatal, [])
    clock.advance(0)
    assert.equal((c.requests.at(-1) as HeartbeatRequest).memberEpoch, 0, 'it joins again')
  })

  it('leave during a revocation: heartbeats go on until it ends, nothing is assigned after, then the leave heartbeat goes', async () => {
    const { c, clock, calls, settle, releaseRevoke, m, joinedWith } = member()
    await joinedWith(1, ['0_0', '0_1'])
    c.answer({ epoch: 2, active: ['0_0'] })
    await settle()
    const leaving = m.leave()
    clock.advance(INTERVAL)
    assert.equal((c.requests.at(-1) as HeartbeatRequest).memberEpoch, 2, 'a heartbeat while the revocation runs')
    c.answer({ epoch: 2 })
    await settle()
    releaseRevoke()
    await settle()
    // The revocation done, its acknowledgement goes (0_1 given up), then the leave.
    assert.equal(owned(c.requests.at(-1)), '0:0 | ')
    c.answer({ epoch: 2 })
    await settle()
    assert.equal((c.requests.at(-1) as HeartbeatRequest).memberEpoch, -1)
    c.answer({ epoch: -1 })
    await leaving
    assert.deepEqual(calls, ['assign active 0_0,0_1 standby ', 'revoke 0_1'], 'nothing assigned once leaving')
  })

  it('a refusal for good (STREAMS_INVALID_TOPOLOGY) is fatal, naming the error; a coordinator away is asked again with growing pauses', async () => {
    const a = member()
    a.m.start()
    a.c.answer({ errorCode: 130, errorMessage: 'Changelog topic x must have an undefined partition count' })
    await a.settle()
    assert.equal(a.fatal.length, 1)
    assert.match((a.fatal[0] as PunctualError).message, /STREAMS_INVALID_TOPOLOGY: Changelog topic x/)
    a.clock.advance(60_000)
    assert.equal(a.c.requests.length, 1, 'nothing more is sent')
    // A group made with the consumer protocol: the refusal says what to do.
    const consumerGroup = member()
    consumerGroup.m.start()
    consumerGroup.c.answer({ errorCode: 69, errorMessage: 'Group app is not a streams group.' })
    await consumerGroup.settle()
    assert.match((consumerGroup.fatal[0] as PunctualError).message, /GROUP_ID_NOT_FOUND: Group app is not a streams group\. \(the group was made with another protocol, as by groupProtocol 'consumer': a group does not change protocol in place/)

    const b = member()
    b.m.start()
    b.c.fail(new Error('connect ECONNREFUSED'))
    await b.settle()
    b.clock.advance(499)
    assert.equal(b.c.requests.length, 1)
    b.clock.advance(1)
    assert.equal(b.c.requests.length, 2)
    b.c.answer({ errorCode: 16, errorMessage: 'not coordinator' })
    await b.settle()
    b.clock.advance(999)
    assert.equal(b.c.requests.length, 2)
    b.clock.advance(1)
    assert.equal(b.c.requests.length, 3, 'the pause doubled')
    assert.equal((b.c.requests[2] as HeartbeatRequest).memberEpoch, 0)
  })

  it("tells the group's statuses when they change, and leaves with epoch -1", async () => {
    const { c, clock, statuses, settle, m } = member()
    m.start()
    c.answer({ epoch: 1, status: [{ code: 3, detail: 'Internal topics are missing: [app-x-changelog]' }] })
    await settle()
    clock.advance(INTERVAL)
    c.answer({ epoch: 1, status: [{ code: 3, detail: 'Internal topics are missing: [app-x-changelog]' }] })
    await settle()
    clock.advance(INTERVAL)
    c.answer({ epoch: 1, status: [] })
    await settle()
    assert.deepEqual(statuses, [[{ code: 3, detail: 'Internal topics are missing: [app-x-changelog]' }], []])
    const leaving = m.leave()
    await settle()
    assert.equal((c.requests.at(-1) as HeartbeatRequest).memberEpoch, -1)
    c.answer({ epoch: -1 })
    await leaving
    clock.advance(60_000)
    assert.equal(c.pending(), 0)
  })
})
