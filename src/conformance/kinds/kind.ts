import type { Topology } from '../../processor/topology.js'
import type { OutputEvent, Scenario, Step } from '../scenario.js'

/** Collects outputs in emission order, stamping each with the step (and file line) that caused it. */
export interface OutputSink {
  emit(fields: Record<string, unknown>): void
}

/** What one scenario kind contributes: its canonical topology and the steps only it understands. */
export interface ScenarioKind {
  /** Builds the topology from `scenario.topology`; throws SCENARIO_INVALID naming a bad field. */
  build(scenario: Scenario, out: OutputSink): KindInstance
}

export interface KindInstance {
  readonly topology: Topology
  /** The input topic records are piped to (the first of `inputTopics` when a record names none). */
  readonly inputTopic: string
  /** Every topic a record may name with its `topic` field (default: only `inputTopic`). */
  readonly inputTopics?: readonly string[]
  /** Handles a kind-specific step (`schedule`, `cancel`); returns false when the step is not the kind's. */
  handleStep?(step: Step, where: string): boolean
  /** The output code of an error that stops the topology (`buffer-full`), or undefined to rethrow it. */
  errorOutput?(err: unknown): string | undefined
}

export type { OutputEvent }
