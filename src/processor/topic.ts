import { PunctualError } from '../errors.js'
import { shownValue } from './shown-value.js'
import type { Serde } from './serdes.js'

/**
 * A topic with the types and serdes of its keys and values, declared once (`Topic.of`). Every place
 * that names a topic also takes it: `StreamsBuilder.stream`, `table` and `globalTable`, `KStream.to`,
 * the runtimes' `producer` and `subscribe`, and the test driver's `createInputTopic` and
 * `createOutputTopic`. A key or value of the wrong type then fails to compile, where a topic's name
 * with type arguments (`producer<string, number>('orders')`) is only what the caller claims.
 *
 * Kafka Streams has no such handle (a topic is a string there, and its types are the serdes'); it is
 * punctual's own, because TypeScript can check what Java's erased generics cannot.
 */
export interface Topic<K, V> {
  /** The topic's name. */
  readonly name: string
  /** How its keys are written and read. */
  readonly keySerde: Serde<K>
  /** How its values are written and read. */
  readonly valueSerde: Serde<V>
}

/** Makes `Topic` handles. */
export const Topic = {
  /**
   * The topic `name`, whose keys are `K`s written with `keySerde` and values `V`s written with `valueSerde`.
   * @throws PunctualError `INVALID_ARGUMENT` for a name that is not a non-empty string, or a serde that is not one.
   */
  of<K, V>(name: string, keySerde: Serde<K>, valueSerde: Serde<V>): Topic<K, V> {
    if (typeof name !== 'string' || name === '') throw new PunctualError('INVALID_ARGUMENT', `Topic.of: the name must be a non-empty string, got ${shownValue(name)}`)
    for (const [side, serde] of [
      ['keySerde', keySerde],
      ['valueSerde', valueSerde],
    ] as const) {
      const s = serde as Partial<Serde<unknown>> | null | undefined
      if (typeof s?.serialize !== 'function' || typeof s.deserialize !== 'function') {
        throw new PunctualError('INVALID_ARGUMENT', `Topic.of("${name}"): ${side} must be a serde (Serdes.String(), Serdes.JSON(), ... or { name, serialize, deserialize }), got ${shownValue(serde)}`)
      }
    }
    return Object.freeze({ name, keySerde, valueSerde })
  },
} as const

/**
 * @internal A topic given by name or as a `Topic`: its name, and the serdes the handle carries or the
 * caller passed (a handle's serdes win over none; a caller may not pass others beside a handle).
 */
export function topicArgument<K, V>(
  caller: string,
  topic: string | Topic<K, V>,
  keySerde: Serde<K> | undefined,
  valueSerde: Serde<V> | undefined,
): { name: string; keySerde: Serde<K> | undefined; valueSerde: Serde<V> | undefined } {
  if (typeof topic === 'string') return { name: topic, keySerde, valueSerde }
  if (typeof topic !== 'object' || topic === null || typeof topic.name !== 'string') {
    throw new PunctualError('INVALID_ARGUMENT', `${caller}: the topic must be a name or a Topic (Topic.of(name, keySerde, valueSerde)), got ${shownValue(topic)}`)
  }
  if ((keySerde !== undefined && keySerde !== topic.keySerde) || (valueSerde !== undefined && valueSerde !== topic.valueSerde)) {
    throw new PunctualError('INVALID_ARGUMENT', `${caller}: topic "${topic.name}" is a Topic, which carries its serdes; pass no others`)
  }
  return { name: topic.name, keySerde: topic.keySerde, valueSerde: topic.valueSerde }
}
