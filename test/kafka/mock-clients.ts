// Clients of an in-memory Kafka cluster, supplied to KafkaRuntime in place of Confluent's: topics with
// transactions (read_committed readers stop at the first open one), group offsets with their metadata,
// transactional ids whose producers fence each other, and rebalances the test makes (`groupAssigns`, `groupRevokes`, `lose`). Every call answers
// asynchronously, as librdkafka's do; a test can hold or fail the transaction steps and offset commits.
import type { AdminClient, ClientError, ClientEventListeners, ClientSettings, GroupConsumer, KafkaClientSupplier, ProducerClient, RestoreClient, GlobalClient } from '../../src/kafka/client-supplier.js'
import type { ConsumedMessage, TopicPartitionRef } from '../../src/kafka/fetcher.js'
import type { PartitionOffset } from '../../src/kafka/kafka-commit-backend.js'

type Callback = (err: ClientError | null | undefined) => void
const later = (f: () => void): void => void setImmediate(f)

interface Stored {
  readonly key: Buffer | null
  readonly value: Buffer | null
  readonly timestamp: number
  readonly headers: ReadonlyArray<Record<string, Buffer>> | undefined
  /** The transaction that wrote it, while open; 'aborted' once aborted. */
  txn: Transaction | 'aborted' | undefined
  /** A transaction's commit or abort marker: it takes an offset, and no consumer gets it. */
  readonly control?: true
}

interface Transaction {
  readonly records: Stored[]
  readonly offsets: PartitionOffset[]
  /** The partitions it wrote (each gets a marker when it ends), as `topic:partition`. */
  readonly partitions: Set<string>
}

/** A step of a transactional producer the test can hold (until it releases it) or fail. */
export type TransactionStep = 'sendOffsetsToTransaction' | 'commitTransaction' | 'abortTransaction' | 'flush'

export class MockCluster {
  readonly topics = new Map<string, Stored[][]>()
  readonly groupOffsets = new Map<string, { offset: number; metadata?: string }>()
  readonly consumers: MockGroupConsumer[] = []
  /** What happened, in order: transactions committed and aborted, offsets committed, producers made. */
  readonly events: string[] = []
  /** Per transactional id: its current producer (an older one is fenced). */
  private readonly owners = new Map<string, MockProducer>()
  /** Steps held: each waits until the test calls the function it is given. */
  readonly holds = new Map<TransactionStep, (release: () => void) => void>()
  /** Restore consumers find nothing while set (a slow restore). */
  restoresStalled = false
  readonly producers: MockProducer[] = []
  /** Steps failing once with this error. */
  readonly failures = new Map<TransactionStep, ClientError>()

  createTopic(name: string, partitions: number): void {
    if (!this.topics.has(name)) this.topics.set(name, Array.from({ length: partitions }, () => []))
  }

  partition(topic: string, partition: number): Stored[] {
    const log = this.topics.get(topic)?.[partition]
    if (log === undefined) throw new Error(`mock cluster: no partition ${topic}-${partition}`)
    return log
  }

  /** Appends records as a plain producer would (outside transactions). */
  produce(topic: string, partition: number, records: ReadonlyArray<{ key: string; value: string; timestamp: number }>): void {
    for (const r of records) this.partition(topic, partition).push({ key: Buffer.from(r.key), value: Buffer.from(r.value), timestamp: r.timestamp, headers: undefined, txn: undefined })
  }

  /** The committed records of a topic, per partition, as strings (what a read_committed reader sees). */
  committed(topic: string): Array<{ partition: number; key: string; value: string | null; headers: Stored['headers'] }> {
    const out: Array<{ partition: number; key: string; value: string | null; headers: Stored['headers'] }> = []
    ;(this.topics.get(topic) ?? []).forEach((log, partition) => {
      for (const r of log) if (r.txn === undefined && r.control !== true) out.push({ partition, key: r.key?.toString() ?? '', value: r.value === null ? null : r.value.toString(), headers: r.headers })
    })
    return out
  }

  /** Records of open transactions still in the topic. */
  openRecords(topic: string): number {
    return (this.topics.get(topic) ?? []).flat().filter((r) => r.txn !== undefined && r.txn !== 'aborted').length
  }

