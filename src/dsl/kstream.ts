import { Serdes } from '../processor/serdes.js'
import type { Serde } from '../processor/serdes.js'
import type { ProcessorContext, StreamRecord } from '../processor/api.js'
import type { StreamsBuilder } from './builder.js'
import { KGroupedStream } from './grouped.js'
import type { Grouped, KeyValue, Produced } from './options.js'
import { statelessProcessor } from './processors.js'

/** A record stream (Kafka Streams' KStream). Serdes are tracked where known; unknown ones default to JSON. */
export class KStream<K, V> {
  /** @internal */
  constructor(
    /** @internal */
    readonly builder: StreamsBuilder,
    /** @internal The node this stream's records come from. */
    readonly node: string,
    /** @internal */
    readonly keySerde: Serde<K> | undefined,
    /** @internal */
    readonly valueSerde: Serde<V> | undefined,
    /**
     * @internal Whether a key-changing operation (map, selectKey, flatMap) came before: grouping by key
     * then goes through a repartition topic, so each key's records meet in one task (as in Kafka Streams).
     */
    readonly repartitionRequired = false,
  ) {}

  filter(predicate: (key: K, value: V) => boolean, name?: string): KStream<K, V> {
    return this.addStatelessNode(name, 'KSTREAM-FILTER', (r, ctx) => predicate(r.key, r.value) && ctx.forward(r), this.keySerde, this.valueSerde)
  }

  filterNot(predicate: (key: K, value: V) => boolean, name?: string): KStream<K, V> {
    return this.addStatelessNode(name, 'KSTREAM-FILTER', (r, ctx) => !predicate(r.key, r.value) && ctx.forward(r), this.keySerde, this.valueSerde)
  }

  map<K2, V2>(mapper: (key: K, value: V) => KeyValue<K2, V2>, name?: string): KStream<K2, V2> {
    return this.addStatelessNode<K2, V2>(
      name,
      'KSTREAM-MAP',
      (r, ctx) => {
        const kv = mapper(r.key, r.value)
        ctx.forward({ key: kv.key, value: kv.value, timestamp: r.timestamp, headers: r.headers })
      },
      undefined,
      undefined,
      true,
    )
  }

  mapValues<V2>(mapper: (value: V, key: K) => V2, name?: string): KStream<K, V2> {
    return this.addStatelessNode<K, V2>(name, 'KSTREAM-MAPVALUES', (r, ctx) => ctx.forward({ key: r.key, value: mapper(r.value, r.key), timestamp: r.timestamp, headers: r.headers }), this.keySerde)
  }

  selectKey<K2>(mapper: (key: K, value: V) => K2, name?: string): KStream<K2, V> {
    return this.addStatelessNode<K2, V>(name, 'KSTREAM-KEY-SELECT', (r, ctx) => ctx.forward({ key: mapper(r.key, r.value), value: r.value, timestamp: r.timestamp, headers: r.headers }), undefined, this.valueSerde, true)
  }

  flatMap<K2, V2>(mapper: (key: K, value: V) => Iterable<KeyValue<K2, V2>>, name?: string): KStream<K2, V2> {
    return this.addStatelessNode<K2, V2>(
      name,
      'KSTREAM-FLATMAP',
      (r, ctx) => {
        for (const kv of mapper(r.key, r.value)) ctx.forward({ key: kv.key, value: kv.value, timestamp: r.timestamp, headers: r.headers })
      },
      undefined,
      undefined,
      true,
    )
  }

  flatMapValues<V2>(mapper: (value: V, key: K) => Iterable<V2>, name?: string): KStream<K, V2> {
    return this.addStatelessNode<K, V2>(
      name,
      'KSTREAM-FLATMAPVALUES',
      (r, ctx) => {
        for (const v of mapper(r.value, r.key)) ctx.forward({ key: r.key, value: v, timestamp: r.timestamp, headers: r.headers })
      },
      this.keySerde,
    )
  }

  peek(action: (key: K, value: V) => void, name?: string): KStream<K, V> {
    return this.addStatelessNode(
      name,
      'KSTREAM-PEEK',
      (r, ctx) => {
        action(r.key, r.value)
        ctx.forward(r)
      },
      this.keySerde,
      this.valueSerde,
    )
  }

  /** Both streams' records, as they arrive. */
  merge(other: KStream<K, V>, name?: string): KStream<K, V> {
    const node = name ?? this.builder.newName('KSTREAM-MERGE')
    this.builder.graph.addProcessor(node, statelessProcessor<K, V, K, V>((r, ctx) => ctx.forward(r)), this.node, other.node)
    return new KStream(this.builder, node, this.keySerde, this.valueSerde, this.repartitionRequired || other.repartitionRequired)
  }

  /**
   * Splits by predicates: each record goes to the first branch whose predicate holds, else to the
   * default branch (if any). Returns the branches by name.
   */
  split(prefix = ''): BranchedKStream<K, V> {
    return new BranchedKStream(this, prefix)
  }

