import type { KeyValueStore, Processor, ProcessorContext, StreamRecord } from '../processor/api.js'

/** A table's latest value of a key, as the table's store keeps it (its timestamp for table-table joins). */
export interface TableEntry<V> {
  readonly v: V
  readonly ts: number
}

/**
 * A stream-table join (Kafka Streams' KStreamKTableJoinProcessor, plain table): each stream record
 * looks its key up in the table's store as it arrives and, when the table holds it (or in a left join
 * in any case), emits the joined value at the stream record's timestamp. Records with a null value are
 * dropped, and so are records with a null key, except that a left join emits those with a null partner
 * (KIP-962).
 */
export class StreamTableJoinProcessor<K, V, VT, VR> implements Processor<K, V, K, VR> {
  private ctx!: ProcessorContext<K, VR>
  private table!: KeyValueStore<string, TableEntry<VT>>

  constructor(
    private readonly storeName: string,
    private readonly keyId: (key: K) => string,
    private readonly joiner: (value: V, tableValue: VT | null, key: K) => VR,
    private readonly left: boolean,
  ) {}

  init(context: ProcessorContext<K, VR>): void {
    this.ctx = context
    this.table = context.getStateStore<KeyValueStore<string, TableEntry<VT>>>(this.storeName)
  }

  process(record: StreamRecord<K, V>): void {
    const { key, value } = record
    if (value === null || value === undefined) return
    let tableValue: VT | null = null
    if (key === null || key === undefined) {
      if (!this.left) return
    } else {
      tableValue = this.table.get(this.keyId(key))?.v ?? null
      if (tableValue === null && !this.left) return
    }
    this.ctx.forward({ key, value: this.joiner(value, tableValue, key), timestamp: record.timestamp, headers: record.headers })
  }
}
