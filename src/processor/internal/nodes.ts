import { PunctualError } from '../../errors.js'
import type { RecordCollector } from '../record-io.js'
import type { Processor, ProcessorContext, StreamRecord } from '../api.js'
import { checkWritable } from '../serdes.js'
import type { Serde } from '../serdes.js'
import type { StreamPartitioner } from '../topology.js'
import { markFailedNode } from './node-failure.js'
import type { TaskMetrics } from '../../metrics.js'

/** A node of a task's instantiated graph. `process` is the per-record entry point. */
export abstract class ProcessorNode {
  readonly children: ProcessorNode[] = []
  readonly childByName = new Map<string, ProcessorNode>()
  /** Records this node was given (metrics: Kafka Streams' processor-node process-total). */
  received = 0

  constructor(readonly name: string) {}

  addChild(child: ProcessorNode): void {
    this.children.push(child)
    this.childByName.set(child.name, child)
  }

  abstract process(record: StreamRecord<unknown, unknown>): void

  forwardToChildren(record: StreamRecord<unknown, unknown>): void {
    const children = this.children
    for (let i = 0; i < children.length; i++) (children[i] as ProcessorNode).process(record)
  }

  init(): void {}
  close(): void {}
}

export class SourceNode extends ProcessorNode {
  constructor(
    name: string,
    readonly keySerde: Serde<unknown>,
    readonly valueSerde: Serde<unknown>,
  ) {
    super(name)
  }

  process(record: StreamRecord<unknown, unknown>): void {
    this.received++
    this.forwardToChildren(record)
  }
}

export class UserProcessorNode extends ProcessorNode {
  context: ProcessorContext<unknown, unknown> | undefined

  constructor(
    name: string,
    readonly processor: Processor<unknown, unknown, unknown, unknown>,
  ) {
    super(name)
  }

  process(record: StreamRecord<unknown, unknown>): void {
    this.received++
    try {
      this.processor.process(record)
    } catch (err) {
      throw markFailedNode(err, this.name)
    }
  }

  override init(): void {
    this.processor.init?.(this.context as ProcessorContext<unknown, unknown>)
  }

  override close(): void {
    this.processor.close?.()
  }
}

export class SinkNode extends ProcessorNode {
  constructor(
    name: string,
    readonly topic: string,
    private readonly keySerde: Serde<unknown>,
    private readonly valueSerde: Serde<unknown>,
    private readonly partitioner: StreamPartitioner<unknown, unknown> | undefined,
    private readonly collector: RecordCollector,
    /** The task's counters: a sink counts what it writes. */
    private readonly metrics: TaskMetrics,
  ) {
    super(name)
  }

  process(record: StreamRecord<unknown, unknown>): void {
    this.received++
    const ts = record.timestamp
    if (!Number.isSafeInteger(ts) || ts < 0) {
      throw new PunctualError('INVALID_TIMESTAMP', `sink "${this.name}": cannot write a record with timestamp ${ts} to topic "${this.topic}"`)
    }
    const topic = this.topic
    try {
      // Before the collector: one that keeps typed values would otherwise hold what it cannot serialize.
      checkWritable(this.keySerde, 'key', record.key, record.key, 'topic', topic)
      checkWritable(this.valueSerde, 'value', record.value, record.key, 'topic', topic)
      const partition =
        this.partitioner === undefined
          ? undefined
          : this.partitioner(topic, record.key, record.value, this.collector.partitionsFor(topic))
      this.collector.send(topic, partition, record.key, this.keySerde, record.value, this.valueSerde, ts, record.headers)
      this.metrics.emittedRecords++
    } catch (err) {
      throw markFailedNode(err, this.name)
    }
  }
}
