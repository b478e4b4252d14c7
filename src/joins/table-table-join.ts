import type { Processor, ProcessorContext, StreamRecord } from '../processor/api.js'

/** The other table's current value of a key and its timestamp, or null when it holds none. */
export type TableGetter<V> = (keyId: string) => { readonly value: V; readonly ts: number } | null

/**
 * Which side a table-table join processor handles, named after Kafka Streams' processors:
 * `inner` (both sides of an inner join), `left` (the left side of a left join), `right` (the right
 * side of a left join), `outer` (both sides of an outer join).
 */
export type TableJoinMode = 'inner' | 'left' | 'right' | 'outer'

/**
 * One side of a table-table join (Kafka Streams' KTableKTableInnerJoin, LeftJoin, RightJoin and
 * OuterJoin, without old values): an update of this side (a null value deletes) looks the other table's
 * current value up and emits the joined value, or a tombstone, at the later of the two timestamps.
 * An inner join emits nothing while the other side is absent, and a tombstone when this side is
 * deleted; a left join's right side emits `joiner(left, null)` for a right tombstone; an outer join
 * emits whichever side is left. SEMANTICS 8.
 */
export class TableTableJoinProcessor<K, VThis, VOther, VR> implements Processor<K, VThis | null, K, VR | null> {
  private ctx!: ProcessorContext<K, VR | null>
  private getter!: TableGetter<VOther>
  private heldBefore!: () => boolean

  constructor(
    private readonly mode: TableJoinMode,
    /** Makes the other table's getter from this task's context (its store is one of the task's). */
    private readonly other: (context: ProcessorContext<K, VR | null>) => TableGetter<VOther>,
    /** Whether this table held the key before the update being processed (its old value was not null). */
    private readonly thisHeldBefore: (context: ProcessorContext<K, VR | null>) => () => boolean,
    private readonly keyId: (key: K) => string,
    /** The user's joiner with this side's value first. */
    private readonly joiner: (thisValue: VThis | null, otherValue: VOther | null, key: K) => VR,
  ) {}

  init(context: ProcessorContext<K, VR | null>): void {
    this.ctx = context
    this.getter = this.other(context)
    this.heldBefore = this.thisHeldBefore(context)
  }

  process(record: StreamRecord<K, VThis | null>): void {
    const key = record.key
    if (key === null || key === undefined) return
    const other = this.getter(this.keyId(key))
    const value = record.value ?? null
    let out: VR | null = null
    switch (this.mode) {
      case 'inner':
        if (other === null) return
        if (value !== null) out = this.joiner(value, other.value, key)
        break
      case 'left':
        // A deletion of a key neither table holds changes nothing; one this table held is a tombstone.
        if (other === null && value === null && !this.heldBefore()) return
        if (value !== null) out = this.joiner(value, other?.value ?? null, key)
        break
      case 'right':
        if (other === null) return
        out = this.joiner(value, other.value, key)
        break
      case 'outer':
        if (other === null && value === null && !this.heldBefore()) return
        if (other !== null || value !== null) out = this.joiner(value, other?.value ?? null, key)
        break
    }
    const timestamp = other === null ? record.timestamp : Math.max(record.timestamp, other.ts)
    this.ctx.forward({ key, value: out, timestamp, headers: record.headers })
  }
}
