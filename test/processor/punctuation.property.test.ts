import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { ErrorHandlers, NO_HEADERS, PunctuationType, Topology } from '../../src/index.js'
import type { Cancellable, ProcessorContext } from '../../src/index.js'
import { TopicRegistry } from '../../src/embedded/log/topics.js'
import { StreamTask } from '../../src/processor/internal/task.js'
import { ManualClock } from '../../src/time/clock.js'
import { silentLogger } from '../../src/util/logger.js'

type Op =
  | { op: 'register'; stream: boolean; interval: number; anchor: number | undefined }
  | { op: 'cancel'; index: number }
  | { op: 'record'; ts: number }
  | { op: 'wall'; ms: number }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('register' as const), stream: fc.boolean(), interval: fc.integer({ min: 1, max: 40 }), anchor: fc.option(fc.integer({ min: 0, max: 300 }), { nil: undefined }) }),
  fc.record({ op: fc.constant('cancel' as const), index: fc.nat(20) }),
  fc.record({ op: fc.constant('record' as const), ts: fc.integer({ min: 0, max: 600 }) }),
  fc.record({ op: fc.constant('wall' as const), ms: fc.integer({ min: 0, max: 120 }) }),
)

/**
 * The reference: a schedule is a set of grid points; it is due at its smallest eligible point, and a
 * firing at `now` consumes every point <= now. Written from SEMANTICS 2 directly, by enumeration.
 */
class RefSchedule {
  cancelled = false
  private consumedUpTo: number | undefined

  constructor(
    readonly id: number,
    readonly stream: boolean,
    readonly interval: number,
    readonly anchor: number | undefined,
    private readonly registeredAt: number | undefined,
  ) {}

  due(): number {
    const origin = this.anchor ?? (this.stream ? 0 : (this.registeredAt as number) + this.interval)
    let lowerExclusive = -1
    if (this.anchor !== undefined && this.registeredAt !== undefined && this.anchor < this.registeredAt) lowerExclusive = this.registeredAt
    if (this.consumedUpTo !== undefined) lowerExclusive = Math.max(lowerExclusive, this.consumedUpTo)
    let g = origin
    while (g <= lowerExclusive) g += this.interval
    return g
  }

  fire(now: number): void {
    this.consumedUpTo = now
  }
}

class Reference {
  readonly schedules: RefSchedule[] = []
  readonly fires: Array<[number, number]> = []
  streamTime: number | undefined
  wall = 0

  register(stream: boolean, interval: number, anchor: number | undefined): void {
    this.schedules.push(new RefSchedule(this.schedules.length, stream, interval, anchor, stream ? this.streamTime : this.wall))
  }

  check(stream: boolean, now: number): void {
    for (;;) {
      let best: RefSchedule | undefined
      for (const s of this.schedules) {
        if (s.cancelled || s.stream !== stream || s.due() > now) continue
        if (best === undefined || s.due() < best.due()) best = s
      }
      if (best === undefined) return
      this.fires.push([best.id, now])
      best.fire(now)
    }
  }
}

function runImplementation(ops: Op[]): Array<[number, number]> {
  const fires: Array<[number, number]> = []
  let ctx: ProcessorContext | undefined
  const topology = new Topology().addSource('s', 'in').addProcessor('p', () => ({ init: (c: ProcessorContext) => void (ctx = c), process() {} }), 's')
  const topics = new TopicRegistry(1)
  const clock = new ManualClock(0)
  const task = new StreamTask({ subtopology: topology.subtopologies()[0]!, partition: 0, ...topics.taskIo(), clock, maxTaskIdleMs: 0, stateDir: '/tmp/punctual-test', errorHandler: ErrorHandlers.logAndContinue(silentLogger) })
  task.init()
  const handles: Cancellable[] = []
  for (const o of ops) {
    if (o.op === 'register') {
      const id = handles.length
      const type = o.stream ? PunctuationType.STREAM_TIME : PunctuationType.WALL_CLOCK_TIME
      handles.push(ctx!.schedule({ type, intervalMs: o.interval, ...(o.anchor === undefined ? {} : { startTime: o.anchor }) }, (now) => fires.push([id, now])))
    } else if (o.op === 'cancel') {
      handles[o.index]?.cancel()
    } else if (o.op === 'record') {
      topics.sendBytes('in', 0, null, null, o.ts, NO_HEADERS)
      task.process(Infinity)
    } else {
      task.punctuateWallClock(clock.advance(o.ms))
    }
  }
  return fires
}

function runReference(ops: Op[]): Array<[number, number]> {
  const ref = new Reference()
  for (const o of ops) {
    if (o.op === 'register') ref.register(o.stream, o.interval, o.anchor)
    else if (o.op === 'cancel') {
      const s = ref.schedules[o.index]
      if (s !== undefined) s.cancelled = true
    } else if (o.op === 'record') {
      ref.streamTime = Math.max(ref.streamTime ?? -1, o.ts)
      ref.check(true, ref.streamTime)
    } else {
      ref.wall += o.ms
      ref.check(false, ref.wall)
    }
  }
  return ref.fires
}

describe('punctuation queues against a reference model (property)', () => {
  it('fire the same schedules at the same checks, in the same order, for random operation sequences', () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 1, maxLength: 60 }), (ops) => {
        assert.deepEqual(runImplementation(ops), runReference(ops))
      }),
      { numRuns: 2000 },
    )
  })
})
