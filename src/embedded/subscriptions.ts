import { readKey, readValue } from '../processor/record-io.js'
import type { PartitionLog } from './log/partition-log.js'
import type { StreamRecord } from '../processor/api.js'
import type { Serde } from '../processor/serdes.js'

/** Told each record a subscription delivers, with its partition and offset in the topic. */
export type RecordListener<K, V> = (record: StreamRecord<K | null, V | null>, partition: number, offset: number) => void

/** Where a new subscriber starts: the oldest record held, or the end (records written from now on). */
export type SubscribeFrom = 'earliest' | 'latest'

interface Subscription {
  readonly logs: PartitionLog[]
  readonly from: SubscribeFrom
  /** Resolved at the first delivery (a durable runtime restores its topics at start). */
  positions: number[] | undefined
  readonly deliver: (log: PartitionLog, offset: number) => void
}

/**
 * The runtime's subscribers: each reads a topic in offset order per partition. Read-committed (durable
 * runtimes): a subscriber sees a record only once a commit made it durable, so it never sees output
 * that a crash would take back.
 */
export class Subscriptions {
  private readonly subs: Subscription[] = []

  constructor(private readonly readCommitted: () => boolean) {}

  add<K, V>(topic: string, logs: PartitionLog[], listener: RecordListener<K, V>, keySerde: Serde<K>, valueSerde: Serde<V>, from: SubscribeFrom): () => void {
    const sub: Subscription = {
      logs,
      from,
      positions: undefined,
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
    const committed = this.readCommitted()
    for (const sub of this.subs) {
      const positions = this.positionsOf(sub)
      for (let p = 0; p < sub.logs.length; p++) {
        const log = sub.logs[p] as PartitionLog
        const end = committed ? log.committedEnd : log.endOffset()
        let pos = positions[p] as number
        while (pos < end) sub.deliver(log, pos++)
        positions[p] = pos
      }
    }
  }

  /** Reports how far each subscriber has read each log (for releasing consumed records). */
  positions(report: (log: PartitionLog, offset: number) => void): void {
    for (const sub of this.subs) {
      const positions = this.positionsOf(sub)
      sub.logs.forEach((log, p) => report(log, positions[p] as number))
    }
  }

  private positionsOf(sub: Subscription): number[] {
    const committed = this.readCommitted()
    sub.positions ??= sub.logs.map((l) => (sub.from === 'earliest' ? l.startOffset() : committed ? l.committedEnd : l.endOffset()))
    return sub.positions
  }
}
