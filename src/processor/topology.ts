import { PunctualError } from '../errors.js'
import type { StoreBuilder } from '../state/stores.js'
import type { KeyedProcessorSupplier } from '../keyed/api.js'
import type { ProcessorSupplier, StateStore, StoreKey } from './api.js'
import type { Serde } from './serdes.js'
import { isFallbackSerde, Serdes } from './serdes.js'
import { checkTimestampExtractor } from './timestamp-extractor.js'
import type { TimestampExtractor } from './timestamp-extractor.js'

/** Chooses the output partition of a record; undefined falls back to the default (murmur2 of the key). */
export type StreamPartitioner<K, V> = (topic: string, key: K, value: V, numPartitions: number) => number | undefined

/** How {@link Topology.addSource} reads its topics: serdes and event time (Kafka Streams' `addSource` arguments). */
export interface SourceOptions<K, V> {
  /** @default Serdes.String() */
  keySerde?: Serde<K>
  /** @default Serdes.String() */
  valueSerde?: Serde<V>
  /**
   * Where each record's event time comes from (Kafka Streams' `Consumed.withTimestampExtractor`).
   * Undefined: the application's `defaultTimestampExtractor`, else the record's own timestamp. `null`:
   * the record's own timestamp, whatever the default.
   */
  timestampExtractor?: TimestampExtractor<K, V> | null
}

/** How {@link Topology.addSink} writes its topic: serdes and partitioner (Kafka Streams' `addSink` arguments). */
export interface SinkOptions<K, V> {
  /** @default Serdes.String() */
  keySerde?: Serde<K>
  /** @default Serdes.String() */
  valueSerde?: Serde<V>
  /** Chooses each record's partition. @default murmur2 of the serialized key, as Kafka's producers do */
  partitioner?: StreamPartitioner<K, V>
}

/** The definitions the runtime instantiates per task. */
export type NodeDef =
  | {
      readonly kind: 'source'
      readonly name: string
      readonly topics: readonly string[]
      readonly keySerde: Serde<unknown>
      readonly valueSerde: Serde<unknown>
      /** Undefined: the application's default; null: the record's own timestamp. */
      readonly timestampExtractor: TimestampExtractor | null | undefined
    }
  | {
      readonly kind: 'processor'
      readonly name: string
      /** Keyed processors get a current key, timers and keyed state. */
      readonly keyed: boolean
      readonly supplier: ProcessorSupplier<unknown, unknown, unknown, unknown> | KeyedProcessorSupplier<StoreKey, unknown, unknown, unknown>
      readonly parents: readonly string[]
      readonly stores: Set<string>
    }
  | {
      readonly kind: 'sink'
      readonly name: string
      readonly topic: string
      readonly keySerde: Serde<unknown>
      readonly valueSerde: Serde<unknown>
      readonly partitioner: StreamPartitioner<unknown, unknown> | undefined
      readonly parents: readonly string[]
    }

/** A connected part of the topology: it gets one task per input partition. */
export interface Subtopology {
  readonly id: number
  /** Nodes in the order they were added (parents always precede children). */
  readonly nodes: readonly NodeDef[]
  readonly sourceTopics: readonly string[]
  readonly stores: readonly StoreBuilder[]
}

/**
 * A global store: one instance per application instance, read by every task, kept up to date from all
 * partitions of its topic by its own processor, apart from the tasks (Kafka Streams' global stores).
 */
export interface GlobalStoreDef {
  readonly builder: StoreBuilder
  readonly sourceName: string
  readonly topic: string
  readonly keySerde: Serde<unknown>
  readonly valueSerde: Serde<unknown>
  readonly processorName: string
  readonly supplier: ProcessorSupplier<unknown, unknown, never, never>
}

/** The serdes a source reads a topic with, or a sink writes it with. */
export interface TopicSerdes {
  readonly keySerde: Serde<unknown>
  readonly valueSerde: Serde<unknown>
}

/** Who reads and writes a topic in a topology. */
export interface TopicUse {
  readonly source: TopicSerdes | undefined
  readonly sink: TopicSerdes | 'mixed' | undefined
}

