import type { KeyValueStore, Processor, ProcessorContext, StreamRecord, VersionedKeyValueStore } from '../processor/api.js'
import type { Buffered, JoinBufferStore } from './join-buffer.js'

/** A table's latest value of a key, as the table's store keeps it (its timestamp for table-table joins). */
export interface TableEntry<V> {
  readonly v: V
  readonly ts: number
}

/** How a stream-table join reads its table and whether it waits for late table updates. */
export interface TableLookup {
  readonly storeName: string
  /** The table's store is versioned: look it up as of the stream record's timestamp (KIP-914). */
  readonly versioned: boolean
  /** Grace period and buffer store (versioned tables only, KIP-923). */
  readonly grace?: { readonly ms: number; readonly bufferStore: string }
}

/**
 * A stream-table join (Kafka Streams' KStreamKTableJoinProcessor): each stream record looks its key up
 * in the table and, when the table holds it (or in a left join in any case), emits the joined value at
 * the stream record's timestamp. A plain table answers with its latest value when the record arrives;
 * a versioned one with the version valid at the record's timestamp. With a grace period g, records wait
 * in a buffer until the largest buffered timestamp reaches t + g, then leave in (timestamp, key,
 * arrival) order and are joined; a record already older than that is joined at once. Records with a
 * null value are dropped, and so are records with a null key, except that a left join emits those
 * with a null partner (KIP-962).
 */
export class StreamTableJoinProcessor<K, V, VT, VR> implements Processor<K, V, K, VR> {
  private ctx!: ProcessorContext<K, VR>
  private table: KeyValueStore<string, TableEntry<VT>> | undefined
  private versions: VersionedKeyValueStore<string, VT> | undefined
  private buffer: JoinBufferStore<K, V> | undefined
  private readonly emitBuffered = (r: Buffered<K, V>): void => this.join(r.key, r.value, r.ts, r.headers)

  constructor(
    private readonly lookup: TableLookup,
    private readonly keyId: (key: K) => string,
    private readonly joiner: (value: V, tableValue: VT | null, key: K) => VR,
    private readonly left: boolean,
  ) {}

  init(context: ProcessorContext<K, VR>): void {
    this.ctx = context
    if (this.lookup.versioned) this.versions = context.getStateStore<VersionedKeyValueStore<string, VT>>(this.lookup.storeName)
    else this.table = context.getStateStore<KeyValueStore<string, TableEntry<VT>>>(this.lookup.storeName)
    if (this.lookup.grace !== undefined) this.buffer = context.getStateStore<JoinBufferStore<K, V>>(this.lookup.grace.bufferStore)
  }

  process(record: StreamRecord<K, V>): void {
    const { key, value } = record
    if (value === null || value === undefined) return
    if ((key === null || key === undefined) && !this.left) return
    const buffer = this.buffer
    if (buffer === undefined || key === null || key === undefined) {
      this.join(key, value, record.timestamp, record.headers)
      return
    }
    const grace = (this.lookup.grace as { ms: number }).ms
    // Too late for the buffer: no later table update can change its answer any more.
    if (record.timestamp < buffer.streamTime - grace) {
      this.join(key, value, record.timestamp, record.headers)
      return
    }
    buffer.put(this.keyId(key), { key, value, ts: record.timestamp, headers: record.headers })
    buffer.evictThrough(buffer.streamTime - grace, this.emitBuffered)
  }

  private join(key: K, value: V, timestamp: number, headers: StreamRecord<K, V>['headers']): void {
    let tableValue: VT | null = null
    if (key !== null && key !== undefined) {
      const id = this.keyId(key)
      tableValue = (this.versions !== undefined ? this.versions.get(id, timestamp)?.value : this.table?.get(id)?.v) ?? null
    }
    if (tableValue === null && !this.left) return
    this.ctx.forward({ key, value: this.joiner(value, tableValue, key), timestamp, headers })
  }
}
