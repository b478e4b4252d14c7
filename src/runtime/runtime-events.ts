import { PunctualError } from '../errors.js'
import type { TaskEvent } from '../metrics.js'
import type { Logger } from '../util/logger.js'

/** A runtime's listeners of one event. */
export class Listeners<A extends unknown[]> {
  private readonly listeners: Array<(...args: A) => void> = []

  get size(): number {
    return this.listeners.length
  }

  add(listener: (...args: A) => void): void {
    this.listeners.push(listener)
  }

  /** Tells every listener; one that throws does not keep the others from hearing it. */
  tell(onListenerError: (err: unknown) => void, ...args: A): void {
    for (const l of this.listeners) {
      try {
        l(...args)
      } catch (err) {
        onListenerError(err)
      }
    }
  }
}

/**
 * What a runtime tells its listeners (`runtime.on(...)`), for both runtimes: `'error'` when it stops
 * on a failure, `'stateChange'` at each change of its state (as Kafka Streams' StateListener), `'task'`
 * at each step of a task's lifecycle. A listener that throws is logged; the others are still told.
 */
export class RuntimeEvents<S extends string> {
  private readonly errors = new Listeners<[err: Error]>()
  private readonly states = new Listeners<[next: S, previous: S]>()
  private readonly tasks = new Listeners<[event: TaskEvent]>()

  constructor(private readonly logger: Logger) {}

  add(event: 'error' | 'stateChange' | 'task', listener: unknown): void {
    if (event === 'error') this.errors.add(listener as (err: Error) => void)
    else if (event === 'stateChange') this.states.add(listener as (next: S, previous: S) => void)
    else if (event === 'task') this.tasks.add(listener as (event: TaskEvent) => void)
    else throw new PunctualError('INVALID_ARGUMENT', `runtime.on: no event ${JSON.stringify(event)}; the events are 'error', 'stateChange' and 'task'`)
  }

  stateChanged(next: S, previous: S): void {
    if (next !== previous) this.states.tell((err) => this.logger.error({ err }, `a stateChange listener threw: ${(err as Error).message}`), next, previous)
  }

  readonly task = (event: TaskEvent): void => {
    this.tasks.tell((err) => this.logger.error({ err }, `a task listener threw: ${(err as Error).message}`), event)
  }

  /** Tells the `'error'` listeners, or logs the failure when there are none. */
  failed(error: Error): void {
    if (this.errors.size === 0) this.logger.error({ err: error }, `stopped on an error: ${error.message}`)
    this.errors.tell((err) => this.logger.error({ err }, `an error listener threw: ${(err as Error).message}`), error)
  }
}
