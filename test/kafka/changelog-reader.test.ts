import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { setImmediate as tick } from 'node:timers/promises'
import fc from '../helpers/fc.js'
import { ChangelogReader, HELD_MAX } from '../../src/kafka/changelog-reader.js'
import type { RestoreConsumer } from '../../src/kafka/changelog-reader.js'
import { ChangelogTopics } from '../../src/kafka/changelog-topics.js'
import { afterRestore, claimMark, COMMIT_HEADER, commitHeaderValue, EPOCH_SIZE, formatCommitMark, NO_COMMIT, parseCommitMark } from '../../src/kafka/commit-numbers.js'
import type { CommitMark } from '../../src/kafka/commit-numbers.js'
import type { ConsumedMessage, TopicPartitionRef } from '../../src/kafka/fetcher.js'

type Callback<A extends unknown[]> = (...args: A) => void

/** A restore consumer whose calls answer only when the test says: it records what was called while what was under way. */
class FakeConsumer implements RestoreConsumer {
  readonly calls: string[] = []
  assigned: Array<TopicPartitionRef & { offset: number }> = []
  connecting: Callback<[null]> | undefined
  consuming: Callback<[null, ConsumedMessage[]]> | undefined
  disconnecting: Callback<[]> | undefined
  private eof: ((eof: TopicPartitionRef & { offset: number }) => void) | undefined

  connect(_options: object, callback: Callback<[null]>): void {
    this.calls.push('connect')
    this.connecting = callback
  }
  assign(partitions: Array<TopicPartitionRef & { offset: number }>): void {
    this.assigned = partitions
    this.calls.push('assign')
  }
  consume(_max: number, callback: Callback<[null, ConsumedMessage[]]>): void {
    this.calls.push(this.connecting !== undefined ? 'consume while connecting' : 'consume')
    this.consuming = callback
  }
  on(_event: 'partition.eof', listener: (eof: TopicPartitionRef & { offset: number }) => void): void {
    this.eof = listener
  }
  queryWatermarkOffsets(_t: string, _p: number, _timeout: number, callback: Callback<[null, { lowOffset: number; highOffset: number }]>): void {
    callback(null, { lowOffset: 0, highOffset: 1 })
  }
  disconnect(callback: Callback<[]>): void {
    this.calls.push(this.connecting !== undefined || this.consuming !== undefined ? 'disconnect while busy' : 'disconnect')
    this.disconnecting = callback
  }

  connected(): void {
    const cb = this.connecting as Callback<[null]>
    this.connecting = undefined
    cb(null)
  }
  consumed(messages: ConsumedMessage[]): void {
    const cb = this.consuming as Callback<[null, ConsumedMessage[]]>
    this.consuming = undefined
    cb(null, messages)
  }
  atEnd(topic: string): void {
    this.eof?.({ topic, partition: 0, offset: 1 })
  }
}