/**
 * The processing graph: sources read topics, processors transform, sinks write topics. Mistakes are
 * reported when a node is added, naming the node, so a bad topology never starts.
 */
export class Topology {
  private readonly nodes = new Map<string, NodeDef>()
  private readonly storeBuilders = new Map<string, StoreBuilder>()
  /** Topics the topology writes and reads back itself (the DSL's repartition topics). */
  private readonly internal = new Set<string>()
  private readonly topicToSource = new Map<string, string>()
  private readonly globals = new Map<string, GlobalStoreDef>()

  /**
   * Adds a source node `name` that reads `topics` (Kafka Streams' `Topology.addSource`). Topics read by
   * one source form one stream; their partitions with the same number go to one task.
   * @throws PunctualError `INVALID_TOPOLOGY` for a name in use, no topic or an empty topic name, or a
   *   topic another source reads; `INVALID_CONFIG` for a timestamp extractor without `extract`.
   */
  addSource<K = string, V = string>(name: string, topics: string | readonly string[], options: SourceOptions<K, V> = {}): this {
    this.assertNewName(name)
    const list = typeof topics === 'string' ? [topics] : [...topics]
    if (list.length === 0) throw topologyError(`source "${name}" needs at least one topic`)
    for (const topic of list) {
      if (typeof topic !== 'string' || topic.length === 0) throw topologyError(`source "${name}": invalid topic name ${JSON.stringify(topic)}`)
      const other = this.topicToSource.get(topic)
      if (other !== undefined) throw topologyError(`source "${name}": topic "${topic}" is already read by source "${other}"`)
    }
    for (const topic of list) this.topicToSource.set(topic, name)
    this.nodes.set(name, {
      kind: 'source',
      name,
      topics: list,
      keySerde: (options.keySerde ?? Serdes.String()) as Serde<unknown>,
      valueSerde: (options.valueSerde ?? Serdes.String()) as Serde<unknown>,
      // The topology's own topics (repartition, foreign-key join) keep the timestamps their records
      // were written with: a default extractor is meant for the application's input, as in Kafka Streams.
      timestampExtractor: options.timestampExtractor === null || list.some((t) => this.internal.has(t)) ? null : checkTimestampExtractor(options.timestampExtractor, `source "${name}"`),
    })
    return this
  }

  /**
   * Adds a processor node `name` below `parentNames`, whose records it receives (Kafka Streams'
   * `Topology.addProcessor`); `supplier` makes one processor per task.
   * @throws PunctualError `INVALID_TOPOLOGY` for a name in use, no parent, or a parent that is missing
   *   (add parents first) or a sink.
   */
  addProcessor<KIn, VIn, KOut = never, VOut = never>(
    name: string,
    supplier: ProcessorSupplier<KIn, VIn, KOut, VOut>,
    ...parentNames: string[]
  ): this {
    this.assertNewName(name)
    if (typeof supplier !== 'function') throw topologyError(`processor "${name}": supplier must be a function returning a new processor`)
    this.assertParents(name, parentNames)
    this.nodes.set(name, {
      kind: 'processor',
      name,
      keyed: false,
      supplier: supplier as ProcessorSupplier<unknown, unknown, unknown, unknown>,
      parents: parentNames,
      stores: new Set(),
    })
    return this
  }

  /**
   * Adds a keyed processor: while it processes a record, a timer or an expiry it has a current key,
   * and can use timers and keyed state (value, map, list, with TTL) for that key.
   */
  addKeyedProcessor<K extends StoreKey, VIn, KOut = never, VOut = never>(
    name: string,
    supplier: KeyedProcessorSupplier<K, VIn, KOut, VOut>,
    ...parentNames: string[]
  ): this {
    this.assertNewName(name)
    if (typeof supplier !== 'function') throw topologyError(`keyed processor "${name}": supplier must be a function returning a new processor`)
    this.assertParents(name, parentNames)
    this.nodes.set(name, {
      kind: 'processor',
      name,
      keyed: true,
      supplier: supplier as unknown as KeyedProcessorSupplier<StoreKey, unknown, unknown, unknown>,
      parents: parentNames,
      stores: new Set(),
    })
    return this
  }

