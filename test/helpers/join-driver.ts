import { Serdes } from '../../src/index.js'
import type { Topology } from '../../src/index.js'
import { TopologyTestDriver } from '../../src/testing/index.js'

/** One input record of a join test: `side` is the name of the topic it goes to. */
export interface SideInput<S extends string> {
  readonly side: S
  readonly key: string
  readonly value: string | null
  readonly ts: number
}

/**
 * Runs a join topology on the test driver: each input piped to the topic its side names (String keys
 * and values), in order; returns the lines the topology handed to `out`.
 */
export function runJoin<S extends string>(build: (out: (line: string) => void) => Topology, inputs: ReadonlyArray<SideInput<S>>): string[] {
  const out: string[] = []
  const driver = new TopologyTestDriver(build((l) => out.push(l)))
  const topics = new Map<string, ReturnType<TopologyTestDriver['createInputTopic']>>()
  for (const r of inputs) {
    let topic = topics.get(r.side)
    if (topic === undefined) topics.set(r.side, (topic = driver.createInputTopic(r.side, Serdes.String(), Serdes.String())))
    topic.pipeInput(r.key, r.value, r.ts)
  }
  driver.close()
  return out
}
