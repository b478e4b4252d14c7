// Stand-in types of @confluentinc/kafka-javascript, for type-checking a clone where the client is not
// installed: it is an optional dependency, and its install fails where its prebuilt binary cannot be
// downloaded and its native build cannot run. Only tsconfig.no-kafka-client.json maps the client here
// (scripts/typecheck.mjs and tsup.config.ts choose it when node_modules has no client); tsconfig.json
// does not, since tsx applies its paths to imports at run time too. Every name punctual uses is `any`
// here, so nothing is checked against the client's API without it, and that check allows implicit
// `any` (a callback given to an `any` has no parameter types).
/* eslint-disable @typescript-eslint/no-explicit-any */
export type KafkaConsumer = any
export declare const KafkaConsumer: any
export type Producer = any
export declare const Producer: any
export type LibrdKafkaError = any
export type TopicPartition = any
export type TopicPartitionOffset = any
export type ConsumerGlobalConfig = any
export type ProducerGlobalConfig = any
export type Message = any
export declare const RdKafka: any
export declare namespace KafkaJS {
  type Admin = any
  type CommonConstructorConfig = any
  const Kafka: any
  const logLevel: any
}
