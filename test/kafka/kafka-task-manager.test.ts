// KafkaTaskManager alone, on recording fakes of the parts it drives: what a rebalance step does when
// it meets an error. (kafka-runtime-rebalance.test.ts drives it whole, through KafkaRuntime and the
// mock cluster.)
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { TopicPartitionRef } from '../../src/kafka/fetcher.js'
import { KafkaTaskManager } from '../../src/kafka/kafka-task-manager.js'
import type { KafkaTaskParts } from '../../src/kafka/kafka-task-manager.js'
import { silentLogger } from '../../src/util/logger.js'

const ASSIGN = -175
const REVOKE = -174
const P0: TopicPartitionRef = { topic: 'in', partition: 0 }

/** What the group answers a transaction's offsets of a member it no longer has, as librdkafka reports it. */
const unknownMember = (): Error => Object.assign(new Error('Failed to commit offsets to transaction on broker localhost:9092/1: Broker: Unknown member'), { code: 25, isTxnRequiresAbort: true })

/** Exactly-once, a manager of one task (0_0, input partition in-0) whose commits fail with `commitError`, and what it did. */
function manager(commitError: () => Error) {
  const did: string[] = []
  const failures: unknown[] = []
  const runtime = { running: true }
  const parts = {
    exactlyOnce: true,
    logger: silentLogger,
    definitions: [{ id: '0_0', partition: 0, subtopology: { sourceTopics: ['in'], stores: [] } }],
    plan: { names: new Map<string, string>() },
    consumer: {
      assignmentLost: () => false,
      incrementalAssign: (ps: TopicPartitionRef[]) => did.push(`assign ${ps.map((p) => `${p.topic}-${p.partition}`).join(',')}`),
      incrementalUnassign: (ps: TopicPartitionRef[]) => did.push(`unassign ${ps.map((p) => `${p.topic}-${p.partition}`).join(',')}`),
    },
    offsets: {
      committed: async (ps: TopicPartitionRef[]) => ps.map((p) => ({ ...p, offset: 7 })),
      seekToCommitted: async () => undefined,
    },
    fetcher: { add() {}, remove() {}, assigned() {}, fetchFrom() {}, start() {}, stop: async () => undefined },
    tasks: {
      restoringIds: () => [],
      assign: (ids: string[]) => did.push(`tasks assigned ${ids.join(',')}`),
      lose: (ids: string[]) => did.push(`tasks lost ${ids.join(',')}`),
      revoke: (ids: string[], commit: () => void) => {
        did.push(`tasks revoked ${ids.join(',')}`)
        commit()
      },
    },
    active: [] as unknown[],
    loop: {
      failed: undefined as Error | undefined,
      // A commit that failed where the loop did not report it: the next `settled()` rethrows it.
      settled(): Promise<void> {
        const err = this.failed
        return err === undefined ? Promise.resolve() : Promise.reject(err)
      },
      commitNow() {
        this.failed = commitError()
      },
      discardFailedCommit: async function (this: { failed: Error | undefined }) {
        this.failed = undefined
        did.push('failed commit discarded')
      },
      disarm() {},
      rearm() {},
      scheduleRun() {},
    },
    producer: {
      abortOrReplace: async () => {
        did.push('transaction aborted')
      },
    },
    restore: { stop() {}, load: async () => undefined, source: () => undefined },
    backend: { assigned() {} },
    rejoin: () => did.push('rejoin'),
    isRunning: () => runtime.running,
    isStopped: () => false,
    fail: (err: unknown) => failures.push(err),
  }
  return { m: new KafkaTaskManager(parts as unknown as KafkaTaskParts), did, failures, parts, runtime }
}

describe('KafkaTaskManager: a rebalance step that meets an error', () => {
  it('exactly-once, a member-fenced error met in a revocation (not reported by the task loop): the partitions are unassigned, the tasks lost, the transaction aborted, and the consumer joins again; the runtime keeps running', async () => {
    const { m, did, failures, parts } = manager(unknownMember)
    m.onRebalance(ASSIGN, [P0])
    await m.settled()
    assert.deepEqual(did, ['assign in-0', 'tasks assigned 0_0'])
    did.length = 0
    // The task's state is active; the revocation's commit fails with UNKNOWN_MEMBER_ID.
    parts.active.push({ taskId: { toString: () => '0_0' } })
    m.onRebalance(REVOKE, [P0])
    await m.settled()
    await m.settled()
    assert.deepEqual(failures, [], 'the runtime is not stopped')
    assert.deepEqual(did, ['tasks revoked 0_0', 'unassign in-0', 'tasks lost ', 'failed commit discarded', 'transaction aborted', 'tasks lost 0_0', 'rejoin'])
    assert.equal(m.recovering, false)
  })

  it('exactly-once, a member-fenced error met in a revocation while the runtime stops: not a failure (the stop aborts its last transaction), and the consumer is told', async () => {
    const { m, did, failures, parts, runtime } = manager(unknownMember)
    m.onRebalance(ASSIGN, [P0])
    await m.settled()
    did.length = 0
    // The commit in flight fails as the stop begins.
    parts.loop.settled = function () {
      runtime.running = false
      return Promise.reject(unknownMember())
    }
    m.onRebalance(REVOKE, [P0])
    await m.settled()
    assert.deepEqual(failures, [])
    assert.deepEqual(did, ['unassign in-0'])
  })

  it('a revocation that fails otherwise stops the runtime, and the consumer is told of the revocation all the same', async () => {
    const broken = new Error('Local: Erroneous state')
    const { m, did, failures } = manager(() => broken)
    m.onRebalance(ASSIGN, [P0])
    await m.settled()
    did.length = 0
    m.onRebalance(REVOKE, [P0])
    await m.settled()
    assert.deepEqual(failures, [broken])
    assert.deepEqual(did, ['tasks revoked 0_0', 'unassign in-0'])
  })
})