  /** The end a read_committed reader sees: the first record of an open transaction, or the log's end. */
  stableEnd(log: readonly Stored[], readCommitted: boolean): number {
    if (!readCommitted) return log.length
    const open = log.findIndex((r) => r.txn !== undefined && r.txn !== 'aborted')
    return open < 0 ? log.length : open
  }

  /** A step of a producer: held or failed as the test set up, then done. */
  step(name: TransactionStep, done: Callback, body: () => ClientError | undefined): void {
    const fail = this.failures.get(name)
    if (fail !== undefined) {
      this.failures.delete(name)
      return later(() => done(fail))
    }
    const run = (): void => later(() => done(body() ?? null))
    const hold = this.holds.get(name)
    if (hold === undefined) return run()
    this.holds.delete(name)
    hold(run)
  }

  /** A producer took `id` over: the one before is fenced, its open transaction aborted. */
  claim(id: string, producer: MockProducer): void {
    const before = this.owners.get(id)
    if (before !== undefined && before !== producer) {
      before.fenced = true
      before.abortOpen()
    }
    this.owners.set(id, producer)
  }

  lastProducer(): MockProducer | undefined {
    return this.producers.at(-1)
  }

  supplier(): KafkaClientSupplier {
    return {
      getProducer: (settings) => {
        const producer = new MockProducer(this, settings)
        this.producers.push(producer)
        return producer as unknown as ProducerClient
      },
      getConsumer: (settings) => {
        const consumer = new MockGroupConsumer(this, settings)
        this.consumers.push(consumer)
        return consumer as unknown as GroupConsumer
      },
      getRestoreConsumer: (settings) => new MockConsumer(this, settings) as unknown as RestoreClient,
      getGlobalConsumer: (settings) => new MockConsumer(this, settings) as unknown as GlobalClient,
      getAdmin: () => new MockAdmin(this) as unknown as AdminClient,
    }
  }
}

/** Listeners by event name. */
class Emitter {
  private readonly listeners = new Map<string, Array<(...args: never[]) => void>>()
  on<E extends keyof ClientEventListeners>(event: E, listener: ClientEventListeners[E]): this {
    const list = this.listeners.get(event) ?? []
    list.push(listener as (...args: never[]) => void)
    this.listeners.set(event, list)
    return this
  }
  emit<E extends keyof ClientEventListeners>(event: E, ...args: Parameters<ClientEventListeners[E]>): void {
    for (const l of this.listeners.get(event) ?? []) (l as (...a: unknown[]) => void)(...args)
  }
}

export class MockProducer extends Emitter {
  fenced = false
  private txn: Transaction | undefined
  private readonly id: string | undefined

  constructor(
    private readonly cluster: MockCluster,
    settings: ClientSettings,
  ) {
    super()
    this.id = settings['transactional.id'] as string | undefined
    cluster.events.push('producer created')
  }

