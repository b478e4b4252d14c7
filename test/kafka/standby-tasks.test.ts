// Standby tasks: a task's local records kept up with its changelog, checkpointed, and what the task
// restores from once it is active here (LocalTaskRecords), over a real checkpoint store.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { setImmediate as tick } from 'node:timers/promises'
import { HELD_MAX } from '../../src/kafka/changelog-reader.js'
import type { RestoreConsumer } from '../../src/kafka/changelog-reader.js'
import { ChangelogTopics } from '../../src/kafka/changelog-topics.js'
import { claimMark, COMMIT_HEADER, commitHeaderValue } from '../../src/kafka/commit-numbers.js'
import type { CommitMark } from '../../src/kafka/commit-numbers.js'
import type { ConsumedMessage, TopicPartitionRef } from '../../src/kafka/fetcher.js'
import { LocalTaskRecords } from '../../src/kafka/local-task-records.js'
import { StandbyTasks } from '../../src/kafka/standby-tasks.js'
import { CheckpointStore } from '../../src/state/checkpoint-store.js'
import { silentLogger } from '../../src/index.js'
import { ManualClock } from '../../src/testing/index.js'

const root = mkdtempSync(join(tmpdir(), 'punctual-standby-'))
after(() => rmSync(root, { recursive: true, force: true }))
let dirs = 0

const topics = new ChangelogTopics('app', 0, ['counts'])
const [COUNTS, TASK_TOPIC] = topics.topics() as [string, string]

/** A restore channel that hands each consume call the messages the test sends, and says when a partition's end is reached. */
class Channel implements RestoreConsumer {
  assigned: Array<TopicPartitionRef & { offset: number }> = []
  disconnected = false
  private readonly queue: ConsumedMessage[] = []
  private pending: ((err: null, messages: ConsumedMessage[]) => void) | undefined
  connect(_o: object, callback: (err: null) => void): void {
    callback(null)
  }
  assign(partitions: Array<TopicPartitionRef & { offset: number }>): void {
    this.assigned = partitions
  }
  consume(_max: number, callback: (err: null, messages: ConsumedMessage[]) => void): void {
    this.pending = callback
    this.answer()
  }
  on(): void {}
  queryWatermarkOffsets(_t: string, _p: number, _timeout: number, callback: (err: null, o: { lowOffset: number; highOffset: number }) => void): void {
    callback(null, { lowOffset: 0, highOffset: 100 })
  }
  disconnect(callback?: () => void): void {
    this.disconnected = true
    callback?.()
  }
  send(messages: ConsumedMessage[]): void {
    this.queue.push(...messages)
    this.answer()
  }
  /** The consume call under way returns with nothing (as a timed-out one). */
  timeOut(): void {
    const p = this.pending
    this.pending = undefined
    p?.(null, [])
  }
  private answer(): void {
    const p = this.pending
    if (p === undefined || this.queue.length === 0) return
    this.pending = undefined
    p(null, this.queue.splice(0))
  }
}

function message(offset: number, key: string, value: string, n?: number): ConsumedMessage {
  return { topic: COUNTS, partition: 0, offset, key: Buffer.from(key), value: Buffer.from(value), timestamp: 0, ...(n === undefined ? {} : { headers: [{ [COMMIT_HEADER]: commitHeaderValue(n) }] }) } as ConsumedMessage
}

function setup(marks?: () => CommitMark | Promise<CommitMark>, busy = new Set<string>(), checkpointIntervalMs = 1_000) {
  const store = CheckpointStore.open(join(root, `s${++dirs}`))
  const local = new LocalTaskRecords(store, silentLogger, () => 1_000)
  const clock = new ManualClock(0)
  const channels: Channel[] = []
  const failures: unknown[] = []
  const standby = new StandbyTasks({
    local,
    logger: silentLogger,
    clock,
    scheduler: clock,
    checkpointIntervalMs,
    partitionsOf: (taskId) => ({ taskId, partition: 0, topics: topics.topics() }),
    topicsOf: () => topics,
    channel: () => {
      const c = new Channel()
      channels.push(c)
      return c
    },
    watermarks: async () => ({ lowOffset: 0, highOffset: 100 }),
    ...(marks === undefined ? {} : { marks: async (ids: readonly string[]) => new Map(await Promise.all(ids.map(async (id) => [id, await marks()] as const))) }),
    busy: (id) => busy.has(id),
    settled: async () => {},
    close: async () => {},
    fail: (err) => failures.push(err),
  })
  return { store, local, clock, channels, failures, standby }
}