describe('ChangelogReader: its restore consumer', () => {
  const topics = new ChangelogTopics('app', 0, [])
  const topic = topics.topics()[0] as string
  const reader = (consumer: FakeConsumer): ChangelogReader => new ChangelogReader(consumer, topics, 0, (err) => assert.fail(err))

  it('closed while it connects: disconnects once the connect returns, and reads nothing', async () => {
    const consumer = new FakeConsumer()
    const r = reader(consumer)
    r.open((err) => assert.fail(err.message))
    r.close()
    let disconnected = false
    void r.disconnected().then(() => (disconnected = true))
    assert.deepEqual(consumer.calls, ['connect'])
    consumer.connected()
    assert.deepEqual(consumer.calls, ['connect', 'disconnect'])
    await tick()
    assert.equal(disconnected, false, 'not before the client says so')
    consumer.disconnecting?.()
    await tick()
    assert.equal(disconnected, true)
  })

  it('closed while a consume call is under way: disconnects once it returns, and drops what it returned', async () => {
    const consumer = new FakeConsumer()
    const r = reader(consumer)
    r.open((err) => assert.fail(err.message))
    consumer.connected()
    assert.deepEqual(consumer.calls, ['connect', 'assign', 'consume'])
    r.close()
    assert.deepEqual(consumer.calls, ['connect', 'assign', 'consume'], 'no disconnect during the consume call')
    consumer.consumed([{ topic, partition: 0, offset: 0, key: Buffer.of(0, 1, 0x74), value: null, timestamp: 0 } as unknown as ConsumedMessage])
    assert.deepEqual(consumer.calls, ['connect', 'assign', 'consume', 'disconnect'])
    consumer.disconnecting?.()
    await r.disconnected()
  })

  it('read to the end: the last read closes it, and it disconnects between consume calls', async () => {
    const consumer = new FakeConsumer()
    const r = reader(consumer)
    r.open((err) => assert.fail(err.message))
    consumer.connected()
    consumer.atEnd(topic)
    assert.deepEqual(r.read(10), [])
    assert.deepEqual(consumer.calls, ['connect', 'assign', 'consume'], 'the consume call is still under way')
    consumer.consumed([])
    assert.deepEqual(consumer.calls, ['connect', 'assign', 'consume', 'disconnect'])
    consumer.disconnecting?.()
    await r.disconnected()
  })

  it('a connect that fails is reported, and a reader never opened closes at once', async () => {
    const consumer = new FakeConsumer()
    const r = reader(consumer)
    const failures: string[] = []
    r.open((err) => failures.push(err.message))
    ;(consumer.connecting as unknown as Callback<[{ message: string }]>)({ message: 'broker unreachable' })
    assert.deepEqual(failures, ['broker unreachable'])
    const never = reader(new FakeConsumer())
    await never.disconnected()
  })

  it('reads from the beginning, or from the offsets given (a local checkpoint), counting what remains from there', () => {
    const own = new ChangelogTopics('app', 0, ['counts'])
    const [store, task] = own.topics() as [string, string]
    const fromStart = new FakeConsumer()
    new ChangelogReader(fromStart, own, 0, (err) => assert.fail(err)).open((err) => assert.fail(err.message))
    fromStart.connected()
    assert.deepEqual(fromStart.assigned, [{ topic: store, partition: 0, offset: -2 }, { topic: task, partition: 0, offset: -2 }])

    const fromCheckpoint = new FakeConsumer()
    const tail = new ChangelogReader(fromCheckpoint, own, 0, (err) => assert.fail(err), { [store]: 7, [task]: 1 })
    tail.open((err) => assert.fail(err.message))
    fromCheckpoint.connected()
    assert.deepEqual(fromCheckpoint.assigned, [{ topic: store, partition: 0, offset: 7 }, { topic: task, partition: 0, offset: 1 }])
    // The fake's end offsets are 1: nothing remains of the task topic, nor of the store topic past 7 (never 0 before the end).
    assert.equal(tail.remaining(), 1)
  })

  it('at least once, leaves out the records of commits its mark does not cover (after it, or void); unnumbered ones always go in', () => {
    const own = new ChangelogTopics('app', 0, ['counts'])
    const [store] = own.topics() as [string]
    const consumer = new FakeConsumer()
    // Commit 5 is the last complete one; 2 and 3 were cut short by a crash, and later numbers went past them.
    const r = new ChangelogReader(consumer, own, 0, (err) => assert.fail(err), {}, { n: 5, voids: [[2, 3]] })
    r.open((err) => assert.fail(err.message))
    consumer.connected()
    const message = (offset: number, key: string, commit?: number): ConsumedMessage => ({
      topic: store,
      partition: 0,
      offset,
      key: Buffer.from(key),
      value: Buffer.from('v'),
      timestamp: 0,
      ...(commit === undefined ? {} : { headers: [{ [COMMIT_HEADER]: commitHeaderValue(commit) }] }),
    })
    consumer.consumed([message(0, 'a'), message(1, 'b', 1), message(2, 'c', 2), message(3, 'd', 4), message(4, 'e', 5), message(5, 'f', 6), message(6, 'g', 7)])
    assert.deepEqual(
      r.read(10).map((x) => Buffer.from(x.key).toString()),
      ['a', 'b', 'd', 'e'],
    )
    assert.equal(r.skipped, 3)
    assert.equal(r.highestSkipped, 7)
  })
})