  connect(_o: object, cb: Callback): void {
    later(() => cb(null))
  }
  disconnect(cb: () => void): void {
    later(cb)
  }
  setPollInterval(): void {}
  initTransactions(_t: number, cb: Callback): void {
    this.cluster.claim(this.id as string, this)
    later(() => cb(null))
  }
  beginTransaction(cb: Callback): void {
    if (this.fenced) return later(() => cb(fencedError()))
    this.txn = { records: [], offsets: [], partitions: new Set() }
    later(() => cb(null))
  }
  produce(topic: string, partition: number, value: Buffer | null, key: Buffer | null, timestamp: number, _opaque?: unknown, headers?: Array<Record<string, Buffer>>): void {
    if (this.id !== undefined && this.txn === undefined) throw new Error('mock producer: produce outside a transaction')
    const stored: Stored = { key, value, timestamp, headers, txn: this.txn }
    this.cluster.partition(topic, partition).push(stored)
    this.txn?.records.push(stored)
    this.txn?.partitions.add(`${topic}:${partition}`)
  }
  sendOffsetsToTransaction(offsets: PartitionOffset[], consumer: MockGroupConsumer, _t: number, cb: Callback): void {
    this.cluster.step('sendOffsetsToTransaction', cb, () => {
      if (this.fenced) return fencedError()
      if (consumer.fenced) return { message: 'Broker: Specified group generation id is not valid', code: 22, isTxnRequiresAbort: true }
      this.txn?.offsets.push(...offsets)
      return undefined
    })
  }
  commitTransaction(_t: number, cb: Callback): void {
    this.cluster.step('commitTransaction', cb, () => {
      if (this.fenced) return fencedError()
      const txn = this.txn as Transaction
      for (const r of txn.records) r.txn = undefined
      this.markers(txn)
      for (const o of txn.offsets) this.cluster.groupOffsets.set(`${o.topic}:${o.partition}`, { offset: o.offset })
      this.cluster.events.push(`commit ${txn.records.length} records, offsets ${txn.offsets.map((o) => `${o.topic}-${o.partition}@${o.offset}`).join(',')}`)
      this.txn = undefined
      return undefined
    })
  }
  abortTransaction(_t: number, cb: Callback): void {
    this.cluster.step('abortTransaction', cb, () => {
      if (this.fenced) return fencedError()
      this.abortOpen()
      return undefined
    })
  }
  /** Aborts the open transaction: its records are never read committed. */
  abortOpen(): void {
    const txn = this.txn
    this.txn = undefined
    if (txn === undefined) return
    for (const r of txn.records) r.txn = 'aborted'
    this.markers(txn)
    this.cluster.events.push(`abort ${txn.records.length} records`)
  }
  flush(_t: number, cb: Callback): void {
    this.cluster.step('flush', cb, () => undefined)
  }
  /** A transaction ended: a marker in each partition it wrote, as Kafka writes one. */
  private markers(txn: Transaction): void {
    for (const tp of txn.partitions) {
      const at = tp.lastIndexOf(':')
      this.cluster.partition(tp.slice(0, at), Number(tp.slice(at + 1))).push({ key: null, value: null, timestamp: 0, headers: undefined, txn: undefined, control: true })
    }
  }
}

function fencedError(): ClientError {
  return { message: 'Local: This instance has been fenced by a newer instance', code: -144, isFatal: true }
}

/** A consumer assigned by hand: positions, partition-EOF events, read committed or not. */
export class MockConsumer extends Emitter {
  protected readonly positions = new Map<string, number>()
  private readonly paused = new Set<string>()
  private readonly toldEnd = new Set<string>()
  protected readonly readCommitted: boolean
  closed = false
  /** Finds nothing while set (a paused process, a slow restore). */
  stalled = false

  constructor(
    protected readonly cluster: MockCluster,
    readonly settings: ClientSettings,
  ) {
    super()
    this.readCommitted = settings['isolation.level'] === 'read_committed'
  }