  /**
   * Adds a sink node `name` below `parentNames` that writes what they forward to `topic` (Kafka Streams'
   * `Topology.addSink`). A topic a source of this topology reads connects the two through it.
   * @throws PunctualError `INVALID_TOPOLOGY` for a name in use, an empty topic name, or parents as in
   *   {@link Topology.addProcessor}.
   */
  addSink<K = string, V = string>(name: string, topic: string, options: SinkOptions<K, V>, ...parentNames: string[]): this {
    this.assertNewName(name)
    if (typeof topic !== 'string' || topic.length === 0) throw topologyError(`sink "${name}": invalid topic name ${JSON.stringify(topic)}`)
    this.assertParents(name, parentNames)
    this.nodes.set(name, {
      kind: 'sink',
      name,
      topic,
      keySerde: (options.keySerde ?? Serdes.String()) as Serde<unknown>,
      valueSerde: (options.valueSerde ?? Serdes.String()) as Serde<unknown>,
      partitioner: options.partitioner as StreamPartitioner<unknown, unknown> | undefined,
      parents: parentNames,
    })
    return this
  }

  /** Adds a store and connects it to the named processors (each task gets its own instance). */
  addStateStore<S extends StateStore>(builder: StoreBuilder<S>, ...processorNames: string[]): this {
    if (this.storeBuilders.has(builder.name)) throw topologyError(`state store "${builder.name}" is already added`)
    // punctual.* names its own parts of a task's changelog (clocks, timers, keyed state).
    if (typeof builder.name !== 'string' || builder.name.length === 0 || builder.name.startsWith('punctual.')) {
      throw topologyError(`a state store needs a non-empty name that does not start with "punctual." (reserved), got ${JSON.stringify(builder.name)}`)
    }
    this.storeBuilders.set(builder.name, builder)
    return this.connectProcessorAndStateStores(builder.name, ...processorNames)
  }

  /**
   * Adds a global store (Kafka Streams' `addGlobalStore`): one instance per application instance, which
   * every processor connected to it reads (`connectProcessorAndStateStores`), kept up to date by
   * `processorName` from all partitions of `topic`, read from its start when the application starts and
   * then as records arrive, before the tasks process theirs. The processor writes the store; it forwards
   * nothing, and its reads are not tied to stream time.
   */
  addGlobalStore<K = string, V = string>(
    builder: StoreBuilder,
    sourceName: string,
    topic: string,
    options: SourceOptions<K, V>,
    processorName: string,
    supplier: ProcessorSupplier<K, V, never, never>,
  ): this {
    this.assertNewName(sourceName)
    this.assertNewName(processorName)
    if (sourceName === processorName) throw topologyError(`global store "${builder.name}": its source and processor need different names, got "${sourceName}" twice`)
    if (typeof topic !== 'string' || topic.length === 0) throw topologyError(`global store "${builder.name}": invalid topic name ${JSON.stringify(topic)}`)
    const other = this.topicToSource.get(topic)
    if (other !== undefined) throw topologyError(`global store "${builder.name}": topic "${topic}" is already read by source "${other}"`)
    if (typeof supplier !== 'function') throw topologyError(`global store "${builder.name}": processor "${processorName}" needs a supplier function returning a new processor`)
    this.addStateStore(builder)
    this.topicToSource.set(topic, sourceName)
    this.globals.set(builder.name, {
      builder,
      sourceName,
      topic,
      keySerde: (options.keySerde ?? Serdes.String()) as Serde<unknown>,
      valueSerde: (options.valueSerde ?? Serdes.String()) as Serde<unknown>,
      processorName,
      supplier: supplier as ProcessorSupplier<unknown, unknown, never, never>,
    })
    return this
  }

  /** @internal The global stores, in the order they were added. */
  globalStores(): readonly GlobalStoreDef[] {
    return [...this.globals.values()]
  }

  /** @internal Whether a store of that name is added. */
  hasStateStore(name: string): boolean {
    return this.storeBuilders.has(name)
  }

