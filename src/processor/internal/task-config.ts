import type { KeyedStateOnDisk } from '../../keyed/keyed-state.js'
import type { KeyedSnapshot } from '../../keyed/keyed-task-state.js'
import type { StoreDisk } from '../../state/persistent-store.js'
import type { Clock } from '../../time/clock.js'
import type { StateStore, StoreKey, TaskId } from '../api.js'
import type { InputPartition, RecordCollector } from '../record-io.js'
import type { ErrorHandler } from '../errors.js'
import type { Subtopology } from '../topology.js'
import type { TimestampExtractor } from '../timestamp-extractor.js'

export class TaskIdImpl implements TaskId {
  constructor(
    readonly subtopology: number,
    readonly partition: number,
  ) {}

  toString(): string {
    return `${this.subtopology}_${this.partition}`
  }
}

/** What a task commits; restoring it resumes the task where it stopped. */
export interface TaskCheckpoint {
  readonly streamTime: number | undefined
  /** Last fire time per schedule name, for the `fireOnce` missed-trigger policy. */
  readonly lastFires: Readonly<Record<string, number>>
  /** Next offset to read per input, keyed `topic:partition`. */
  readonly positions: Readonly<Record<string, number>>
  /** Timers and keyed state, when the task has keyed processors. */
  readonly keyed?: KeyedSnapshot
  /** Entries of the task's durable-capable stores, by store name. */
  readonly stores?: Readonly<Record<string, ReadonlyArray<[StoreKey, unknown]>>>
}

export interface TaskConfig {
  readonly subtopology: Subtopology
  readonly partition: number
  /** The task's input partitions, as the runtime provides them (one per source topic, this task's partition). */
  readonly inputs: (topic: string, partition: number) => InputPartition | undefined
  /** Where its sinks write. */
  readonly collector: RecordCollector
  readonly clock: Clock
  readonly maxTaskIdleMs: number
  /** Where the event time of records from sources that set no extractor comes from; undefined: their own timestamps. */
  readonly defaultTimestampExtractor?: TimestampExtractor | undefined
  readonly errorHandler: ErrorHandler
  /** Where input records skipped on an error go (KIP-1034), if anywhere. */
  readonly deadLetterTopic?: string | undefined
  readonly checkpoint?: TaskCheckpoint | undefined
  /** Durable runtimes: where persistent stores find their committed entries. */
  readonly storeDisk?: ((store: string) => StoreDisk | undefined) | undefined
  /**
   * A task restored from the state directory: where a keyed state (`<processor>/<state>`) finds its
   * committed entries, which load a key at a time (undefined: none there).
   */
  readonly keyedStateDisk?: ((state: string) => KeyedStateOnDisk | undefined) | undefined
  /** Durable mode: record keyed state and timer changes for incremental commits. */
  readonly trackChanges?: boolean
  /** The application's state directory; each task uses `<stateDir>/<task id>`. */
  readonly stateDir: string
  /** Called when the earliest wall-clock due time may have moved (to re-arm the runtime's timer). */
  readonly onWallClockChange?: (() => void) | undefined
  /** The application instance's global stores: a processor connected to one reads that instance. */
  readonly globalStores?: ((name: string) => StateStore | undefined) | undefined
}
