import type { DropReason } from './processor/errors.js'

/** Counters of one task. Plain fields: incrementing them costs nothing on the per-record path. */
export class TaskMetrics {
  processedRecords = 0
  punctuations = 0
  readonly droppedRecords: Record<DropReason, number> = {
    'invalid-timestamp': 0,
    deserialization: 0,
    processing: 0,
    punctuation: 0,
    timer: 0,
    late: 0,
  }
}

/** A snapshot of counters summed over tasks. */
export interface MetricsSnapshot {
  readonly processedRecords: number
  readonly punctuations: number
  readonly droppedRecords: Readonly<Record<DropReason, number>>
}

export function sumMetrics(all: Iterable<TaskMetrics>): MetricsSnapshot {
  const out = new TaskMetrics()
  for (const m of all) {
    out.processedRecords += m.processedRecords
    out.punctuations += m.punctuations
    for (const k of Object.keys(m.droppedRecords) as DropReason[]) out.droppedRecords[k] += m.droppedRecords[k]
  }
  return out
}
