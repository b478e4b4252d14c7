import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { silentLogger } from '../../src/index.js'
import type { ClientError, GroupConsumer } from '../../src/kafka/client-supplier.js'
import { GroupOffsets } from '../../src/kafka/group-offsets.js'
import { committedOffsets } from '../../src/kafka/streams-group/group-wire.js'
import type { GroupWire } from '../../src/kafka/streams-group/group-wire.js'

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

/** A consumer whose own reads of committed offsets must not be used. */
const consumerNotReading = {
  on: () => {},
  committed: () => assert.fail("the consumer's committed() was called though a reader was given"),
  assignmentLost: () => false,
} as unknown as GroupConsumer

describe('GroupOffsets.committed through a reader of its own', () => {
  it('asks again while a transaction holds the offsets (UNSTABLE_OFFSET_COMMIT), and returns them once stable', async () => {
    let asked = 0
    const reader = {
      committed: async (partitions: Array<{ topic: string; partition: number }>) => {
        if (++asked < 3) throw Object.assign(new Error(`the group's offset of in-0: a transaction holding its offsets is still pending (UNSTABLE_OFFSET_COMMIT)`), { code: 88 })
        return partitions.map((p) => ({ ...p, offset: 42 }))
      },
      close: () => {},
    }
    const offsets = new GroupOffsets(consumerNotReading, silentLogger, reader)
    assert.deepEqual(await offsets.committed([{ topic: 'in', partition: 0 }], 10_000), [{ topic: 'in', partition: 0, offset: 42 }])
    assert.equal(asked, 3)
  })

  it('gives up after its time, saying what the coordinator last answered; an error that is not a wait fails at once', async () => {
    const pending = new GroupOffsets(consumerNotReading, silentLogger, {
      committed: () => Promise.reject(Object.assign(new Error('a transaction holding its offsets is still pending (UNSTABLE_OFFSET_COMMIT)'), { code: 88 })),
      close: () => {},
    })
    await assert.rejects(pending.committed([{ topic: 'in', partition: 0 }], 300), /reading the group's offsets of in-0: a transaction holding its offsets is still pending \(UNSTABLE_OFFSET_COMMIT\)/)
    const refused = new GroupOffsets(consumerNotReading, silentLogger, {
      committed: () => Promise.reject(Object.assign(new Error('error 30'), { code: 30 })),
      close: () => {},
    })
    await assert.rejects(refused.committed([{ topic: 'in', partition: 0 }], 10_000), (e: unknown) => e instanceof Error && !(e.constructor.name === 'OffsetsUnanswered') && /reading the group's offsets of in-0: error 30/.test(e.message))
  })
})

describe('committedOffsets (a group wire\'s answer)', () => {
  const wire = (answer: Map<string, { offset: number; metadata: string | null } | { errorCode: number }>, stable: boolean[]): GroupWire =>
    ({
      committed: async (_partitions: unknown, requireStable: boolean) => {
        stable.push(requireStable)
        return answer
      },
    }) as unknown as GroupWire

  it('gives each partition its offset and metadata, -1 where the group has none, asking for stable offsets when told to', async () => {
    const stable: boolean[] = []
    const answer = new Map([['in:0', { offset: 7, metadata: 'm' }], ['in:1', { offset: -1, metadata: null }], ['in:3', { offset: 9, metadata: null }]])
    const got = await committedOffsets(wire(answer, stable), [0, 1, 2, 3].map((partition) => ({ topic: 'in', partition })), true)
    assert.deepEqual(got, [{ topic: 'in', partition: 0, offset: 7, metadata: 'm' }, { topic: 'in', partition: 1, offset: -1 }, { topic: 'in', partition: 2, offset: -1 }, { topic: 'in', partition: 3, offset: 9 }])
    assert.deepEqual(stable, [true])
  })

  it('gives the metadata librdkafka committed as librdkafka reads it back: without the NUL that ends it on the wire', async () => {
    const got = await committedOffsets(wire(new Map([['in:0', { offset: 20, metadata: 'punctual.commit=3;void=1-2\u0000' }]]), []), [{ topic: 'in', partition: 0 }], false)
    assert.deepEqual(got, [{ topic: 'in', partition: 0, offset: 20, metadata: 'punctual.commit=3;void=1-2' }])
  })

  it("rejects with a partition's error code, saying when a pending transaction holds its offsets", async () => {
    await assert.rejects(committedOffsets(wire(new Map([['in:0', { errorCode: 88 }]]), []), [{ topic: 'in', partition: 0 }], true), (e: unknown) => (e as { code?: number }).code === 88 && /in-0: a transaction holding its offsets is still pending \(UNSTABLE_OFFSET_COMMIT\)/.test((e as Error).message))
    await assert.rejects(committedOffsets(wire(new Map([['in:0', { errorCode: 30 }]]), []), [{ topic: 'in', partition: 0 }], false), (e: unknown) => (e as { code?: number }).code === 30)
  })
})

describe('GroupOffsets.watermarks', () => {
  /** A consumer whose watermark queries give these answers in turn (a number: that error code). */
  const answering = (answers: Array<number | { lowOffset: number; highOffset: number }>): GroupConsumer =>
    ({
      on: () => {},
      queryWatermarkOffsets: (_t: string, _p: number, _ms: number, cb: (err: ClientError | null, o: { lowOffset: number; highOffset: number }) => void) => {
        const a = answers.shift()
        setImmediate(() => (typeof a === 'number' ? cb({ message: `error ${a}`, code: a }, { lowOffset: -1, highOffset: -1 }) : cb(null, a as { lowOffset: number; highOffset: number })))
      },
    }) as unknown as GroupConsumer

  it('asks again while the answer is one a broker just restarted gives (the client does not know the partition yet, no leader)', async () => {
    const answers = [-190, 5, { lowOffset: 3, highOffset: 9 }]
    assert.deepEqual(await new GroupOffsets(answering(answers), silentLogger).watermarks('c', 0), { lowOffset: 3, highOffset: 9 })
    assert.equal(answers.length, 0)
  })

  it('fails at once on any other answer, naming the partition', async () => {
    await assert.rejects(new GroupOffsets(answering([29, { lowOffset: 0, highOffset: 0 }]), silentLogger).watermarks('c', 1), /reading the offsets of c-1: error 29/)
  })
})
