import type { Clock } from './clock.js'

/** setTimeout cannot wait longer than this (about 24.8 days); longer waits are re-armed on wake-up. */
const MAX_TIMEOUT_MS = 2_147_483_647

/**
 * One real timer, armed for the earliest wall-clock due time of whatever owns it. Arming for the time
 * already armed is free, so owners can call `armAt` after every batch without churning timers. Between
 * due times there are zero wake-ups: nothing polls.
 */
export class Alarm {
  private handle: NodeJS.Timeout | undefined
  private armedFor = Infinity

  constructor(
    private readonly clock: Clock,
    private readonly onAlarm: () => void,
  ) {}

  /** Arms the timer for `dueMs` (epoch ms); `Infinity` disarms it. */
  armAt(dueMs: number): void {
    if (dueMs === this.armedFor) return
    this.disarm()
    if (dueMs === Infinity) return
    this.armedFor = dueMs
    const delay = Math.min(Math.max(0, dueMs - this.clock.now()), MAX_TIMEOUT_MS)
    this.handle = setTimeout(this.fire, delay)
  }

  disarm(): void {
    if (this.handle !== undefined) clearTimeout(this.handle)
    this.handle = undefined
    this.armedFor = Infinity
  }

  get armedAt(): number {
    return this.armedFor
  }

  private readonly fire = (): void => {
    const due = this.armedFor
    this.handle = undefined
    this.armedFor = Infinity
    // setTimeout may wake up early by a fraction of a millisecond, or a long wait may have been capped:
    // then re-arm for the same due time instead of firing before it.
    if (this.clock.now() < due) {
      this.armAt(due)
      return
    }
    this.onAlarm()
  }
}
