import { PunctualError } from '../errors.js'
import type { Serde } from './serdes.js'
import type { Topology, TopicSerdes } from './topology.js'

/** How a caller uses a topic: it writes input that a source reads, or it reads what a sink writes. */
export type TopicRole = 'input' | 'output' | 'any'

const BUILT_IN = new Set(['String', 'Bytes', 'Double', 'Integer', 'Long', 'JSON'])

/**
 * The serdes a producer, a subscriber or a test topic uses for `topic`: the ones given, else the ones the
 * topology uses for it. Refuses a topic the topology does not use in that role (listing the ones it
 * does), and a built-in serde that differs from the built-in serde the topology writes the topic with
 * (reading a `count()` topic as String would deliver garbage, not an error). `Bytes` reads anything.
 */
export function topicSerdes<K, V>(
  topology: Topology,
  topic: string,
  role: TopicRole,
  caller: string,
  keySerde: Serde<K> | undefined,
  valueSerde: Serde<V> | undefined,
): { keySerde: Serde<K>; valueSerde: Serde<V> } {
  const use = topology.topicUse(topic)
  const usable = role === 'input' ? use.source !== undefined : role === 'output' ? use.sink !== undefined : use.source !== undefined || use.sink !== undefined
  if (!usable) {
    const { sources, sinks } = topology.topicNames()
    const list = (names: string[]): string => (names.length === 0 ? '(none)' : names.join(', '))
    const what = role === 'input' ? 'no source of the topology reads' : role === 'output' ? 'no sink of the topology writes' : 'the topology neither reads nor writes'
    throw new PunctualError('INVALID_ARGUMENT', `${caller}: ${what} topic "${topic}"; source topics: ${list(sources)}; sink topics: ${list(sinks)}`)
  }
  // The topology's serdes for this use: a reader of output gets what the sinks write, a writer of input
  // what the source reads.
  const known: TopicSerdes | 'mixed' | undefined = role === 'input' ? use.source : (use.sink ?? use.source)
  if (known === 'mixed' && (keySerde === undefined || valueSerde === undefined)) {
    throw new PunctualError('INVALID_ARGUMENT', `${caller}: sinks write topic "${topic}" with different serdes; pass keySerde and valueSerde`)
  }
  const ofTopology = known === 'mixed' ? undefined : known
  if (ofTopology !== undefined) {
    checkSame(caller, topic, 'key', keySerde, ofTopology.keySerde)
    checkSame(caller, topic, 'value', valueSerde, ofTopology.valueSerde)
  }
  return {
    keySerde: keySerde ?? (ofTopology?.keySerde as Serde<K>),
    valueSerde: valueSerde ?? (ofTopology?.valueSerde as Serde<V>),
  }
}

function checkSame(caller: string, topic: string, part: 'key' | 'value', given: Serde<unknown> | undefined, ofTopology: Serde<unknown>): void {
  if (given === undefined || given.name === ofTopology.name || given.name === 'Bytes') return
  if (!BUILT_IN.has(given.name) || !BUILT_IN.has(ofTopology.name)) return
  throw new PunctualError(
    'INVALID_ARGUMENT',
    `${caller}: the topology uses Serdes.${ofTopology.name}() for the ${part}s of topic "${topic}", not Serdes.${given.name}(); leave the ${part} serde out to use the topology's`,
  )
}

/** Refuses, at the call, a timestamp that is not an integer epoch millisecond >= 0. */
export function checkTimestamp(caller: string, timestamp: number): void {
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) {
    throw new PunctualError('INVALID_ARGUMENT', `${caller}: a timestamp is an integer epoch millisecond >= 0, got ${timestamp}`)
  }
}
