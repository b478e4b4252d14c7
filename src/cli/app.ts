import type { Topology } from '../processor/topology.js'
import type { EmbeddedRuntime } from '../embedded/embedded-runtime.js'
import type { EmbeddedRuntimeConfig } from '../embedded/config.js'
import type { KafkaRuntimeConfig } from '../kafka/config.js'
import type { KafkaRuntime } from '../kafka/kafka-runtime.js'

/**
 * What `punctual run APP --state-dir DIR` expects as the default export of APP: the application's id and
 * topology, optional runtime settings, and `start`, which feeds input (producers, sockets, files) once
 * the runtime runs. When `start` returns a promise that settles, the runtime stops; otherwise it runs
 * until SIGINT or SIGTERM.
 */
export interface PunctualApp {
  /** The application's id: it names the state directory's contents and, on Kafka, the group and the internal topics. */
  readonly applicationId: string
  /** Builds the topology to run; called once per run. */
  topology(): Topology
  /** Settings of the embedded runtime (`punctual run APP --state-dir DIR`). */
  readonly config?: Omit<EmbeddedRuntimeConfig, 'applicationId' | 'stateDir'>
  /** Settings of `punctual run APP --kafka BOOTSTRAP` (the input then comes from the topics: `start` is not called; `startOnKafka` is). */
  readonly kafka?: Omit<KafkaRuntimeConfig, 'applicationId' | 'bootstrapServers'>
  /**
   * Feeds the running embedded runtime, through its producers (the embedded runtime's own: on Kafka the
   * input comes from the topics); what it shares with the Kafka runtime, `StreamsRuntime`, is there
   * too. `resumed` says whether committed state was found (a restart);
   * `signal` aborts when the run ends (a signal, the runtime failing, or this promise settling), before
   * the runtime stops.
   */
  start?(runtime: EmbeddedRuntime, context: { readonly resumed: boolean; readonly signal: AbortSignal }): void | Promise<void>
  /**
   * Runs beside the instance (a `StreamsRuntime`, with the Kafka runtime's own instance lookups) under
   * `punctual run APP --kafka BOOTSTRAP`, once it has joined its group:
   * host an interactive-query server, report elsewhere. The input comes from the topics, so this
   * promise settling does not stop the instance (a signal does); a throw or a rejection stops it with
   * exit 1. `signal` aborts when the run ends, before the instance stops.
   */
  startOnKafka?(runtime: KafkaRuntime, context: { readonly signal: AbortSignal }): void | Promise<void>
}