  connect(_o: object, cb: Callback): void {
    later(() => cb(null))
  }
  disconnect(cb?: () => void): void {
    this.closed = true
    later(() => cb?.())
  }
  setDefaultConsumeTimeout(): void {}
  setDefaultIsTimeoutOnlyForFirstMessage(): void {}
  /** Replaces the assignment, as librdkafka's `assign`. */
  assign(partitions: Array<TopicPartitionRef & { offset?: number }>): void {
    this.positions.clear()
    // As librdkafka: a partition (re)assigned tells its end again when it reaches it.
    this.toldEnd.clear()
    for (const p of partitions) this.positions.set(`${p.topic}:${p.partition}`, p.offset === undefined || p.offset < 0 ? 0 : p.offset)
  }
  /** Adds partitions to the assignment, as librdkafka's `incrementalAssign`. */
  incrementalAssign(partitions: Array<TopicPartitionRef & { offset?: number }>): void {
    for (const p of partitions) {
      const tp = `${p.topic}:${p.partition}`
      if (this.positions.has(tp)) throw new Error(`mock consumer: ${tp} assigned twice`)
      this.toldEnd.delete(tp)
      this.positions.set(tp, p.offset === undefined || p.offset < 0 ? 0 : p.offset)
    }
  }
  /** Takes partitions out of the assignment, as librdkafka's `incrementalUnassign`. */
  incrementalUnassign(partitions: TopicPartitionRef[]): void {
    for (const p of partitions) {
      const tp = `${p.topic}:${p.partition}`
      if (!this.positions.delete(tp)) throw new Error(`mock consumer: ${tp} unassigned but not assigned`)
      this.toldEnd.delete(tp)
    }
  }
  pause(partitions: TopicPartitionRef[]): void {
    for (const p of partitions) this.paused.add(`${p.topic}:${p.partition}`)
  }
  resume(partitions: TopicPartitionRef[]): void {
    for (const p of partitions) this.paused.delete(`${p.topic}:${p.partition}`)
  }
  position(partitions: TopicPartitionRef[]): Array<TopicPartitionRef & { offset?: number }> {
    return partitions.map((p) => ({ ...p, offset: this.positions.get(`${p.topic}:${p.partition}`) }))
  }
  queryWatermarkOffsets(topic: string, partition: number, _t: number, cb: (err: null, o: { lowOffset: number; highOffset: number }) => void): void {
    const log = this.cluster.partition(topic, partition)
    later(() => cb(null, { lowOffset: 0, highOffset: log.length }))
  }
  getWatermarkOffsets(topic: string, partition: number): { lowOffset: number; highOffset: number } {
    return { lowOffset: 0, highOffset: this.cluster.partition(topic, partition).length }
  }
  consume(max: number, cb: (err: null, messages: ConsumedMessage[]) => void): void {
    const out: ConsumedMessage[] = []
    const stalled = this.stalled || (this.cluster.restoresStalled && String(this.settings['group.id']).endsWith('-restore'))
    if (stalled) return void setTimeout(() => cb(null, out), 5)
    for (const [tp, position] of this.positions) {
      if (this.paused.has(tp)) continue
      const at = tp.lastIndexOf(':')
      const topic = tp.slice(0, at)
      const partition = Number(tp.slice(at + 1))
      const log = this.cluster.partition(topic, partition)
      const end = this.cluster.stableEnd(log, this.readCommitted)
      let p = position
      for (; p < end && out.length < max; p++) {
        const r = log[p] as Stored
        if (r.control === true || (r.txn === 'aborted' && this.readCommitted)) continue
        out.push({ topic, partition, offset: p, key: r.key, value: r.value, timestamp: r.timestamp, headers: r.headers })
      }
      this.positions.set(tp, p)
      if (p >= end && !this.toldEnd.has(tp)) {
        this.toldEnd.add(tp)
        later(() => this.emit('partition.eof', { topic, partition, offset: p }))
      } else if (p < end) this.toldEnd.delete(tp)
    }
    if (out.length > 0 || this.closed) later(() => cb(null, out))
    else setTimeout(() => cb(null, out), 5)
  }
}

/** The group consumer: rebalances come from the test (`assign`, `revoke`, `lose`). */
export class MockGroupConsumer extends MockConsumer {
  /** The member was fenced: its offset commits fail, and `lose` takes its partitions. */
  fenced = false
  private lost = false
  /** The offset commit results the test holds: each waits for its release. */
  holdCommits = false
  readonly heldCommits: Array<() => void> = []
  readonly assignment = new Set<string>()