  /**
   * Gives the named processors access to store `storeName` through `getStateStore` (Kafka Streams'
   * `Topology.connectProcessorAndStateStores`). Processors that share a store (not a global one) run in one sub-topology.
   * @throws PunctualError `INVALID_TOPOLOGY` when the store is not added or a name is not a processor.
   */
  connectProcessorAndStateStores(storeName: string, ...processorNames: string[]): this {
    if (!this.storeBuilders.has(storeName)) throw topologyError(`state store "${storeName}" is not added to the topology`)
    for (const p of processorNames) {
      const node = this.nodes.get(p)
      if (node === undefined || node.kind !== 'processor') {
        throw topologyError(`state store "${storeName}": "${p}" is not a processor of this topology`)
      }
      node.stores.add(storeName)
    }
    return this
  }

  /** @internal The names of the nodes that read from node `name`, in the order they were added. */
  childNames(name: string): string[] {
    const out: string[] = []
    for (const node of this.nodes.values()) if (node.kind !== 'source' && node.parents.includes(name)) out.push(node.name)
    return out
  }

  /** @internal The connected parts of the graph, numbered in the order of their first node. */
  subtopologies(): Subtopology[] {
    const names = [...this.nodes.keys()]
    const parent = new Map<string, string>(names.map((n) => [n, n]))
    const find = (n: string): string => {
      let r = n
      while (parent.get(r) !== r) r = parent.get(r) as string
      parent.set(n, r)
      return r
    }
    const union = (a: string, b: string): void => {
      const ra = find(a)
      const rb = find(b)
      if (ra !== rb) parent.set(rb, ra)
    }
    const storeOwner = new Map<string, string>()
    for (const node of this.nodes.values()) {
      if (node.kind !== 'source') for (const p of node.parents) union(node.name, p)
      if (node.kind === 'processor') {
        // Processors sharing a store must run in the same task.
        for (const s of node.stores) {
          // Every task reads the one instance of a global store: it ties no processors together.
          if (this.globals.has(s)) continue
          const owner = storeOwner.get(s)
          if (owner === undefined) storeOwner.set(s, node.name)
          else union(owner, node.name)
        }
      }
    }
    const groups = new Map<string, NodeDef[]>()
    for (const node of this.nodes.values()) {
      const root = find(node.name)
      let g = groups.get(root)
      if (g === undefined) groups.set(root, (g = []))
      g.push(node)
    }
    return [...groups.values()].map((nodes, id) => {
      const stores = new Set<string>()
      for (const n of nodes) if (n.kind === 'processor') for (const s of n.stores) if (!this.globals.has(s)) stores.add(s)
      return {
        id,
        nodes,
        sourceTopics: nodes.flatMap((n) => (n.kind === 'source' ? n.topics : [])),
        stores: [...stores].map((s) => this.storeBuilders.get(s) as StoreBuilder),
      }
    })
  }

  /**
   * @internal How the topology uses `topic`: the serdes of the source that reads it and of the sinks that
   * write it (`undefined` where none does, `'mixed'` where sinks write it with different serdes).
   */
  topicUse(topic: string): TopicUse {
    let source: TopicSerdes | undefined = [...this.globals.values()].find((g) => g.topic === topic)
    let sink: TopicSerdes | 'mixed' | undefined
    for (const node of this.nodes.values()) {
      if (node.kind === 'source' && node.topics.includes(topic)) source = node
      else if (node.kind === 'sink' && node.topic === topic) {
        if (sink === undefined) sink = node
        else if (sink !== 'mixed' && (sink.keySerde !== node.keySerde || sink.valueSerde !== node.valueSerde)) sink = 'mixed'
      }
    }
    return { source, sink }
  }

  /**
   * @internal Marks `topic` as the topology's own: it writes it and reads it back (a repartition topic).
   * On Kafka such a topic belongs to the application: named `<applicationId>-<topic>` and created by it.
   */
  markInternalTopic(topic: string): this {
    this.internal.add(topic)
    return this
  }

  /** @internal The topics marked as the topology's own. */
  internalTopics(): ReadonlySet<string> {
    return this.internal
  }

