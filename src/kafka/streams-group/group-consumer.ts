import { EventEmitter } from 'node:events'
import type { Clock } from '../../time/clock.js'
import type { Scheduler } from '../../time/scheduler.js'
import type { Logger } from '../../util/logger.js'
import type { ClusterWire } from '../broker-wire.js'
import type { ClientCallback, ClientError, ClientSettings, CommittedOffset, GroupConsumer } from '../client-supplier.js'
import type { TopicPartitionRef } from '../fetcher.js'
import type { PartitionOffset } from '../kafka-commit-backend.js'
import { committedOffsets } from './group-wire.js'
import type { GroupWire } from './group-wire.js'
import type { UserEndpoints } from './protocol.js'
import { StreamsGroupMember } from './member.js'
import type { MemberOptions, StreamsAssignment, TaskOffsetSums } from './member.js'

/** No task offsets: what the member reports before the standbys exist. */
const NO_SUMS: TaskOffsetSums = { offsets: new Map(), endOffsets: new Map() }

/** librdkafka's rebalance codes, which the task manager takes. */
const ASSIGN = -175
const REVOKE = -174
/** librdkafka's "timed out" and "transport failure": how a commit or a read that got no answer is told. */
const TIMED_OUT = -185
const TRANSPORT = -195

type RebalanceCallback = (err: { code: number }, partitions: TopicPartitionRef[]) => void

/**
 * The group consumer of the Kafka runtime when its instances share tasks through a streams group
 * (`groupProtocol: 'streams'`): a `StreamsGroupMember` behind the calls the runtime makes of librdkafka's
 * group consumer, so that the task manager, the offsets and the fetcher stay as they are. The member's
 * revocations, assignments and losses become the rebalance callback's events (each waits for the
 * task manager's unassign or assign, as librdkafka's do), offsets are committed as the member (its id
 * and epoch) and read from the group, and a partition's watermarks come from its leader. Its standby
 * tasks go to `standbys` (`StandbyTasks`); warm-up tasks are not run. It fetches nothing: the direct
 * fetcher does.
 */
export class StreamsGroupConsumer extends EventEmitter implements GroupConsumer {
  private readonly member: StreamsGroupMember
  private readonly rebalance: RebalanceCallback
  private readonly assigned = new Set<string>()
  private lost = false
  /** Waits for the task manager's (un)assign of these partitions. */
  private waiting: { readonly partitions: ReadonlySet<string>; readonly assign: boolean; readonly done: () => void } | undefined
  /** Told the standby tasks of each assignment the member takes, before its active tasks are handed over. */
  standbys: ((tasks: ReadonlySet<string>) => Promise<void>) | undefined
  /** The offset sums of the tasks with local state here, but for `active` (reported where the broker takes them). */
  offsetSums: ((active: ReadonlySet<string>) => TaskOffsetSums) | undefined

  /** The task offsets the member reports: none until the standbys exist (`offsetSums`). */
  taskOffsetSums(): TaskOffsetSums {
    return this.offsetSums?.(this.member.assignment.active) ?? NO_SUMS
  }
  private consumeTimeoutMs = 500
  private stopped = false

  constructor(
    settings: ClientSettings,
    private readonly options: MemberOptions,
    private readonly group: GroupWire,
    private readonly cluster: ClusterWire,
    clock: Clock,
    scheduler: Scheduler,
    private readonly logger: Logger,
  ) {
    super()
    this.rebalance = settings.rebalance_cb as RebalanceCallback
    this.member = new StreamsGroupMember(
      options,
      group.send,
      {
        revoke: (tasks) => this.handOver(REVOKE, this.inputsOf(tasks)),
        assign: async (a) => {
          // Standbys that go are checkpointed first: one may be a task about to start here as active.
          await this.standbys?.(a.standby)
          await this.handOver(ASSIGN, this.inputsOf([...a.active].filter((t) => !this.holds(t))))
        },
        lost: () => {
          this.lost = true
          void this.handOver(REVOKE, [...this.assigned].map(parse)).finally(() => (this.lost = false))
        },
        status: (statuses) => {
          for (const s of statuses) this.logger.info({ code: s.code }, `streams group status: ${s.detail}`)
        },
        fatal: (err) => this.emit('event.error', { message: err.message, code: -1, isFatal: true } satisfies ClientError),
      },
      clock,
      scheduler,
      logger,
    )
  }

  /** The group's members' endpoints and the partitions of their tasks, as the coordinator last sent them (with `applicationServer` set). */
  get endpoints(): UserEndpoints | undefined {
    return this.member.endpoints
  }

  /** The tasks the member holds now. */
  get tasks(): StreamsAssignment {
    return this.member.assignment
  }

  connect(_options: object, callback: ClientCallback): void {
    callback(null)
  }

  subscribe(): void {
    this.member.start()
  }

  /** Revokes what is assigned (through the rebalance callback), then leaves the group. */
  unsubscribe(): void {
    void this.leave()
  }

  disconnect(callback: () => void): void {
    void this.leave().finally(() => {
      this.stopped = true
      this.group.close()
      callback()
    })
  }

  incrementalAssign(partitions: TopicPartitionRef[]): void {
    for (const p of partitions) this.assigned.add(key(p))
    this.settle(partitions, true)
  }