  get clientId(): string {
    return String(this.settings['client.id'])
  }
  /** Times it joined the group: at start, and again after each `unsubscribe`. */
  joins = 0
  subscribe(): void {
    this.joins++
    // A new member of the group: the fencing of the old one is behind it.
    this.fenced = false
    this.cluster.events.push(`${this.clientId} joined the group`)
  }
  /** Leaves the group: as librdkafka, what it holds is revoked through the rebalance callback first. */
  unsubscribe(): void {
    this.cluster.events.push(`${this.clientId} left the group`)
    if (this.assignment.size > 0) this.groupRevokes([...this.assignment].map((tp) => ({ topic: tp.slice(0, tp.lastIndexOf(':')), partition: Number(tp.slice(tp.lastIndexOf(':') + 1)) })))
  }
  override incrementalAssign(partitions: TopicPartitionRef[]): void {
    for (const p of partitions) {
      const tp = `${p.topic}:${p.partition}`
      this.assignment.add(tp)
      this.positions.set(tp, this.cluster.groupOffsets.get(tp)?.offset ?? 0)
    }
  }
  override incrementalUnassign(partitions: TopicPartitionRef[]): void {
    for (const p of partitions) {
      this.assignment.delete(`${p.topic}:${p.partition}`)
      this.positions.delete(`${p.topic}:${p.partition}`)
    }
    this.lost = false
  }
  assignmentLost(): boolean {
    return this.lost
  }
  seek(p: TopicPartitionRef & { offset: number }, _t: number, cb: Callback): void {
    this.positions.set(`${p.topic}:${p.partition}`, p.offset < 0 ? 0 : p.offset)
    later(() => cb(null))
  }
  commit(offsets: PartitionOffset[]): void {
    const done = (): void => {
      if (this.fenced) return this.emit('offset.commit', { message: 'Broker: Unknown member', code: 25 })
      for (const o of offsets) this.cluster.groupOffsets.set(`${o.topic}:${o.partition}`, { offset: o.offset, ...(o.metadata === undefined ? {} : { metadata: o.metadata }) })
      this.cluster.events.push(`group offsets ${offsets.map((o) => `${o.topic}-${o.partition}@${o.offset}${o.metadata === undefined ? '' : ` ${o.metadata}`}`).join(',')}`)
      this.emit('offset.commit', null)
    }
    if (this.holdCommits) this.heldCommits.push(done)
    else later(done)
  }
  committed(partitions: TopicPartitionRef[], _t: number, cb: (err: null, offsets: Array<TopicPartitionRef & { offset: number; metadata?: string }>) => void): void {
    const out = partitions.map((p) => {
      const c = this.cluster.groupOffsets.get(`${p.topic}:${p.partition}`)
      return { ...p, offset: c?.offset ?? -1001, ...(c?.metadata === undefined ? {} : { metadata: c.metadata }) }
    })
    later(() => cb(null, out))
  }

  private rebalance(code: number, partitions: TopicPartitionRef[]): void {
    ;(this.settings.rebalance_cb as (err: { code: number }, p: TopicPartitionRef[]) => void)({ code }, partitions)
  }
  /** The group gives it these partitions. */
  groupAssigns(partitions: TopicPartitionRef[]): void {
    this.rebalance(-175, partitions)
  }
  /** The group takes these partitions back (a revocation: the member commits first). */
  groupRevokes(partitions: TopicPartitionRef[]): void {
    this.rebalance(-174, partitions)
  }
  /** The member was fenced: every partition is taken without a revocation. */
  lose(): void {
    this.fenced = true
    this.lost = true
    this.rebalance(-174, [...this.assignment].map((tp) => ({ topic: tp.slice(0, tp.lastIndexOf(':')), partition: Number(tp.slice(tp.lastIndexOf(':') + 1)) })))
  }
}

class MockAdmin {
  constructor(private readonly cluster: MockCluster) {}
  async connect(): Promise<void> {}
  async disconnect(): Promise<void> {}
  async listTopics(): Promise<string[]> {
    return [...this.cluster.topics.keys()]
  }
  async fetchTopicMetadata(options: { topics: string[] }): Promise<Array<{ name: string; partitions: unknown[] }>> {
    return options.topics.map((name) => ({ name, partitions: [...(this.cluster.topics.get(name) ?? [])] }))
  }
  async createTopics(options: { topics: Array<{ topic: string; numPartitions: number }> }): Promise<boolean> {
    for (const t of options.topics) this.cluster.createTopic(t.topic, t.numPartitions)
    return true
  }
  async describeGroups(): Promise<{ groups: Array<{ members: Array<{ clientId: string; assignment: { topicPartitions: TopicPartitionRef[] } }> }> }> {
    const members = this.cluster.consumers.filter((c) => !c.fenced && !c.closed).map((c) => ({ clientId: c.clientId, assignment: { topicPartitions: [...c.assignment].map((tp) => ({ topic: tp.slice(0, tp.lastIndexOf(':')), partition: Number(tp.slice(tp.lastIndexOf(':') + 1)) })) } }))
    return { groups: [{ members }] }
  }
  async deleteTopicRecords(): Promise<void> {}
  /** The application's group, stable while a member is in it (librdkafka's state 3), else empty (5). */
  async listGroups(): Promise<{ groups: Array<{ groupId: string; state: number }> }> {
    const members = this.cluster.consumers.filter((c) => !c.fenced && !c.closed)
    return { groups: [...new Set(members.map((c) => String(c.settings['group.id'])))].map((groupId) => ({ groupId, state: 3 })) }
  }
}