/** A changelog record of `topic` at `offset`, numbered `commit` when given. */
function changelogMessage(topic: string, offset: number, key: string, value: string, commit?: number): ConsumedMessage {
  return {
    topic,
    partition: 0,
    offset,
    key: Buffer.from(key),
    value: Buffer.from(value),
    timestamp: 0,
    ...(commit === undefined ? {} : { headers: [{ [COMMIT_HEADER]: commitHeaderValue(commit) }] }),
  } as ConsumedMessage
}

/** Restores `log` by `mark` through a reader: the state it folds to (last value wins, per topic and key), and the reader. */
function restore(topics: ChangelogTopics, log: readonly ConsumedMessage[], mark: CommitMark | undefined): { state: Map<string, string>; reader: ChangelogReader } {
  const consumer = new FakeConsumer()
  const reader = new ChangelogReader(consumer, topics, 0, (err) => assert.fail(err), {}, mark)
  reader.open((err) => assert.fail(err.message))
  consumer.connected()
  consumer.consumed([...log])
  const state = new Map<string, string>()
  for (const r of reader.read(log.length + 1)) state.set(`${r.store}/${Buffer.from(r.key).toString()}`, Buffer.from(r.value ?? new Uint8Array()).toString())
  return { state, reader }
}

describe('ChangelogReader: owner epochs (at least once)', () => {
  const own = new ChangelogTopics('app', 0, ['counts', 'totals'])
  const [counts, totals] = own.topics() as [string, string]
  const epoch1 = (seq: number): number => EPOCH_SIZE + seq

  /**
   * The old owner's last complete commit is 0x10 (k=16). The new owner claims epoch 1, restores (k=16), and
   * counts on: commits epoch1(1..9), k=17..25, its mark epoch1(9). Paused past its session timeout, the old
   * owner then writes its next commit, 0x11 (k=17 by its count), after the new owner's records.
   */
  function zombieLog(): ConsumedMessage[] {
    const log: ConsumedMessage[] = []
    for (let n = 1; n <= 0x10; n++) log.push(changelogMessage(counts, log.length, 'k', String(n), n))
    for (let s = 1; s <= 9; s++) log.push(changelogMessage(counts, log.length, 'k', String(0x10 + s), epoch1(s)))
    log.push(changelogMessage(counts, log.length, 'k', '17', 0x11))
    return log
  }
  const claimed = claimMark({ n: 0x10, voids: [] })
  const newOwnersMark: CommitMark = { n: epoch1(9), voids: claimed.voids }

  it('a zombie’s record written after the new owner’s is left out: the state is the new owner’s', () => {
    const { state, reader } = restore(own, zombieLog(), newOwnersMark)
    assert.equal(state.get('counts/k'), '25')
    assert.equal(reader.skipped + reader.stale, 1)
  })

  it('even once the claim’s void range is trimmed from the mark: an older epoch after a newer one in its topic is stale', () => {
    const { state, reader } = restore(own, zombieLog(), { n: epoch1(9), voids: [] })
    assert.equal(state.get('counts/k'), '25')
    assert.equal(reader.stale, 1)
    assert.equal(reader.skipped, 0, 'stale records are not counted as skipped')
    assert.equal(reader.highestSkipped, 0)
  })

  it('per topic: an older epoch is stale only after a newer one in the same topic; unnumbered records are always applied', () => {
    const log = [
      changelogMessage(counts, 0, 'x', 'new', epoch1(1)),
      changelogMessage(totals, 0, 'y', 'old', 5),
      changelogMessage(counts, 1, 'u', 'unnumbered'),
      changelogMessage(counts, 2, 'x', 'zombie', 6),
      changelogMessage(totals, 1, 'y', 'newer', epoch1(2)),
    ]
    const { state, reader } = restore(own, log, { n: epoch1(2), voids: [] })
    assert.deepEqual(Object.fromEntries(state), { 'counts/x': 'new', 'totals/y': 'newer', 'counts/u': 'unnumbered' })
    assert.deepEqual([reader.stale, reader.skipped], [1, 0])
  })

  it('a record its mark does not cover is skipped, not stale, whatever its epoch; without a mark (exactly-once) everything is applied', () => {
    const log = [changelogMessage(counts, 0, 'x', 'new', epoch1(10)), changelogMessage(counts, 1, 'x', 'zombie', 0x11)]
    const { state, reader } = restore(own, log, newOwnersMark)
    assert.deepEqual([state.get('counts/x'), reader.skipped, reader.highestSkipped, reader.stale], [undefined, 2, epoch1(10), 0])
    assert.equal(restore(own, log, undefined).state.get('counts/x'), 'zombie')
    // A newer epoch read, even left out (a commit of the new owner cut short), makes older ones after it stale.
    const after = restore(own, [...log, changelogMessage(counts, 2, 'x', 'older', 0x10)], newOwnersMark)
    assert.deepEqual([after.state.get('counts/x'), after.reader.stale], [undefined, 1])
  })

  it('owners come and go, cut short by crashes, their zombies writing late: every restore is the state of the last complete commit (property)', () => {
    const keys = ['a', 'b', 'c']
    const ownership = fc.record({
      commits: fc.array(fc.subarray(keys, { minLength: 1 }), { minLength: 1, maxLength: 6 }),
      // The last commit is cut short by a crash: part of its records written, the group's offsets not.
      crash: fc.boolean(),
      // The previous owner, paused past its session timeout, writes its next commit after this many of this owner's.
      zombieAt: fc.option(fc.nat(6), { nil: undefined }),
      store: fc.constantFrom('counts', 'totals'),
    })
    fc.assert(
      fc.property(fc.array(ownership, { minLength: 1, maxLength: 8 }), (ownerships) => {
        const log: ConsumedMessage[] = []
        const offsets = new Map<string, number>()
        const write = (store: string, key: string, value: number, n: number): void => {
          const topic = store === 'counts' ? counts : totals
          const offset = offsets.get(topic) ?? 0
          offsets.set(topic, offset + 1)
          log.push(changelogMessage(topic, offset, key, String(value), n))
        }
        /** The group's offsets' metadata, and the counts as of the commit it names. */
        let group = formatCommitMark(NO_COMMIT)
        let truth = new Map<string, number>()
        let previous: { mark: CommitMark; counts: Map<string, number>; store: string } | undefined
        const restored = (mark: CommitMark): { counts: Map<string, number>; highestSkipped: number } => {
          const { state, reader } = restore(own, log, mark)
          const got = new Map<string, number>()
          for (const [k, v] of state) got.set(k, Number(v))
          assert.deepEqual(Object.fromEntries(got), Object.fromEntries(truth))
          return { counts: got, highestSkipped: reader.highestSkipped }
        }
        for (const o of ownerships) {
          // The new owner claims the task (a strict commit: the group takes it), restores, and goes on from there.
          const claim = claimMark(parseCommitMark(group) as CommitMark)
          group = formatCommitMark(claim)
          const { counts: state, highestSkipped } = restored(claim)
          let mark = afterRestore(claim, highestSkipped)
          const zombie = previous
          const zombieWrites = (): void => {
            if (zombie === undefined) return
            const n = zombie.mark.n + 1
            for (const k of keys) write(zombie.store, k, (zombie.counts.get(`${zombie.store}/${k}`) ?? 0) + 1, n)
          }
          for (const [i, commit] of o.commits.entries()) {
            if (i === o.zombieAt) zombieWrites()
            mark = { n: mark.n + 1, voids: mark.voids }
            const cut = o.crash && i === o.commits.length - 1
            for (const [j, k] of commit.entries()) {
              const key = `${o.store}/${k}`
              state.set(key, (state.get(key) ?? 0) + 1)
              if (!cut || j < commit.length / 2) write(o.store, k, state.get(key) as number, mark.n)
            }
            if (!cut) {
              group = formatCommitMark(mark)
              truth = new Map(state)
            }
          }
          if (o.zombieAt !== undefined && o.zombieAt >= o.commits.length) zombieWrites()
          previous = { mark, counts: state, store: o.store }
        }
        restored(claimMark(parseCommitMark(group) as CommitMark))
      }),
    )
  })
})

