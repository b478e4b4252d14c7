import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { DirectFetcher } from '../../src/kafka/direct-fetcher.js'
import type { RetryTimer } from '../../src/kafka/direct-fetcher.js'
import type { BrokerLink, ClusterMetadata, ClusterWire, FetchRequest, PartitionFetched, PartitionLeader } from '../../src/kafka/broker-wire.js'
import type { FetchingConsumer, TopicPartitionRef } from '../../src/kafka/fetcher.js'
import type { FetchedPartition } from '../../src/kafka/fetched-partition.js'
import type { MutableLogRecord } from '../../src/processor/record-io.js'
import type { Logger } from '../../src/util/logger.js'
import { batch } from '../helpers/record-batches.js'

/** A partition's log on the fake cluster: values by offset from `start`. */
interface FakeLog {
  start: number
  values: string[]
}

/** A cluster in memory: logs, leaders, and failures to give the next requests. */
class FakeCluster implements ClusterWire {
  readonly logs = new Map<string, FakeLog>()
  leaders = new Map<string, PartitionLeader>()
  metadataCalls = 0
  readonly requests: Array<{ node: number; partitions: Array<[string, number]>; maxBytes: number[] }> = []
  /** Per node, what its next fetches answer instead of records: 'down' (the connection fails) or a partition's error code. */
  readonly failures = new Map<number, Array<'down' | { partition: string; code: number }>>()
  /** Records per partition in one response at most. */
  perFetch = 3
  closed: number[] = []
  /** Resolves a fetch held by the test (when `hold` is set). */
  hold: Promise<void> | undefined

  readonly decompress = (): never => {
    throw new Error('no compression here')
  }

  /** What the metadata names as leaders, when it is stale (the brokers answer by `leaders`). */
  staleLeaders: Map<string, PartitionLeader> | undefined

  metadata(): Promise<ClusterMetadata> {
    this.metadataCalls++
    const named = this.staleLeaders ?? this.leaders
    return Promise.resolve({ leaders: new Map(named), brokers: new Map([...new Set([...named.values()].map((l) => l.nodeId))].map((n) => [n, { host: 'h', port: n }])) })
  }

  link(node: number): BrokerLink {
    return {
      fetch: (r) => this.fetch(node, r),
      listOffsets: (partitions) => Promise.resolve(new Map(partitions.map((p) => [`${p.topic}:${p.partition}`, (this.logs.get(`${p.topic}:${p.partition}`) as FakeLog).start]))),
      close: () => void this.closed.push(node),
    }
  }

  close(): void {}

  private async fetch(node: number, r: FetchRequest): Promise<PartitionFetched[]> {
    this.requests.push({ node, partitions: r.partitions.map((p) => [`${p.topic}:${p.partition}`, p.offset]), maxBytes: r.partitions.map((p) => p.maxBytes) })
    // Who leads is decided when the request arrives: a leader that moves later still answers this one.
    const leading = new Set(r.partitions.map((p) => `${p.topic}:${p.partition}`).filter((k) => this.leaders.get(k)?.nodeId === node))
    if (this.hold !== undefined) await this.hold
    const failure = this.failures.get(node)?.shift()
    if (failure === 'down') throw new Error('connection closed')
    // A real broker holds an empty fetch up to its max wait: a turn of the event loop here.
    await new Promise((resolve) => setImmediate(resolve))
    return r.partitions.map((p) => {
      const k = `${p.topic}:${p.partition}`
      const log = this.logs.get(k) as FakeLog
      const end = log.start + log.values.length
      const base = { topic: p.topic, partition: p.partition, highWatermark: end, lastStableOffset: end, aborted: undefined }
      if (failure !== undefined && failure.partition === k) return { ...base, errorCode: failure.code, records: undefined }
      if (!leading.has(k)) return { ...base, errorCode: 6, records: undefined }
      if (p.offset < log.start || p.offset > end) return { ...base, errorCode: 1, records: undefined }
      const values = log.values.slice(p.offset - log.start, p.offset - log.start + this.perFetch)
      return { ...base, errorCode: 0, records: values.length === 0 ? undefined : batch(values.map((v) => ({ key: 'k', value: v })), { baseOffset: p.offset }) }
    })
  }
}

class FakeConsumer implements FetchingConsumer {
  paused: string[] = []
  polls = 0
  consume(_max: number, callback: (err: null, messages: []) => void): void {
    this.polls++
    setTimeout(() => callback(null, []), 5)
  }
  pause(partitions: TopicPartitionRef[]): void {
    this.paused.push(...partitions.map((p) => `${p.topic}:${p.partition}`))
  }
  resume(): void {
    throw new Error('the group consumer of a direct fetch is never resumed')
  }
}

