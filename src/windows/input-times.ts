import { LoggedField } from '../state/change-log.js'

/**
 * A cogroup's stream time per input, logged as one field of its store: each input judges lateness by
 * its own stream time, as each of Kafka Streams' per-input aggregation processors does.
 */
export class InputTimes extends LoggedField<number[]> {
  constructor(key: number) {
    super(
      key,
      [],
      (times) => (times.length === 0 ? undefined : [...times]),
      (saved) => (Array.isArray(saved) ? [...(saved as number[])] : []),
    )
  }

  /** Input `input`'s stream time (-1 before its first record). */
  of(input: number): number {
    return this.value[input] ?? -1
  }

  setTime(input: number, t: number): void {
    const times = this.value
    while (times.length <= input) times.push(-1)
    times[input] = t
    this.touch()
  }
}