describe('ChangelogReader: following, as a standby (at least once)', () => {
  const own = new ChangelogTopics('app', 0, ['counts'])
  const topic = own.topics()[0] as string

  /** A following reader over a fake consumer: `feed` hands it messages, `applied` is what it let through so far (last value wins). */
  function follower(mark: CommitMark) {
    const consumer = new FakeConsumer()
    const reader = new ChangelogReader(consumer, own, 0, (err) => assert.fail(err), {}, mark, true)
    reader.open((err) => assert.fail(err.message))
    consumer.connected()
    const applied = new Map<string, string>()
    const drain = (): void => {
      for (const r of reader.read(1_000_000)) applied.set(Buffer.from(r.key).toString(), Buffer.from(r.value ?? new Uint8Array()).toString())
    }
    return {
      reader,
      applied,
      consumer,
      async feed(messages: ConsumedMessage[]): Promise<void> {
        await tick()
        assert.ok(consumer.consuming !== undefined, 'a following reader always reads on')
        consumer.consumed(messages)
        drain()
      },
      drain,
    }
  }

  it('holds a commit the group has not taken, releases it once the mark covers it, and leaves out what a claim voids', async () => {
    const f = follower({ n: 1, voids: [] })
    await f.feed([changelogMessage(topic, 0, 'a', '1', 1), changelogMessage(topic, 1, 'a', '2', 2), changelogMessage(topic, 2, 'b', '1', 2)])
    assert.deepEqual(Object.fromEntries(f.applied), { a: '1' })
    assert.equal(f.reader.holding(), true)
    assert.equal(f.reader.readTo()[topic], 1, 'its local records reach only the first record held')
    f.consumer.atEnd(topic)
    await f.feed([])
    assert.notEqual(f.reader.remaining(), 0, 'reaching the end does not end it')
    f.reader.follow({ n: 2, voids: [] })
    f.drain()
    assert.deepEqual(Object.fromEntries(f.applied), { a: '2', b: '1' })
    assert.equal(f.reader.readTo()[topic], 3)
    // Commit 3 is cut short by a crash; the next owner's claim voids it, and its own commit follows.
    const claim = claimMark({ n: 2, voids: [] })
    await f.feed([changelogMessage(topic, 3, 'a', '3', 3), changelogMessage(topic, 4, 'a', '3', claim.n + 1)])
    f.reader.follow(claim)
    f.drain()
    assert.deepEqual([f.applied.get('a'), f.reader.skipped, f.reader.holding()], ['2', 1, true])
    assert.equal(f.reader.readTo()[topic], 4)
    f.reader.follow({ n: claim.n + 1, voids: claim.voids })
    f.drain()
    assert.deepEqual([f.applied.get('a'), f.reader.holding()], ['3', false])
  })

  it(`holds at most about ${HELD_MAX} records: full, it reads no more until a mark releases some, and says so`, async () => {
    const f = follower({ n: 1, voids: [] })
    const batch = (from: number, count: number): ConsumedMessage[] => Array.from({ length: count }, (_, i) => changelogMessage(topic, from + i, `k${from + i}`, 'v', 2))
    let offset = 0
    while (!f.reader.full() && offset < 2 * HELD_MAX) {
      await f.feed(batch(offset, 2000))
      offset += 2000
    }
    assert.equal(offset, HELD_MAX, 'full once it holds HELD_MAX records')
    await tick()
    assert.equal(f.consumer.consuming, undefined, 'a full reader asks its consumer for nothing more')
    let readable = false
    void f.reader.whenReadable().then(() => (readable = true))
    await tick()
    assert.equal(readable, true, 'a full reader is readable, though it has nothing to read: its standby asks for a mark')
    assert.equal(f.applied.size, 0)
    f.reader.follow({ n: 2, voids: [] })
    f.drain()
    assert.equal(f.applied.size, offset, 'the mark releases every record held')
    assert.equal(f.reader.full(), false)
    assert.notEqual(f.consumer.consuming, undefined, 'and it reads on')
  })

  it('a record without a number waits behind the records held before it in its topic, and its commit number counts none', async () => {
    const f = follower({ n: 1, voids: [] })
    await f.feed([changelogMessage(topic, 0, 'k', 'held', 2), changelogMessage(topic, 1, 'k', 'plain')])
    assert.deepEqual([Object.fromEntries(f.applied), f.reader.readTo()[topic]], [{}, 0])
    f.reader.follow({ n: 2, voids: [] })
    f.drain()
    assert.deepEqual([f.applied.get('k'), f.reader.readTo()[topic], f.reader.highestApplied], ['plain', 2, 2])
  })

  it('its local records, then the tail read from where its last checkpoint reached, are the state of the last complete commit (property)', async () => {
    const step = fc.oneof(
      // `late`: the standby checkpoints after the commit's records are written, before the group takes its offsets.
      fc.record({ kind: fc.constant('commit' as const), keys: fc.subarray(['a', 'b', 'c'], { minLength: 1 }), late: fc.boolean() }),
      fc.record({ kind: fc.constant('crash' as const), keys: fc.subarray(['a', 'b', 'c'], { minLength: 1 }) }),
      fc.record({ kind: fc.constant('checkpoint' as const) }),
    )
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
        const log: ConsumedMessage[] = []
        let group: CommitMark = NO_COMMIT
        let mark: CommitMark = NO_COMMIT
        let truth = new Map<string, number>()
        let working = new Map<string, number>()
        const f = follower(NO_COMMIT)
        let fed = 0
        let checkpoint: Record<string, number> = {}
        const write = (keys: readonly string[], n: number, upTo: number): void => {
          for (const [j, k] of keys.entries()) {
            working.set(k, (working.get(k) ?? 0) + 1)
            if (j < upTo) log.push(changelogMessage(topic, log.length, k, String(working.get(k)), n))
          }
        }
        const checkpointNow = async (): Promise<void> => {
          await f.feed(log.slice(fed))
          fed = log.length
          f.reader.follow(group)
          f.drain()
          checkpoint = f.reader.readTo()
        }
        for (const s of steps) {
          if (s.kind === 'checkpoint') {
            await checkpointNow()
            continue
          }
          mark = { n: mark.n + 1, voids: mark.voids }
          if (s.kind === 'commit') {
            write(s.keys, mark.n, s.keys.length)
            if (s.late) await checkpointNow()
            group = mark
            truth = new Map(working)
          } else {
            write(s.keys, mark.n, Math.ceil(s.keys.length / 2))
            // The next owner claims the task and goes on from the last complete commit.
            group = mark = claimMark(group)
            working = new Map(truth)
          }
        }
        await f.feed(log.slice(fed))
        // The standby becomes active: the claim, then its local records and the tail from its checkpoint.
        const claim = claimMark(group)
        const tail = restore(
          own,
          log.filter((m) => m.offset >= (checkpoint[topic] ?? 0)),
          claim,
        ).state
        const state = new Map(f.applied)
        for (const [k, v] of tail) state.set(k.slice(k.indexOf('/') + 1), v)
        assert.deepEqual(Object.fromEntries(state), Object.fromEntries([...truth].map(([k, v]) => [k, String(v)])))
      }),
    )
  })
})
