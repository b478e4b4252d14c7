/**
 * Stateful stream processing for TypeScript whose strength is time: the library.
 * @packageDocumentation
 * @module punctual
 */
export { PunctualError, ERROR_CODES } from './errors.js'
export type { ErrorCode, PunctualErrorOptions } from './errors.js'

export { PunctuationType, NO_HEADERS } from './processor/api.js'
export type {
  Cancellable,
  CronSchedule,
  Header,
  Headers,
  IntervalSchedule,
  KeyValueStore,
  MissedTriggerPolicy,
  Processor,
  ProcessorContext,
  ProcessorSupplier,
  Punctuator,
  RecordMetadata,
  ScheduleCommon,
  ScheduleSpec,
  StateStore,
  StoreKey,
  StreamRecord,
  TaskId,
  ReadOnlyKeyValueStore,
  ReadOnlyVersionedKeyValueStore,
  VersionedKeyValueStore,
  VersionedRecord,
} from './processor/api.js'
export { Serdes } from './processor/serdes.js'
export type { Serde } from './processor/serdes.js'
export { Topic } from './processor/topic.js'
export { Topology } from './processor/topology.js'
export type { SinkOptions, SourceOptions, StreamPartitioner } from './processor/topology.js'
export {
  FailOnInvalidTimestamp,
  LogAndSkipOnInvalidTimestamp,
  PolicyExtractor,
  UsePartitionTimeOnInvalidTimestamp,
  UseWallClockOnInvalidTimestamp,
  WallclockTimestampExtractor,
} from './processor/timestamp-extractor.js'
export type { ConsumerRecord, TimestampExtractor, TimestampSource } from './processor/timestamp-extractor.js'
export { ErrorHandlers } from './processor/errors.js'
export type { DropReason, ErrorContext, ErrorHandler, ErrorHandlerResponse } from './processor/errors.js'
export { Stores } from './state/stores.js'
export type { QueryableStoreKind, StoreBuilder, StoreSerdes, VersionedStoreBuilder } from './state/stores.js'
export { QueryableStoreTypes } from './query/queryable-stores.js'
export type { QueryableStoreType, StoreQueryOptions } from './query/queryable-stores.js'

export { StateDescriptors } from './keyed/api.js'
export type {
  ExpiredEntry,
  KeyedProcessor,
  KeyedProcessorContext,
  KeyedProcessorSupplier,
  ListState,
  ListStateDescriptor,
  MapState,
  MapStateDescriptor,
  StateDescriptor,
  StateKind,
  StateOptions,
  TimeDomain,
  Timer,
  TimerService,
  TtlConfig,
  ValueState,
  ValueStateDescriptor,
} from './keyed/api.js'

export { StreamsBuilder } from './dsl/builder.js'
export type { StreamsBuilderConfig } from './dsl/builder.js'
export { KStream, BranchedKStream } from './dsl/kstream.js'
export type { TopicTakes } from './dsl/kstream.js'
export { KTable } from './dsl/ktable.js'
export { CogroupedKStream, KGroupedStream, SessionWindowedCogroupedKStream, TimeWindowedCogroupedKStream, TimeWindowedKStream, SessionWindowedKStream } from './dsl/grouped.js'
export { KGroupedTable } from './dsl/grouped-table.js'
export { Consumed, Grouped, Materialized, Named, Produced } from './dsl/options.js'
export type { ConsumedBuilder, GroupedBuilder, KeyValue, KeyValueMaterialized, MaterializedBuilder, ProducedBuilder, TableJoined, TableMaterialized, Unstated } from './dsl/options.js'
export { TimeWindows, SessionWindows, SlidingWindows } from './windows/windows.js'
export type { ReadOnlySessionStore, ReadOnlyWindowStore, Window, Windowed } from './windows/windows.js'
export { JoinWindows } from './joins/join-windows.js'
export { GlobalKTable } from './joins/global-table.js'
export { Joined, StreamJoined } from './joins/join-windows.js'
export type { JoinedBuilder, StreamJoinedBuilder, ValueJoiner } from './joins/join-windows.js'
export { BufferConfig, Suppressed } from './suppress/config.js'
export type { BufferConfigMethods, EagerBufferConfig, Sizer, SuppressedCommon, StrictBufferConfig, TimeLimitSuppressed, WaitFrom, WhenFull, WindowClosesSuppressed } from './suppress/config.js'

export type { RuntimeState, StreamsRuntime } from './runtime/runtime.js'
export type { RuntimeConfig } from './runtime/config.js'
export { EmbeddedRuntime } from './embedded/embedded-runtime.js'
export type { CommitStats } from './runtime/committer.js'
export type { Producer, RecordListener } from './embedded/embedded-runtime.js'
export type { SubscribeFrom } from './embedded/subscriptions.js'
export type { EmbeddedRuntimeConfig, TopicConfig } from './embedded/config.js'
export type { PunctualApp } from './cli/app.js'
export { KafkaRuntime } from './kafka/kafka-runtime.js'
export type { KafkaClientSettings, KafkaRuntimeConfig, ProcessingGuarantee } from './kafka/config.js'
export type { HostInfo, KeyQueryMetadata, StreamsMetadata } from './kafka/instance-metadata.js'
export type { RestoreProgress } from './runtime/task-manager.js'

export { systemClock } from './time/clock.js'
export type { Clock } from './time/clock.js'
export type { Scheduler } from './time/scheduler.js'
export type { HistogramSnapshot, InputPartitionMetrics, MetricsSnapshot, PendingTimers, RuntimeMetrics, StandbyProgress, SuppressionBufferMetrics, TaskEvent, TaskMetricsSnapshot } from './metrics.js'
export { PUNCTUATION_LATENESS_BUCKETS_MS } from './metrics.js'
export type { MetricsAddress, MetricsEndpoint } from './monitoring/metrics-server.js'
export { consoleLogger, createConsoleLogger, silentLogger } from './util/logger.js'
export type { ConsoleLoggerOptions, LogFields, Logger, LogLevel } from './util/logger.js'
