import type { KeyValueStore, Processor, ProcessorContext, StreamRecord } from '../processor/api.js'

/**
 * The processors the DSL compiles to. Each is a small closure over the user's function: the per-record
 * path is one call and, where the record changes, one new record object.
 */
type Ctx<K, V> = ProcessorContext<K, V>

export function statelessProcessor<KIn, VIn, KOut, VOut>(
  step: (record: StreamRecord<KIn, VIn>, ctx: Ctx<KOut, VOut>) => void,
): () => Processor<KIn, VIn, KOut, VOut> {
  return () => {
    let ctx: Ctx<KOut, VOut>
    return {
      init(c) {
        ctx = c
      },
      process(record) {
        step(record, ctx)
      },
    }
  }
}

/** A table from a topic: forwards each update (null deletes), as a changelog-backed KTable would. */
export function tableSourceProcessor<K, V>(): Processor<K, V | null, K, V | null> {
  let ctx: Ctx<K, V | null>
  return {
    init(c) {
      ctx = c
    },
    process(record) {
      ctx.forward(record)
    },
  }
}

/**
 * Non-windowed aggregation: one aggregate per key, forwarded on every update, kept in the key-value
 * store `storeName` (so commits make it durable). Null keys and values are skipped, as in Kafka Streams.
 */
export function aggregateProcessor<K, V, VA>(
  initializer: () => VA,
  aggregator: (key: K, value: V, aggregate: VA) => VA,
  keyId: (key: K) => string,
  storeName: string,
): () => Processor<K, V, K, VA> {
  return () => {
    let ctx: Ctx<K, VA>
    let aggregates: KeyValueStore<string, { readonly agg: VA }>
    return {
      init(c) {
        ctx = c
        aggregates = c.getStateStore(storeName)
      },
      process(record) {
        if (record.key === null || record.value === null) return
        const id = keyId(record.key)
        const agg = aggregator(record.key, record.value, aggregates.get(id)?.agg ?? initializer())
        aggregates.put(id, { agg })
        ctx.forward({ key: record.key, value: agg, timestamp: record.timestamp, headers: record.headers })
      },
    }
  }
}
