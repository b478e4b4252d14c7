import { readKey, readValue } from '../log/log-record.js'
import type { PartitionLog } from '../log/partition-log.js'
import type { StreamRecord } from '../processor/api.js'
import type { Serde } from '../processor/serdes.js'

export type RecordListener<K, V> = (record: StreamRecord<K | null, V | null>, partition: number, offset: number) => void

interface Subscription {
  readonly logs: PartitionLog[]
  readonly positions: number[]
  readonly deliver: (log: PartitionLog, offset: number) => void
}

/** The runtime's subscribers: each reads a topic from its start, in offset order per partition. */
export class Subscriptions {
  private readonly subs: Subscription[] = []

  add<K, V>(topic: string, logs: PartitionLog[], listener: RecordListener<K, V>, keySerde: Serde<K>, valueSerde: Serde<V>): () => void {
    const sub: Subscription = {
      logs,
      positions: logs.map((l) => l.startOffset()),
      deliver: (log, offset) => {
        const raw = log.get(offset)
        if (raw === undefined) return
        listener(
          {
            key: readKey(raw, keySerde as Serde<unknown>, topic) as K | null,
            value: readValue(raw, valueSerde as Serde<unknown>, topic) as V | null,
            timestamp: raw.timestamp,
            headers: raw.headers,
          },
          log.partition,
          offset,
        )
      },
    }
    this.subs.push(sub)
    return () => {
      const i = this.subs.indexOf(sub)
      if (i >= 0) this.subs.splice(i, 1)
    }
  }

  /** Hands every subscriber the records written since the last delivery. */
  deliver(): void {
    for (const sub of this.subs) {
      for (let p = 0; p < sub.logs.length; p++) {
        const log = sub.logs[p] as PartitionLog
        const end = log.endOffset()
        let pos = sub.positions[p] as number
        while (pos < end) sub.deliver(log, pos++)
        sub.positions[p] = pos
      }
    }
  }

  /** Reports how far each subscriber has read each log (for releasing consumed records). */
  positions(report: (log: PartitionLog, offset: number) => void): void {
    for (const sub of this.subs) sub.logs.forEach((log, p) => report(log, sub.positions[p] as number))
  }
}
