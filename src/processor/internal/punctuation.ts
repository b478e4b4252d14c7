import { invalidConfig } from '../../errors.js'
import { shownValue } from '../shown-value.js'
import { CronRule, IntervalRule } from '../../time/trigger.js'
import type { TriggerRule } from '../../time/trigger.js'
import { IndexedMinHeap } from '../../util/indexed-heap.js'
import type { HeapElement } from '../../util/indexed-heap.js'
import { PunctuationType } from '../api.js'
import type { MissedTriggerPolicy, Punctuator, ScheduleSpec } from '../api.js'

/** One registered schedule. Its `due` is the next time it fires; `seq` is its registration order. */
export class Punctuation implements HeapElement {
  heapIndex = -1
  due = 0
  cancelled = false

  constructor(
    readonly name: string,
    readonly processorName: string,
    readonly type: PunctuationType,
    readonly rule: TriggerRule,
    readonly onMissed: MissedTriggerPolicy,
    readonly callback: Punctuator,
    readonly seq: number,
  ) {}
}

const earlier = (a: Punctuation, b: Punctuation): boolean => a.due < b.due || (a.due === b.due && a.seq < b.seq)

/**
 * The schedules of one time domain of one task, ordered by (due time, registration order). It knows
 * nothing about tasks: it is handed the function that runs a punctuation.
 */
export class PunctuationQueue {
  private readonly heap = new IndexedMinHeap<Punctuation>(earlier)

  /** Returns true when the earliest due time changed (owners of a real timer re-arm then). */
  add(p: Punctuation): boolean {
    return this.heap.add(p)
  }

  cancel(p: Punctuation): boolean {
    p.cancelled = true
    return this.heap.remove(p)
  }

  nextDue(): number {
    const head = this.heap.peek()
    return head === undefined ? Infinity : head.due
  }

  get size(): number {
    return this.heap.size
  }

  /**
   * Fires every schedule due at `now` once, passing `now`; missed points collapse into that call. A
   * schedule registered by a callback that is already due fires in the same check (as in Kafka Streams).
   */
  punctuate(now: number, run: (p: Punctuation, now: number) => void): number {
    let fired = 0
    for (let head = this.heap.peek(); head !== undefined && head.due <= now; head = this.heap.peek()) {
      this.heap.poll()
      run(head, now)
      fired++
      // The callback may have cancelled its own schedule: then it never comes back.
      if (!head.cancelled) {
        head.due = head.rule.next(head.due, now)
        this.heap.add(head)
      }
    }
    return fired
  }
}

/** Validates a schedule specification once, at registration, and turns it into a trigger rule. */
export function compileSchedule(spec: ScheduleSpec, processorName: string): { rule: TriggerRule; onMissed: MissedTriggerPolicy } {
  const where = `processor "${processorName}" schedule${spec.name === undefined ? '' : ` "${spec.name}"`}`
  if (spec === null || typeof spec !== 'object') throw invalidConfig(where, `expected a schedule object, got ${JSON.stringify(spec)}`)
  if (spec.type !== PunctuationType.STREAM_TIME && spec.type !== PunctuationType.WALL_CLOCK_TIME) {
    throw invalidConfig(where, `type must be STREAM_TIME or WALL_CLOCK_TIME, got ${JSON.stringify(spec.type)}`)
  }
  const onMissed = spec.onMissed ?? 'skip'
  if (onMissed !== 'skip' && onMissed !== 'fireOnce') {
    throw invalidConfig(where, `onMissed must be "skip" or "fireOnce", got ${JSON.stringify(onMissed)}`)
  }
  if ('cron' in spec && spec.cron !== undefined) {
    if (spec.type !== PunctuationType.WALL_CLOCK_TIME) throw invalidConfig(where, `cron schedules need type WALL_CLOCK_TIME, got ${(spec as { type: string }).type}`)
    if ('intervalMs' in spec) throw invalidConfig(where, 'give either cron or intervalMs, not both')
    if (typeof spec.cron !== 'string') throw invalidConfig(where, `cron must be a string, got ${JSON.stringify(spec.cron)}`)
    return { rule: new CronRule(spec.cron, spec.timeZone ?? 'UTC', where), onMissed }
  }
  const s = spec as { intervalMs?: unknown; startTime?: unknown }
  if (typeof s.intervalMs !== 'number' || !Number.isSafeInteger(s.intervalMs) || s.intervalMs < 1) {
    throw invalidConfig(where, `intervalMs must be an integer >= 1, got ${shownValue(s.intervalMs)}`)
  }
  if (s.startTime !== undefined && (typeof s.startTime !== 'number' || !Number.isSafeInteger(s.startTime) || s.startTime < 0)) {
    throw invalidConfig(where, `startTime must be an integer epoch millisecond >= 0, got ${shownValue(s.startTime)}`)
  }
  if (onMissed === 'fireOnce' && s.startTime === undefined) {
    throw invalidConfig(where, 'onMissed "fireOnce" needs an anchored (startTime) or cron schedule: an unanchored grid has no fixed points to miss')
  }
  const rule = new IntervalRule(
    s.intervalMs,
    s.startTime as number | undefined,
    spec.type === PunctuationType.STREAM_TIME ? 'zero' : 'now+interval',
  )
  return { rule, onMissed }
}
