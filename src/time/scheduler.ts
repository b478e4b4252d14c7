import type { Clock } from './clock.js'

/**
 * Runs a callback at a wall-clock time. The embedded runtime's one armed timer goes through it, so a
 * test can hand the runtime a manual clock that is its scheduler too (punctual/testing's ManualClock)
 * and fire wall-clock work by advancing time, with no real waiting.
 */
export interface Scheduler {
  /** Calls `callback` once, when the scheduler's clock reaches `dueMs` (epoch ms). Returns a cancel function. */
  at(dueMs: number, callback: () => void): () => void
}

/** setTimeout cannot wait longer than this (about 24.8 days); the Alarm re-arms after a capped wait. */
const MAX_TIMEOUT_MS = 2_147_483_647

/**
 * The real scheduler: one `setTimeout` per call, its delay read from `clock`. A callback may run a
 * fraction of a millisecond early (libuv's cached loop time) or, past the cap, long before its due time:
 * callers that must not run early check the clock when called.
 */
export function timerScheduler(clock: Clock): Scheduler {
  return {
    at(dueMs, callback) {
      const handle = setTimeout(callback, Math.min(Math.max(0, dueMs - clock.now()), MAX_TIMEOUT_MS))
      return () => clearTimeout(handle)
    },
  }
}

/** Whether a clock also schedules (a manual clock does): then it drives the runtime's timer too. */
export function isScheduler(x: unknown): x is Scheduler {
  return typeof x === 'object' && x !== null && typeof (x as { at?: unknown }).at === 'function'
}