const warnings: string[] = []
const logger: Logger = { debug: () => {}, info: () => {}, warn: (_f: unknown, m?: string) => void warnings.push(m ?? ''), error: () => {} }

/** Virtual time for the fetcher's retry waits: a wait moves it on at once (on the next turn of the event loop). */
class VirtualTime implements RetryTimer {
  ms = 0
  now(): number {
    return this.ms
  }
  sleep(ms: number): Promise<void> {
    this.ms += ms
    return new Promise((resolve) => setImmediate(resolve))
  }
}

function setUp(logs: Record<string, FakeLog>, leaders: Record<string, number>, maxHeld = 1000) {
  const cluster = new FakeCluster()
  for (const [k, log] of Object.entries(logs)) cluster.logs.set(k, log)
  for (const [k, node] of Object.entries(leaders)) cluster.leaders.set(k, { nodeId: node, epoch: 0 })
  const consumer = new FakeConsumer()
  const errors: string[] = []
  let appended = 0
  const time = new VirtualTime()
  const fetcher = new DirectFetcher(consumer, cluster, 1, () => void appended++, (err) => void errors.push(err.message), logger, maxHeld, time)
  return { cluster, consumer, fetcher, errors, time, appended: () => appended }
}

/** Reads what a partition holds from `from` to its end: the values read, in order. */
function drain(p: FetchedPartition, from: number): { values: string[]; next: number } {
  const into: MutableLogRecord = { key: null, keySerde: undefined, value: null, valueSerde: undefined, timestamp: 0, headers: [] }
  const values: string[] = []
  let offset = from
  for (const end = p.endOffset(); offset < end; offset++) if (p.read(offset, into)) values.push(Buffer.from(into.value as Uint8Array).toString())
  return { values, next: offset }
}

/** Waits until `condition`: fails after 10 s (the fetcher's own waits are virtual; the fake cluster answers at once). */
async function until(what: string, condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000
  while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 1))
  assert.ok(condition(), `timed out waiting until ${what}`)
}

const values = (from: number, to: number): string[] => Array.from({ length: to - from }, (_, i) => `v${from + i}`)

