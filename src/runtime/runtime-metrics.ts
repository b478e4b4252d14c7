import { sumMetrics } from '../metrics.js'
import type { CommitStats, RuntimeMetrics } from '../metrics.js'
import type { Clock } from '../time/clock.js'
import type { RuntimeState } from './runtime.js'
import type { TaskManager } from './task-manager.js'

/** What a runtime's metrics are made of: shared by the embedded and the Kafka runtime. */
export interface MetricsSource {
  readonly applicationId: string
  readonly state: RuntimeState
  readonly clock: Clock
  readonly tasks: TaskManager | undefined
  readonly commits: CommitStats | undefined
}

/** A runtime's metrics now: counters of every task it ran, and each active task as it stands. */
export function runtimeMetrics(source: MetricsSource): RuntimeMetrics {
  return {
    ...sumMetrics(source.tasks?.metrics() ?? []),
    applicationId: source.applicationId,
    state: source.state,
    wallClockTime: source.clock.now(),
    tasks: source.tasks?.active.map((t) => t.metricsSnapshot()) ?? [],
    restoring: source.tasks?.restoreProgress() ?? [],
    commits: source.commits,
  }
}
