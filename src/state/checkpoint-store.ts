import { join } from 'node:path'
import { open } from 'lmdb'
import type { Database, RootDatabase } from 'lmdb'
import { PunctualError } from '../errors.js'

/** What is durable of a task so far: stream time and the last fire time of each punctuation. */
export interface DurableTaskState {
  readonly streamTime: number | undefined
  readonly lastFires: Readonly<Record<string, number>>
}

/**
 * Task checkpoints in the state directory (`<stateDir>/checkpoints`, lmdb), written in one transaction
 * per commit. Today it holds stream time and punctuation last-fire times, which is what `onMissed:
 * 'fireOnce'` needs across restarts; stores, timers and input positions follow with durable state.
 */
export class CheckpointStore {
  private constructor(
    private readonly env: RootDatabase,
    private readonly tasks: Database<DurableTaskState, string>,
  ) {}

  static open(stateDir: string): CheckpointStore {
    try {
      // noSync: a commit reaches the OS when it returns, so it survives the process being killed; it is
      // not flushed to the device each time (an OS crash or power loss may lose the latest commits).
      const env = open({ path: join(stateDir, 'checkpoints'), compression: false, noSync: true })
      return new CheckpointStore(env, env.openDB<DurableTaskState, string>({ name: 'tasks' }))
    } catch (err) {
      throw new PunctualError('STATE_DIR', `state directory ${stateDir}: the checkpoint store cannot be opened (${(err as Error).message}); refusing to start rather than reset it`, { cause: err })
    }
  }

  load(taskId: string): DurableTaskState | undefined {
    const state = this.tasks.get(taskId)
    if (state === undefined) return undefined
    if (typeof state !== 'object' || state === null || (state.streamTime !== undefined && typeof state.streamTime !== 'number') || typeof state.lastFires !== 'object') {
      throw new PunctualError('STATE_DIR', `checkpoint of task ${taskId} is corrupt; refusing to start rather than reset it`)
    }
    return state
  }

  /** Writes every task's state in one transaction: all or nothing. */
  save(states: ReadonlyMap<string, DurableTaskState>): void {
    try {
      this.env.transactionSync(() => {
        for (const [taskId, state] of states) this.tasks.putSync(taskId, { streamTime: state.streamTime, lastFires: state.lastFires })
      })
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      const why = code === 'ENOSPC' || /MDB_MAP_FULL|No space/i.test((err as Error).message) ? 'the disk or the store is full' : (err as Error).message
      throw new PunctualError('STATE_DIR', `cannot write checkpoints: ${why}`, { cause: err, fatal: true })
    }
  }

  close(): void {
    this.env.close()
  }
}
