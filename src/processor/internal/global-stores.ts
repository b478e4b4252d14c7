import { PunctualError } from '../../errors.js'
import type { Cancellable, Processor, ProcessorContext, RecordMetadata, StateStore, StreamRecord, TaskId } from '../api.js'
import { readKey, readValue } from '../record-io.js'
import type { InputPartition, MutableLogRecord } from '../record-io.js'
import type { GlobalStoreDef } from '../topology.js'

/** The task id global processors see: they belong to no task. */
const GLOBAL_TASK: TaskId = { subtopology: -1, partition: -1, toString: () => 'global' }

/** One global store, its processor and where it has read each partition of its topic to. */
interface GlobalPart {
  readonly def: GlobalStoreDef
  readonly store: StateStore
  readonly processor: Processor<unknown, unknown, never, never>
  readonly context: GlobalContext
  readonly inputs: readonly InputPartition[]
  readonly positions: number[]
}

/**
 * The global stores of an application instance (Kafka Streams' global state): each built once, and
 * kept up to date by its processor from every partition of its topic, in offset order per partition.
 * A runtime calls `update()` before its tasks process, so a task reads what its global topics held
 * then; at start the stores read their topics from the beginning (they are their own changelog).
 * Records that cannot be read (a bad timestamp, a key or value that does not deserialize) are skipped
 * and reported to `onBadRecord`.
 */
export class GlobalStores {
  private readonly parts: GlobalPart[] = []
  private readonly byName = new Map<string, StateStore>()
  private readonly raw: MutableLogRecord = { key: null, keySerde: undefined, value: null, valueSerde: undefined, timestamp: 0, headers: [] }

  constructor(
    defs: readonly GlobalStoreDef[],
    inputs: (topic: string) => readonly InputPartition[],
    now: () => number,
    private readonly onBadRecord: (topic: string, partition: number, offset: number, error: unknown) => void,
  ) {
    for (const def of defs) {
      const store = def.builder.build()
      const processor = def.supplier()
      const context = new GlobalContext(def, store, now)
      const partitions = inputs(def.topic)
      this.parts.push({ def, store, processor, context, inputs: partitions, positions: partitions.map((p) => p.startOffset()) })
      this.byName.set(def.builder.name, store)
      processor.init?.(context)
    }
  }

  /** The global store of that name, or undefined. */
  get(name: string): StateStore | undefined {
    return this.byName.get(name)
  }

  get size(): number {
    return this.parts.length
  }

  /** Applies every record its topics hold beyond what was read; returns how many it read. */
  update(): number {
    let n = 0
    const raw = this.raw
    for (const part of this.parts) {
      const { def, inputs, positions, processor, context } = part
      for (let p = 0; p < inputs.length; p++) {
        const input = inputs[p] as InputPartition
        const end = input.endOffset()
        while ((positions[p] as number) < end) {
          const offset = positions[p] as number
          positions[p] = offset + 1
          if (!input.read(offset, raw)) continue
          n++
          let record: StreamRecord<unknown, unknown>
          try {
            if (!Number.isSafeInteger(raw.timestamp) || raw.timestamp < 0) throw new RangeError(`invalid timestamp ${raw.timestamp}`)
            record = { key: readKey(raw, def.keySerde, def.topic), value: readValue(raw, def.valueSerde, def.topic), timestamp: raw.timestamp, headers: raw.headers }
          } catch (err) {
            this.onBadRecord(def.topic, p, offset, err)
            continue
          }
          context.at = { topic: def.topic, partition: p, offset }
          processor.process(record)
        }
      }
    }
    return n
  }

  /** Calls `each` with every partition of the global topics and the offset of its next record to read. */
  forEachPosition(each: (input: InputPartition, offset: number) => void): void {
    for (const part of this.parts) part.inputs.forEach((input, p) => each(input, part.positions[p] as number))
  }

  /** Whether some global topic holds records not read yet. */
  behind(): boolean {
    return this.parts.some((part) => part.inputs.some((input, p) => (part.positions[p] as number) < input.endOffset()))
  }

  close(): void {
    for (const part of this.parts) {
      part.processor.close?.()
      part.store.close()
    }
  }
}

/** What a global store's processor may do: read and write its store; nothing else a task offers. */
class GlobalContext implements ProcessorContext<never, never> {
  readonly taskId = GLOBAL_TASK
  at: RecordMetadata | undefined

  constructor(
    private readonly def: GlobalStoreDef,
    private readonly store: StateStore,
    private readonly now: () => number,
  ) {}

  get processorName(): string {
    return this.def.processorName
  }

  forward(): void {
    throw new PunctualError('ILLEGAL_STATE', `global store processor "${this.def.processorName}" cannot forward records: it only keeps its store up to date`)
  }

  schedule(): Cancellable {
    throw new PunctualError('ILLEGAL_STATE', `global store processor "${this.def.processorName}" cannot schedule punctuations`)
  }

  currentStreamTimeMs(): number | undefined {
    return undefined
  }

  currentSystemTimeMs(): number {
    return this.now()
  }

  recordMetadata(): RecordMetadata | undefined {
    return this.at
  }

  getStateStore<S extends StateStore>(name: string): S {
    if (name !== this.def.builder.name) throw new PunctualError('INVALID_TOPOLOGY', `global store processor "${this.def.processorName}" has only its store "${this.def.builder.name}", not "${name}"`)
    return this.store as S
  }

  droppedRecord(): void {}

  stateDir(): string {
    throw new PunctualError('ILLEGAL_STATE', `global store processor "${this.def.processorName}" has no state directory of its own`)
  }
}
