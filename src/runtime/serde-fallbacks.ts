import { isFallbackSerde } from '../processor/serdes.js'
import type { Topology } from '../processor/topology.js'
import type { Logger } from '../util/logger.js'

/** A sink of the application's output whose key or value serde is JSON for want of one. */
export interface SerdeFallback {
  readonly sink: string
  readonly topic: string
  readonly sides: ReadonlyArray<'key' | 'value'>
}

/**
 * The sinks writing an output topic (not one the topology reads back itself, as a repartition topic)
 * whose key or value serde is JSON because the DSL was given none and knew none from upstream: Kafka
 * Streams fails at startup for want of a default serde there; punctual writes JSON, and says so.
 */
export function serdeFallbacks(topology: Topology): SerdeFallback[] {
  const internal = topology.internalTopics()
  const out: SerdeFallback[] = []
  for (const sub of topology.subtopologies()) {
    for (const node of sub.nodes) {
      if (node.kind !== 'sink' || internal.has(node.topic)) continue
      const sides = (['key', 'value'] as const).filter((side) => isFallbackSerde(side === 'key' ? node.keySerde : node.valueSerde))
      if (sides.length > 0) out.push({ sink: node.name, topic: node.topic, sides })
    }
  }
  return out
}

/** Why the DSL may know no serde, per side: the operations that make keys or values of a new type. */
const CAUSES = {
  key: 'selectKey, map, flatMap and the like make keys of a new type',
  value: "mapValues, map, a join's joiner and the like make values of a new type",
  both: 'map, flatMap and the like make keys and values of a new type',
} as const

/** Logs one warning per sink of {@link serdeFallbacks}: which sink, topic and side, and how to choose a serde. */
export function warnOfSerdeFallbacks(topology: Topology, logger: Logger): void {
  for (const { sink, topic, sides } of serdeFallbacks(topology)) {
    const side = sides.length === 2 ? 'both' : (sides[0] as 'key' | 'value')
    const what = side === 'both' ? 'keys and values' : `${side}s`
    const serde = side === 'both' ? 'key or value serde' : `${side} serde`
    const defaults = side === 'both' ? 'a defaultKeySerde and a defaultValueSerde' : side === 'key' ? 'a defaultKeySerde' : 'a defaultValueSerde'
    logger.warn(
      { sink, topic, sides: sides.join(',') },
      `sink "${sink}" writes the ${what} of topic "${topic}" as JSON, for want of a ${serde}: none was given, and none is known from upstream (${CAUSES[side]}); to choose the serdes, write to("${topic}", Produced.with(keySerde, valueSerde)), or give StreamsBuilder ${defaults}`,
    )
  }
}
