import type { Clock } from './clock.js'
import type { Scheduler } from './scheduler.js'

/**
 * One timer, armed for the earliest wall-clock due time of whatever owns it. Arming for the time
 * already armed is free, so owners can call `armAt` after every batch without churning timers. Between
 * due times there are zero wake-ups: nothing polls.
 */
export class Alarm {
  private cancel: (() => void) | undefined
  private armedFor = Infinity

  constructor(
    private readonly clock: Clock,
    private readonly scheduler: Scheduler,
    private readonly onAlarm: () => void,
  ) {}

  /** Arms the timer for `dueMs` (epoch ms); `Infinity` disarms it. */
  armAt(dueMs: number): void {
    if (dueMs === this.armedFor) return
    this.disarm()
    if (dueMs === Infinity) return
    this.armedFor = dueMs
    this.cancel = this.scheduler.at(dueMs, this.fire)
  }

  disarm(): void {
    this.cancel?.()
    this.cancel = undefined
    this.armedFor = Infinity
  }

  get armedAt(): number {
    return this.armedFor
  }

  private readonly fire = (): void => {
    const due = this.armedFor
    this.cancel = undefined
    this.armedFor = Infinity
    // A real timer may wake up early by a fraction of a millisecond, or a long wait may have been
    // capped: then re-arm for the same due time instead of firing before it.
    if (this.clock.now() < due) {
      this.armAt(due)
      return
    }
    this.onAlarm()
  }
}