  incrementalUnassign(partitions: TopicPartitionRef[]): void {
    for (const p of partitions) this.assigned.delete(key(p))
    this.settle(partitions, false)
  }

  assignmentLost(): boolean {
    return this.lost
  }

  commit(offsets: PartitionOffset[]): void {
    this.group.commit(this.options.memberId, this.member.memberEpoch, offsets).then(
      (codes) => {
        const failed = [...codes].find(([, code]) => code !== 0)
        this.emit('offset.commit', failed === undefined ? null : ({ message: `the streams group refused the offsets of ${failed[0]}: error ${failed[1]}`, code: failed[1] } satisfies ClientError))
      },
      (err: unknown) => this.emit('offset.commit', { message: (err as Error).message, code: TRANSPORT } satisfies ClientError),
    )
  }

  committed(partitions: TopicPartitionRef[], _timeoutMs: number, callback: (err: ClientError | null | undefined, offsets: CommittedOffset[]) => void): void {
    committedOffsets(this.group, partitions, true).then(
      (offsets) => callback(null, offsets),
      (err: unknown) => callback({ message: (err as Error).message, code: (err as { code?: number }).code ?? TIMED_OUT }, []),
    )
  }

  /** The direct fetcher reads from the positions it is given: nothing to move here. */
  seek(_position: TopicPartitionRef & { offset: number }, _timeoutMs: number, callback: ClientCallback): void {
    callback(null)
  }

  queryWatermarkOffsets(topic: string, partition: number, _timeoutMs: number, callback: (err: ClientError | null | undefined, offsets: { lowOffset: number; highOffset: number }) => void): void {
    void (async () => {
      const { leaders } = await this.cluster.metadata([topic])
      const leader = leaders.get(`${topic}:${partition}`)
      if (leader === undefined) throw Object.assign(new Error(`${topic}-${partition} has no leader now`), { code: TIMED_OUT })
      const link = this.cluster.link(leader.nodeId)
      const ask = async (timestamp: number): Promise<number> => {
        const r = (await link.listOffsets([{ topic, partition, leaderEpoch: leader.epoch }], timestamp, 0)).get(`${topic}:${partition}`)
        if (typeof r !== 'number') throw Object.assign(new Error(`listing the offsets of ${topic}-${partition}: error ${r?.errorCode ?? '?'}`), { code: r?.errorCode ?? TIMED_OUT })
        return r
      }
      return { lowOffset: await ask(-2), highOffset: await ask(-1) }
    })().then(
      (offsets) => callback(null, offsets),
      (err: unknown) => callback({ message: (err as Error).message, code: (err as { code?: number }).code ?? TIMED_OUT }, { lowOffset: -1, highOffset: -1 }),
    )
  }

  /** Group events come from the member's own heartbeats: a consume call only waits (the direct fetcher polls for events). */
  consume(_max: number, callback: (err: null, messages: []) => void): void {
    setTimeout(() => callback(null, []), this.stopped ? 0 : this.consumeTimeoutMs)
  }

  pause(): void {}
  resume(): void {}

  setDefaultConsumeTimeout(ms: number): void {
    this.consumeTimeoutMs = ms
  }

  setDefaultIsTimeoutOnlyForFirstMessage(): void {}

  /** Whether a task is active here already (its input partitions assigned). */
  private holds(task: string): boolean {
    return this.inputsOf([task]).every((p) => this.assigned.has(key(p)))
  }

  /** The input partitions of tasks: partition p of each source and repartition source topic of the task's sub-topology. */
  private inputsOf(tasks: readonly string[]): TopicPartitionRef[] {
    return tasks.flatMap((t) => {
      const at = t.lastIndexOf('_')
      const sub = this.options.topology.find((s) => s.id === t.slice(0, at))
      const partition = Number(t.slice(at + 1))
      return sub === undefined ? [] : [...sub.sourceTopics, ...sub.repartitionSourceTopics.map((r) => r.name)].map((topic) => ({ topic, partition }))
    })
  }

  /** Tells the task manager through the rebalance callback, and resolves once it assigned or unassigned the partitions. */
  private handOver(code: number, partitions: TopicPartitionRef[]): Promise<void> {
    if (partitions.length === 0) return Promise.resolve()
    return new Promise((resolve) => {
      this.waiting = { partitions: new Set(partitions.map(key)), assign: code === ASSIGN, done: resolve }
      this.rebalance({ code }, partitions)
    })
  }

  private settle(partitions: readonly TopicPartitionRef[], assign: boolean): void {
    const w = this.waiting
    if (w === undefined || w.assign !== assign || !partitions.some((p) => w.partitions.has(key(p)))) return
    this.waiting = undefined
    w.done()
  }

  private async leave(): Promise<void> {
    if (this.assigned.size > 0) await this.handOver(REVOKE, [...this.assigned].map(parse))
    await this.member.leave()
  }
}

function key(p: TopicPartitionRef): string {
  return `${p.topic}:${p.partition}`
}

function parse(k: string): TopicPartitionRef {
  const at = k.lastIndexOf(':')
  return { topic: k.slice(0, at), partition: Number(k.slice(at + 1)) }
}