  /**
   * Groups by the current key. After a key-changing operation (map, selectKey, flatMap) the records go
   * through a repartition topic first (`<name>-repartition`), as in Kafka Streams.
   */
  groupByKey(grouped: Grouped<K, V> = {}): KGroupedStream<K, V> {
    const keySerde = grouped.keySerde ?? this.keySerde
    const valueSerde = grouped.valueSerde ?? this.valueSerde
    if (!this.repartitionRequired) return new KGroupedStream(this.builder, this.node, keySerde, valueSerde)
    return this.repartitioned(grouped.name ?? this.node, keySerde, valueSerde)
  }

  /**
   * Groups by a new key. The records go through a repartition topic (`<name>-repartition`), so every
   * record of a new key reaches the same task, as in Kafka Streams.
   */
  groupBy<K2>(selector: (key: K, value: V) => K2, grouped: Grouped<K2, V> = {}): KGroupedStream<K2, V> {
    const name = grouped.name ?? this.builder.newName('KSTREAM-KEY-SELECT')
    return this.selectKey(selector, name).repartitioned(name, grouped.keySerde, grouped.valueSerde)
  }

  /** Writes this stream to `<name>-repartition` (partitioned by key) and groups what is read back. */
  private repartitioned(name: string, keySerde: Serde<K> | undefined, valueSerde: Serde<V> | undefined): KGroupedStream<K, V> {
    const ks = keySerde ?? this.keySerde ?? (Serdes.JSON<K>() as Serde<K>)
    const vs = valueSerde ?? this.valueSerde ?? (Serdes.JSON<V>() as Serde<V>)
    const topic = `${name}-repartition`
    this.builder.graph.markInternalTopic(topic)
    this.builder.graph.addSink(this.builder.newName('KSTREAM-SINK'), topic, { keySerde: ks, valueSerde: vs }, this.node)
    const source = this.builder.newName('KSTREAM-SOURCE')
    this.builder.graph.addSource(source, topic, { keySerde: ks, valueSerde: vs })
    return new KGroupedStream(this.builder, source, ks, vs)
  }

  to(topic: string, produced: Produced<K, V> = {}): void {
    this.builder.graph.addSink(
      produced.name ?? this.builder.newName('KSTREAM-SINK'),
      topic,
      {
        keySerde: produced.keySerde ?? this.keySerde ?? (Serdes.JSON<K>() as Serde<K>),
        valueSerde: produced.valueSerde ?? this.valueSerde ?? (Serdes.JSON<V>() as Serde<V>),
        ...(produced.partitioner === undefined ? {} : { partitioner: produced.partitioner }),
      },
      this.node,
    )
  }

  /** @internal Adds a stateless processor after this stream's node, named `name` or PREFIX-n. */
  addStatelessNode<K2, V2>(
    name: string | undefined,
    prefix: string,
    step: (record: StreamRecord<K, V>, ctx: ProcessorContext<K2, V2>) => unknown,
    keySerde?: Serde<K2>,
    valueSerde?: Serde<V2>,
    changesKey = false,
  ): KStream<K2, V2> {
    const node = name ?? this.builder.newName(prefix)
    this.builder.graph.addProcessor(node, statelessProcessor<K, V, K2, V2>((r, ctx) => void step(r, ctx)), this.node)
    return new KStream<K2, V2>(this.builder, node, keySerde, valueSerde, this.repartitionRequired || changesKey)
  }
}

/** Builder of `split()` branches. */
export class BranchedKStream<K, V> {
  private readonly predicates: Array<{ name: string; predicate: (key: K, value: V) => boolean }> = []

  constructor(
    private readonly stream: KStream<K, V>,
    private readonly prefix: string,
  ) {}

  branch(predicate: (key: K, value: V) => boolean, name?: string): this {
    this.predicates.push({ name: this.prefix + (name ?? String(this.predicates.length + 1)), predicate })
    return this
  }

  /** Ends the split; records matching no predicate go to the default branch when `name` is given. */
  defaultBranch(name = '0'): Record<string, KStream<K, V>> {
    return this.build(this.prefix + name)
  }

  noDefaultBranch(): Record<string, KStream<K, V>> {
    return this.build(undefined)
  }

  private build(defaultName: string | undefined): Record<string, KStream<K, V>> {
    const b = this.stream.builder
    const splitter = b.newName('KSTREAM-BRANCH')
    const branches = [...this.predicates]
    b.graph.addProcessor(
      splitter,
      statelessProcessor<K, V, K, V>((r, ctx) => {
        for (const br of branches) {
          if (br.predicate(r.key, r.value)) {
            ctx.forward(r, br.name)
            return
          }
        }
        if (defaultName !== undefined) ctx.forward(r, defaultName)
      }),
      this.stream.node,
    )
    const out: Record<string, KStream<K, V>> = {}
    for (const name of [...branches.map((br) => br.name), ...(defaultName === undefined ? [] : [defaultName])]) {
      b.graph.addProcessor(name, statelessProcessor<K, V, K, V>((r, ctx) => ctx.forward(r)), splitter)
      out[name] = new KStream(b, name, this.stream.keySerde, this.stream.valueSerde, this.stream.repartitionRequired)
    }
    return out
  }
}