  /** @internal The topics sources read and the topics sinks write, each sorted. */
  topicNames(): { readonly sources: string[]; readonly sinks: string[] } {
    const sources = new Set<string>()
    const sinks = new Set<string>()
    for (const node of this.nodes.values()) {
      if (node.kind === 'source') for (const t of node.topics) sources.add(t)
      else if (node.kind === 'sink') sinks.add(node.topic)
    }
    for (const g of this.globals.values()) sources.add(g.topic)
    return { sources: [...sources].sort(), sinks: [...sinks].sort() }
  }

  /**
   * A readable description of the graph, in the layout Kafka Streams' `describe()` uses, with one more
   * line per sink: the key and value serdes it writes with, by name (`serdes: key String, value JSON`).
   * `(fallback: none given or known)` after a serde marks JSON written for want of a serde: the DSL was
   * given none (`Produced.with`, the builder's default serdes) and knows none from upstream (after
   * `mapValues` or a join's joiner, say).
   */
  describe(): string {
    const children = new Map<string, string[]>()
    for (const node of this.nodes.values()) {
      if (node.kind === 'source') continue
      for (const p of node.parents) {
        const list = children.get(p)
        if (list === undefined) children.set(p, [node.name])
        else list.push(node.name)
      }
    }
    const lines = ['Topologies:']
    for (const sub of this.subtopologies()) {
      lines.push(`   Sub-topology: ${sub.id}`)
      for (const node of sub.nodes) {
        if (node.kind === 'source') lines.push(`    Source: ${node.name} (topics: [${node.topics.join(', ')}])`)
        else if (node.kind === 'processor') lines.push(`    ${node.keyed ? 'KeyedProcessor' : 'Processor'}: ${node.name} (stores: [${[...node.stores].join(', ')}])`)
        else lines.push(`    Sink: ${node.name} (topic: ${node.topic})`)
        const kids = children.get(node.name)
        if (kids !== undefined) lines.push(`      --> ${kids.join(', ')}`)
        if (node.kind !== 'source') lines.push(`      <-- ${node.parents.join(', ')}`)
        if (node.kind === 'sink') lines.push(`      serdes: key ${serdeLabel(node.keySerde)}, value ${serdeLabel(node.valueSerde)}`)
      }
    }
    for (const g of this.globals.values()) {
      lines.push(`   Global store: ${g.builder.name} (not in any task)`)
      lines.push(`    Source: ${g.sourceName} (topics: [${g.topic}])`)
      lines.push(`      --> ${g.processorName}`)
      lines.push(`    Processor: ${g.processorName} (stores: [${g.builder.name}])`)
      lines.push(`      <-- ${g.sourceName}`)
    }
    return lines.join('\n') + '\n'
  }

  private assertNewName(name: string): void {
    if (typeof name !== 'string' || name.length === 0) throw topologyError(`node name must be a non-empty string, got ${JSON.stringify(name)}`)
    const global = [...this.globals.values()].some((g) => g.sourceName === name || g.processorName === name)
    if (this.nodes.has(name) || global) throw topologyError(`a node named "${name}" is already in the topology`)
  }

  private assertParents(name: string, parents: readonly string[]): void {
    if (parents.length === 0) throw topologyError(`"${name}" needs at least one parent node`)
    for (const p of parents) {
      const node = this.nodes.get(p)
      if (node === undefined) throw topologyError(`"${name}": parent "${p}" is not in the topology (add parents first)`)
      if (node.kind === 'sink') throw topologyError(`"${name}": parent "${p}" is a sink, which has no children`)
    }
  }
}

/** A serde as `describe()` shows it: its name, marked when it is JSON chosen for want of a serde. */
function serdeLabel(serde: Serde<unknown>): string {
  const name = typeof serde.name === 'string' && serde.name !== '' ? serde.name : '(a serde without a name)'
  return isFallbackSerde(serde) ? `${name} (fallback: none given or known)` : name
}

function topologyError(message: string): PunctualError {
  return new PunctualError('INVALID_TOPOLOGY', message)
}
