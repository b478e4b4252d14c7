/**
 * A runtime's lifecycle, as Kafka Streams' `KafkaStreams.State` names it: `CREATED` until `start()`,
 * `RUNNING`, `PENDING_SHUTDOWN` while `stop()` commits and closes, then `NOT_RUNNING`; `ERROR` after a
 * failure stopped it (while running, or during `start()`).
 */
export type RuntimeState = 'CREATED' | 'RUNNING' | 'PENDING_SHUTDOWN' | 'NOT_RUNNING' | 'ERROR'
