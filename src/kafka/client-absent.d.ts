// Stand-in types of @confluentinc/kafka-javascript, for type-checking a clone where the client is not
// installed: it is an optional dependency, and its install fails where its prebuilt binary cannot be
// downloaded and its native build cannot run. tsconfig.json's `paths` reaches this file only when
// node_modules has no client; with the client installed its own types are used. Every name punctual
// uses is `any` here, so nothing is checked against the client's API without it, and the type check
// then allows implicit `any` (tsconfig.no-kafka-client.json: a callback given to an `any` has no
// parameter types).
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
