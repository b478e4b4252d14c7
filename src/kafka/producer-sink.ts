import { PunctualError } from '../errors.js'
import type { Headers } from '../processor/api.js'

/** What the sink needs of the producer (the client's node-rdkafka-style `Producer`). */
export interface RecordProducer {
  produce(topic: string, partition: number, value: Buffer | null, key: Buffer | null, timestamp: number, opaque?: unknown, headers?: Array<Record<string, Buffer>>): unknown
}

interface Held {
  readonly topic: string
  readonly partition: number
  readonly key: Uint8Array | null
  readonly value: Uint8Array | null
  readonly timestamp: number
  readonly headers: Headers
}

/** librdkafka's "queue full" (RD_KAFKA_RESP_ERR__QUEUE_FULL). */
const QUEUE_FULL = -184

/**
 * Hands records to the producer. Under exactly-once a record belongs to the transaction open when it is
 * written; between the moment a commit takes its changes and the moment the next transaction begins,
 * no transaction is open, so the sink holds what tasks write meanwhile (`hold`) and produces it into the
 * next one (`release`). Processing goes on while a transaction commits; the task loop bounds what is
 * held by `commitMaxRecords`.
 */
export class ProducerSink {
  private held: Held[] | undefined

  constructor(private producer: RecordProducer) {}

  /** Produces through `producer` from now on (it replaced a fenced one). */
  use(producer: RecordProducer): void {
    this.producer = producer
  }

  readonly send = (topic: string, partition: number, key: Uint8Array | null, value: Uint8Array | null, timestamp: number, headers: Headers): void => {
    if (this.held !== undefined) this.held.push({ topic, partition, key, value, timestamp, headers })
    else this.produce(topic, partition, key, value, timestamp, headers)
  }

  /** Holds what is written from now until `release`. */
  hold(): void {
    this.held ??= []
  }

  /** Produces what was held, in order, and what is written from now on. */
  release(): void {
    const held = this.held
    this.held = undefined
    if (held !== undefined) for (const r of held) this.produce(r.topic, r.partition, r.key, r.value, r.timestamp, r.headers)
  }

  /** Drops what is held (its transaction was aborted: the tasks that wrote it go back to their last commit). */
  discard(): void {
    if (this.held !== undefined) this.held = []
  }

  /** Records held, waiting for the next transaction. */
  get holding(): number {
    return this.held?.length ?? 0
  }

  produce(topic: string, partition: number, key: Uint8Array | null, value: Uint8Array | null, timestamp: number, headers: Headers): void {
    try {
      this.producer.produce(topic, partition, toBuffer(value), toBuffer(key), timestamp, undefined, headers.length === 0 ? undefined : headers.map((h) => ({ [h.key]: toBuffer(h.value) ?? Buffer.alloc(0) })))
    } catch (err) {
      if ((err as { code?: number }).code === QUEUE_FULL) {
        throw new PunctualError('ILLEGAL_STATE', `the producer's queue is full (librdkafka queue.buffering.max.messages / max.kbytes) writing to ${topic}-${partition}: raise them in the producer settings, or lower commitMaxRecords`, { cause: err, retriable: true })
      }
      throw err
    }
  }
}

export function toBuffer(bytes: Uint8Array | null): Buffer | null {
  if (bytes === null) return null
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}