const settle = async (): Promise<void> => {
  for (let i = 0; i < 20; i++) await tick()
  await new Promise((resolve) => setTimeout(resolve, 10))
}

/** Waits (ticks, then 10 ms at a time, up to 5 s) until `done`: what a checkpoint writes lands in lmdb on its own time. */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !done(); i++) await settle()
}

/** The local records of task 0_0 as store/key -> value. */
function records(store: CheckpointStore): Record<string, string> {
  const out: Record<string, string> = {}
  for (const r of store.records.of('0_0')) out[`${r.store}/${Buffer.from(r.key).toString()}`] = Buffer.from(r.value ?? new Uint8Array()).toString()
  return out
}

describe('StandbyTasks', () => {
  it('exactly-once: follows the changelog into the local records, checkpoints each interval and when it goes; the task then restores from there', async () => {
    const { store, local, clock, channels, failures, standby } = setup()
    await standby.update(new Set(['0_0']))
    await settle()
    assert.deepEqual(standby.progress().map((p) => p.taskId), ['0_0'])
    const channel = channels[0] as Channel
    assert.deepEqual(
      channel.assigned.map((p) => [p.topic, p.offset]),
      [
        [COUNTS, -2],
        [TASK_TOPIC, -2],
      ],
      'a fresh directory: from the beginning',
    )
    channel.send([message(0, 'a', '1'), message(1, 'b', '1'), message(2, 'a', '2')])
    await settle()
    assert.equal(store.load('0_0'), undefined, 'no checkpoint before the interval')
    clock.advance(1_000)
    await until(() => store.load('0_0') !== undefined)
    assert.deepEqual(store.load('0_0')?.changelog, { offsets: { [TASK_TOPIC]: 0, [COUNTS]: 3 }, writtenAt: 1_000 })
    assert.deepEqual(records(store), { 'counts/a': '2', 'counts/b': '1' })
    channel.send([message(3, 'b', '2')])
    await settle()
    // The task goes active here: the standby closes first, checkpointed.
    await standby.update(new Set())
    channel.timeOut()
    assert.deepEqual([standby.progress().map((p) => p.taskId), channel.disconnected], [[], true], 'it stops reading')
    assert.deepEqual(store.load('0_0')?.changelog?.offsets, { [TASK_TOPIC]: 0, [COUNTS]: 4 })
    await local.load([{ taskId: '0_0', partition: 0, topics: topics.topics() }], async () => ({ lowOffset: 0, highOffset: 100 }), () => undefined)
    assert.deepEqual(local.takePosition('0_0')?.offsets, { [TASK_TOPIC]: 0, [COUNTS]: 4 }, 'the active task reads only the tail from here')
    assert.deepEqual(failures, [])
    await store.close()
  })

  it('at least once: applies only what the group’s mark covers, and starts again from its own checkpoint', async () => {
    let mark: CommitMark = { n: 1, voids: [] }
    const { store, clock, channels, standby } = setup(() => mark)
    await standby.update(new Set(['0_0']))
    await settle()
    ;(channels[0] as Channel).send([message(0, 'a', '1', 1), message(1, 'a', '2', 2)])
    await settle()
    clock.advance(1_000)
    await until(() => store.load('0_0') !== undefined)
    assert.deepEqual(records(store), { 'counts/a': '1' }, 'commit 2 is held: the group has not taken it')
    assert.deepEqual(store.load('0_0')?.changelog, { offsets: { [TASK_TOPIC]: 0, [COUNTS]: 1 }, writtenAt: 1_000, n: 1, confirmed: true })
    mark = { n: 2, voids: [] }
    clock.advance(1_000)
    await until(() => store.load('0_0')?.changelog?.offsets[COUNTS] === 2)
    assert.deepEqual(records(store), { 'counts/a': '2' })
    assert.deepEqual(store.load('0_0')?.changelog?.offsets[COUNTS], 2)
    await standby.update(new Set())
    // Given the task as standby again: it reads on from its checkpoint.
    await standby.update(new Set(['0_0']))
    await settle()
    assert.deepEqual((channels[1] as Channel).assigned.find((p) => p.topic === COUNTS)?.offset, 2)
    await standby.stop()
    await store.close()
  })

  it('at least once: a standby that holds as many records as it may reads the group’s mark then, not at its next checkpoint', async () => {
    let mark: CommitMark = { n: 1, voids: [] }
    let asked = 0
    const { store, clock, channels, failures, standby } = setup(
      () => {
        asked++
        return mark
      },
      new Set(),
      60_000,
    )
    await standby.update(new Set(['0_0']))
    await settle()
    const before = asked
    // The owner's commit 2, not taken yet: the standby holds it, up to its bound.
    ;(channels[0] as Channel).send(Array.from({ length: HELD_MAX }, (_, i) => message(i, `k${i}`, 'v', 2)))
    await settle()
    assert.equal(asked, before + 1, 'full: it asks the group for the mark at once')
    assert.equal(standby.progress()[0]?.applied, 0, 'which does not cover commit 2 yet')
    // Not taken yet: it asks again a second later, on the clock, not in a loop.
    await settle()
    assert.equal(asked, before + 1)
    mark = { n: 2, voids: [] }
    clock.advance(999)
    await settle()
    assert.equal(standby.progress()[0]?.applied, 0)
    clock.advance(1)
    await settle()
    assert.equal(standby.progress()[0]?.applied, HELD_MAX, 'the group took commit 2: every record held is applied, before any checkpoint')
    assert.equal(store.load('0_0'), undefined, 'no checkpoint yet')
    assert.deepEqual(failures, [])
    await standby.stop()
    await store.close()
  })

  it('at least once: records the highest commit its records hold, not the mark (a claim’s base number, which the next claim voids)', async () => {
    const claim = claimMark({ n: 3, voids: [] })
    let mark: CommitMark = claim
    const { store, local, clock, channels, standby } = setup(() => mark)
    await standby.update(new Set(['0_0']))
    await settle()
    clock.advance(1_000)
    await settle()
    await standby.update(new Set())
    assert.equal(store.load('0_0')?.changelog?.n, 0, 'nothing applied: no commit')
    // The owner died before its first commit: the next claim voids the base number, yet the state is usable.
    const next = claimMark(claim)
    await local.load([{ taskId: '0_0', partition: 0, topics: topics.topics() }], async () => ({ lowOffset: 0, highOffset: 100 }), () => next)
    assert.notEqual(local.takePosition('0_0'), undefined, 'usable under the next claim')
    await standby.update(new Set(['0_0']))
    await settle()
    ;(channels[1] as Channel).send([message(0, 'a', '1', claim.n + 1)])
    mark = { n: claim.n + 1, voids: claim.voids }
    clock.advance(1_000)
    await settle()
    // Stopping waits for the checkpoint under way and checkpoints again: the figure no longer depends on how fast lmdb writes.
    await standby.stop()
    assert.equal(store.load('0_0')?.changelog?.n, claim.n + 1)
    await store.close()
  })

  it('a standby whose marks are not answered, or whose task runs here, waits and starts at a later checkpoint; the instance does not fail', async () => {
    let answer = false
    const busy = new Set(['0_1'])
    const { store, clock, channels, failures, standby } = setup(() => (answer ? { n: 0, voids: [] } : Promise.reject(new Error('coordinator loading'))), busy)
    await standby.update(new Set(['0_0', '0_1']))
    await settle()
    assert.deepEqual([standby.progress(), channels.length], [[], 0])
    answer = true
    clock.advance(1_000)
    await settle()
    assert.deepEqual(standby.progress().map((p) => p.taskId), ['0_0'], 'the task running here has no standby')
    busy.clear()
    clock.advance(1_000)
    await settle()
    assert.deepEqual(standby.progress().map((p) => p.taskId).sort(), ['0_0', '0_1'])
    assert.deepEqual(failures, [])
    await standby.stop()
    await store.close()
  })
})