describe('the direct fetcher', () => {
  it("fetches from the group's offsets, or the log start where none is committed, each record once; the group consumer's partitions stay paused", async () => {
    const { cluster, consumer, fetcher, errors } = setUp({ 't:0': { start: 0, values: values(0, 10) }, 't:1': { start: 4, values: values(4, 12) } }, { 't:0': 1, 't:1': 1 })
    const p0 = fetcher.add('t', 0, 0)
    const p1 = fetcher.add('t', 1, 0)
    fetcher.assigned([{ topic: 't', partition: 0 }, { topic: 't', partition: 1 }])
    assert.deepEqual(consumer.paused, ['t:0', 't:1'])
    fetcher.start()
    // Nothing is fetched before the positions are known.
    await new Promise((resolve) => setTimeout(resolve, 10))
    assert.equal(cluster.requests.length, 0)
    fetcher.fetchFrom([{ topic: 't', partition: 0, offset: 6 }, { topic: 't', partition: 1, offset: -1 }])
    await until('both partitions are fetched to their ends', () => p0.caughtUp() && p1.caughtUp())
    assert.deepEqual(drain(p0, 6).values, values(6, 10))
    assert.deepEqual(drain(p1, 4).values, values(4, 12))
    assert.deepEqual(cluster.requests[0], { node: 1, partitions: [['t:0', 6], ['t:1', 4]], maxBytes: [1_048_576, 1_048_576] })
    assert.ok(consumer.polls > 0, 'the group consumer is polled for its group events')
    await fetcher.stop()
    assert.deepEqual(errors, [])
  })

  it('reads from the log start after an offset out of range (records deleted before the position)', async () => {
    const { fetcher, errors } = setUp({ 't:0': { start: 20, values: values(20, 25) } }, { 't:0': 1 })
    const p = fetcher.add('t', 0, 0)
    fetcher.start()
    fetcher.fetchFrom([{ topic: 't', partition: 0, offset: 3 }])
    await until('the partition is fetched to its end', () => p.caughtUp())
    assert.deepEqual(drain(p, 20).values, values(20, 25))
    assert.ok(warnings.some((w) => w.includes('offset 3 of t-0 is out of range')))
    await fetcher.stop()
    assert.deepEqual(errors, [])
  })

  it("follows a partition's leader to another broker, and fetches again after a broker's connection failed, nothing lost or doubled", async () => {
    const { cluster, fetcher, errors } = setUp({ 't:0': { start: 0, values: values(0, 12) }, 't:1': { start: 0, values: values(0, 12) } }, { 't:0': 1, 't:1': 1 })
    const p0 = fetcher.add('t', 0, 0)
    const p1 = fetcher.add('t', 1, 0)
    cluster.failures.set(1, [{ partition: 't:0', code: 0 }, 'down'])
    fetcher.start()
    fetcher.fetchFrom([{ topic: 't', partition: 0, offset: 0 }, { topic: 't', partition: 1, offset: 0 }])
    await until('a first fetch', () => cluster.requests.length >= 1)
    // Partition 1 moves to broker 2: broker 1 answers NOT_LEADER_OR_FOLLOWER for it from now on.
    cluster.leaders.set('t:1', { nodeId: 2, epoch: 1 })
    await until('both partitions are fetched to their ends', () => p0.caughtUp() && p1.caughtUp())
    assert.deepEqual(drain(p0, 0).values, values(0, 12))
    assert.deepEqual(drain(p1, 0).values, values(0, 12))
    assert.deepEqual(cluster.closed, [1], "the failed connection is closed (and made again)")
    assert.ok(cluster.requests.some((r) => r.node === 2 && r.partitions.some(([k]) => k === 't:1')), 'partition 1 is fetched from its new leader')
    assert.ok(cluster.metadataCalls >= 2)
    await fetcher.stop()
    assert.deepEqual(errors, [])
  })

  it('leaves a partition out of fetches while it holds maxHeld records, until its task read half of them', async () => {
    const { cluster, fetcher } = setUp({ 't:0': { start: 0, values: values(0, 30) } }, { 't:0': 1 }, 6)
    const p = fetcher.add('t', 0, 0)
    fetcher.start()
    fetcher.fetchFrom([{ topic: 't', partition: 0, offset: 0 }])
    await until('six records are held', () => p.size >= 6)
    // Once the size of its records is known, a partition asks for what fills the room it has left (at least 16 KiB).
    assert.deepEqual(cluster.requests.map((r) => r.maxBytes[0]), [1_048_576, 16_384])
    const asked = cluster.requests.length
    await new Promise((resolve) => setTimeout(resolve, 20))
    assert.equal(cluster.requests.length, asked, 'no fetch while the partition is full')
    assert.equal(p.size, 6)
    // Reading two is not half: still nothing; reading four is.
    const into: MutableLogRecord = { key: null, keySerde: undefined, value: null, valueSerde: undefined, timestamp: 0, headers: [] }
    p.read(2, into)
    fetcher.resumeDrained()
    await new Promise((resolve) => setTimeout(resolve, 10))
    assert.equal(cluster.requests.length, asked)
    p.read(3, into)
    fetcher.resumeDrained()
    await until('fetched again', () => cluster.requests.length > asked)
    await fetcher.stop()
  })

  it('drops what a fetch in flight brings for a partition removed or moved meanwhile', async () => {
    const { cluster, fetcher, errors } = setUp({ 't:0': { start: 0, values: values(0, 10) } }, { 't:0': 1 })
    let release!: () => void
    cluster.hold = new Promise((resolve) => (release = resolve))
    fetcher.add('t', 0, 0)
    fetcher.start()
    fetcher.fetchFrom([{ topic: 't', partition: 0, offset: 0 }])
    await until('the fetch is out', () => cluster.requests.length === 1)
    // Lost and assigned again: a new partition, read from offset 5.
    fetcher.remove('t', 0)
    const again = fetcher.add('t', 0, 0)
    fetcher.fetchFrom([{ topic: 't', partition: 0, offset: 5 }])
    cluster.hold = undefined
    release()
    await until('fetched to the end', () => again.caughtUp())
    assert.deepEqual(drain(again, 0).values, values(5, 10))
    await fetcher.stop()
    assert.deepEqual(errors, [])
  })

  it('a partition whose leader moves while its fetch is out is not asked of the new leader until that fetch is answered: each record once', async () => {
    // t:1 has no leader yet when the fetcher first looks.
    const { cluster, fetcher, errors } = setUp({ 't:0': { start: 0, values: values(0, 9) }, 't:1': { start: 0, values: values(0, 3) } }, { 't:0': 1 })
    let release!: () => void
    cluster.hold = new Promise((resolve) => (release = resolve))
    const p0 = fetcher.add('t', 0, 0)
    const p1 = fetcher.add('t', 1, 0)
    fetcher.start()
    fetcher.fetchFrom([{ topic: 't', partition: 0, offset: 0 }])
    await until('the fetch is out', () => cluster.requests.length === 1)
    // t:0 moves to broker 2; a new partition has the leaders looked up while broker 1 still holds the fetch.
    cluster.leaders.set('t:0', { nodeId: 2, epoch: 1 })
    cluster.leaders.set('t:1', { nodeId: 2, epoch: 0 })
    fetcher.fetchFrom([{ topic: 't', partition: 1, offset: 0 }])
    await until('broker 2 is asked for t:1', () => cluster.requests.some((r) => r.node === 2))
    assert.ok(cluster.requests.every((r) => r.node === 1 || !r.partitions.some(([k]) => k === 't:0')), 'not asked of broker 2 while broker 1 holds its fetch')
    cluster.hold = undefined
    release()
    await until('both are fetched to their ends', () => p0.caughtUp() && p1.caughtUp())
    assert.deepEqual(drain(p0, 0).values, values(0, 9))
    assert.deepEqual(drain(p1, 0).values, values(0, 3))
    await fetcher.stop()
    assert.deepEqual(errors, [])
  })

  it('asks for every partition first in turn, so none waits behind another that always has records', async () => {
    const { cluster, fetcher } = setUp({ 't:0': { start: 0, values: values(0, 30) }, 't:1': { start: 0, values: values(0, 30) }, 't:2': { start: 0, values: values(0, 30) } }, { 't:0': 1, 't:1': 1, 't:2': 1 })
    for (let i = 0; i < 3; i++) fetcher.add('t', i, 0)
    fetcher.start()
    fetcher.fetchFrom([0, 1, 2].map((partition) => ({ topic: 't', partition, offset: 0 })))
    await until('three fetches', () => cluster.requests.length >= 3)
    await fetcher.stop()
    assert.deepEqual(cluster.requests.slice(0, 3).map((r) => r.partitions[0]?.[0]), ['t:0', 't:1', 't:2'])
  })

  it('asks for the metadata at most once per 100 ms while a partition has no leader, however often it is woken', async () => {
    const { cluster, fetcher, time } = setUp({ 't:0': { start: 0, values: values(0, 3) } }, {})
    fetcher.add('t', 0, 0)
    fetcher.start()
    for (let i = 0; i < 200; i++) {
      fetcher.fetchFrom([{ topic: 't', partition: 0, offset: 0 }])
      await new Promise((resolve) => setImmediate(resolve))
    }
    await fetcher.stop()
    assert.ok(cluster.metadataCalls >= 2, 'asked again while there is no leader')
    assert.ok(cluster.metadataCalls <= Math.floor(time.ms / 100) + 1, `${cluster.metadataCalls} metadata requests in ${time.ms} ms`)
  })

  it('asks again at most once per 100 ms while the metadata names a broker that is not the leader', async () => {
    const { cluster, fetcher, time, errors } = setUp({ 't:0': { start: 0, values: values(0, 3) } }, { 't:0': 2 })
    cluster.staleLeaders = new Map([['t:0', { nodeId: 1, epoch: 0 }]])
    const p = fetcher.add('t', 0, 0)
    fetcher.start()
    fetcher.fetchFrom([{ topic: 't', partition: 0, offset: 0 }])
    for (let i = 0; i < 200; i++) await new Promise((resolve) => setImmediate(resolve))
    assert.ok(cluster.metadataCalls >= 2)
    assert.ok(cluster.metadataCalls <= Math.floor(time.ms / 100) + 1, `${cluster.metadataCalls} metadata requests in ${time.ms} ms`)
    // Once the metadata is right, the partition is read.
    cluster.staleLeaders = undefined
    await until('fetched to the end', () => p.caughtUp())
    assert.deepEqual(drain(p, 0).values, values(0, 3))
    await fetcher.stop()
    assert.deepEqual(errors, [])
  })

  it('reports an error the broker answers that no retry mends', async () => {
    const { cluster, fetcher, errors } = setUp({ 't:0': { start: 0, values: values(0, 3) } }, { 't:0': 1 })
    cluster.failures.set(1, [{ partition: 't:0', code: 29 }])
    fetcher.add('t', 0, 0)
    fetcher.start()
    fetcher.fetchFrom([{ topic: 't', partition: 0, offset: 0 }])
    await until('an error', () => errors.length > 0)
    assert.match(errors[0] as string, /fetching t-0 at offset 0: the broker answered error code 29/)
    await fetcher.stop()
  })
})
