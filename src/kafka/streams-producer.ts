import { PunctualError } from '../errors.js'
import type { Logger } from '../util/logger.js'
import { abortOnTimeout, CALL_TIMEOUT_MS, disconnected, persistently, promised, retried, TIMED_OUT } from './client-calls.js'
import { ClientLog } from './client-logs.js'
import { producerSettings } from './client-settings.js'
import type { ClientError, GroupConsumer, KafkaClientSupplier, ProducerClient } from './client-supplier.js'
import type { ValidKafkaRuntimeConfig } from './config.js'
import type { PartitionOffset } from './kafka-commit-backend.js'
import { ProducerSink } from './producer-sink.js'

/** librdkafka's delivery errors of a record not written in time, and of one purged by an abort. */
const MESSAGE_TIMED_OUT = -192
const PURGED = -152
/** How long an abort of a failed transaction may take before the producer is replaced instead. */
const ABORT_TIMEOUT_MS = 10_000
/** How long closing waits for the producer to disconnect. */
const DISCONNECT_WAIT_MS = 10_000

/** librdkafka's "fenced by a newer instance", and the broker's PRODUCER_FENCED and INVALID_PRODUCER_EPOCH. */
const FENCED_CODES = new Set([-144, 90, 47])

/** Whether `err` (or its cause) says another producer took the transactional id. */
export function isProducerFenced(err: unknown): boolean {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, depth = 0; e !== undefined && e !== null && depth < 4; e = e.cause as typeof e, depth++) {
    if (typeof e.code === 'number' && FENCED_CODES.has(e.code)) return true
  }
  return false
}

/** What the producer reports to the runtime. */
export interface ProducerEvents {
  /** Under exactly-once, the open transaction cannot commit (a fenced or failed producer): abort it and go back to the last commit. */
  transactionFailed(err: Error): void
  /** Anything else that stops the runtime (a record the broker refuses, a fatal error at least once). */
  failed(err: Error): void
}

/**
 * The one owner of the instance's producer (Kafka Streams' `StreamsProducer`): under exactly-once it
 * begins, commits and aborts the transactions (one open at a time, from the producer's initialization
 * to its close), and replaces a producer that cannot abort (fenced, or its coordinator lost); at least
 * once it flushes. Tasks write through its `sink`, which holds records while no transaction is open.
 * A replacement keeps the transactional id, so its initialization fences the old producer and ends
 * whatever transaction the id left open.
 */
export class StreamsProducer {
  readonly sink: ProducerSink
  private client: ProducerClient | undefined
  /** Closed: a replacement under way makes no new producer (nothing would close it, and it would keep the process alive). */
  private closed = false
  /** A record of the open transaction was not delivered (told once per transaction). */
  private undelivered = false
  /**
   * An offsets or commit request of this producer's transaction timed out: it may still reach the
   * broker later. See `abortOrReplace`.
   */
  private uncertain: string | undefined
  private readonly exactlyOnce: boolean

  constructor(
    private readonly supplier: KafkaClientSupplier,
    private readonly config: ValidKafkaRuntimeConfig,
    /** One per instance; a producer that replaces a fenced one takes it over. */
    private readonly transactionalId: string,
    private readonly logger: Logger,
    private readonly events: ProducerEvents,
    /**
     * Whether a fenced producer is replaced (its id is the instance's: another producer of it is this
     * instance's older self). A task's producer is not: another producer of its id is the task's new
     * owner, which a replacement would fence in turn (`abortOrReplace` rejects instead).
     */
    private readonly replaceFenced = true,
  ) {
    this.exactlyOnce = config.processingGuarantee === 'exactly_once_v2'
    this.sink = new ProducerSink({
      produce: () => {
        throw new PunctualError('ILLEGAL_STATE', 'the producer is not connected')
      },
    })
  }

  /**
   * Connects a producer (and under exactly-once initializes its transactions, then opens the first). A
   * replacement made while the cluster is away keeps trying for UNREACHABLE_TIMEOUT_MS.
   */
  async connect(replacing = false): Promise<void> {
    const client = this.supplier.getProducer(producerSettings(this.config, this.transactionalId))
    this.client = client
    this.sink.use(client)
    this.watch(client)
    client.setPollInterval(50)
    const step = (what: string, call: () => Promise<void>): Promise<void> => (replacing ? persistently(what, this.config.bootstrapServers, call) : call())
    await step('connecting a new producer', () => promised('connecting the producer', (cb) => client.connect({}, cb), CALL_TIMEOUT_MS))
    if (!this.exactlyOnce) return
    await step('initializing a new producer\'s transactions', () => promised("initializing the producer's transactions", (cb) => client.initTransactions(CALL_TIMEOUT_MS, cb), CALL_TIMEOUT_MS))
    await this.beginTransaction()
  }

  /** Opens the next transaction (a local step of the client) and releases what the sink held meanwhile. */
  async beginTransaction(): Promise<void> {
    const client = this.current()
    await promised('beginning a transaction', (cb) => client.beginTransaction(cb))
    this.undelivered = false
    this.sink.release()
  }

  /** Exactly-once: adds consumed offsets, with the group consumer's metadata (KIP-447), to the open transaction. */
  sendOffsetsToTransaction(offsets: PartitionOffset[], consumer: GroupConsumer): Promise<void> {
    return this.noting('adding offsets', retried(() => promised('adding offsets to the transaction', (cb) => this.current().sendOffsetsToTransaction(offsets, consumer, CALL_TIMEOUT_MS, cb), CALL_TIMEOUT_MS), abortOnTimeout))
  }

  commitTransaction(): Promise<void> {
    return this.noting('committing', retried(() => promised('committing the transaction', (cb) => this.current().commitTransaction(CALL_TIMEOUT_MS, cb), CALL_TIMEOUT_MS), abortOnTimeout))
  }

  /** A transaction step whose timeout leaves its request perhaps still on its way: noted for `abortOrReplace`. */
  private async noting(step: string, call: Promise<void>): Promise<void> {
    try {
      await call
    } catch (err) {
      if ((err as { code?: number }).code === TIMED_OUT) this.uncertain ??= `${step} timed out`
      throw err
    }
  }

  /**
   * At least once: waits until every record produced so far is acknowledged. The producer retries a
   * record until its `message.timeout.ms` (a record it gives up on stops the runtime through its
   * delivery report), so a flush that times out while the cluster is away is made again meanwhile.
   */
  flush(): Promise<void> {
    const client = this.current()
    return persistently('flushing the producer', this.config.bootstrapServers, () => promised('flushing the producer', (cb) => client.flush(CALL_TIMEOUT_MS, cb), CALL_TIMEOUT_MS), (err) => (err as { code?: number }).code === TIMED_OUT && client === this.client)
  }

  /**
   * Exactly-once: ends the open transaction without committing it and opens the next, dropping what the
   * sink held. A producer that cannot abort (fenced: the coordinator aborted the transaction when it
   * timed out, or another producer took the transactional id; or no answer from its coordinator) is
   * replaced by a new one, whose initialization aborts whatever its id left open.
   *
   * A transaction one of whose offsets or commit requests timed out is aborted, then the producer is
   * replaced all the same: the request may still reach the broker, and it would land in the next
   * transaction of the same producer epoch (an offsets request would hold the group's offsets as a
   * hanging transaction, or commit stale ones with the next commit). librdkafka does not implement
   * KIP-890, which bumps the epoch at every transaction; a new producer's initialization bumps it, so
   * the broker fences what the old one sent late. (A record that timed out needs no replacement:
   * librdkafka bumps the epoch itself when it aborts such a transaction, KIP-360.)
   */
  async abortOrReplace(): Promise<void> {
    this.sink.discard()
    const old = this.current()
    try {
      await retried(() => promised('aborting the transaction', (cb) => old.abortTransaction(ABORT_TIMEOUT_MS, cb), ABORT_TIMEOUT_MS), abortOnTimeout)
      if (this.uncertain === undefined) {
        await this.beginTransaction()
        return
      }
      this.logger.warn({}, `the transaction is aborted, but a request of it may still reach the broker (${this.uncertain}): replacing the producer`)
    } catch (err) {
      if (!this.replaceFenced && isProducerFenced(err)) throw err
      // Fenced, no answer in time, or a cluster away: a new producer's initialization ends what its id left open.
      const e = err as { isFatal?: boolean; code?: number; message?: string }
      this.logger.warn({ code: e.code }, `the producer ${e.isFatal === true ? 'was fenced' : `could not abort its transaction (${e.message ?? String(err)})`}: replacing it`)
    }
    this.client = undefined
    this.uncertain = undefined
    await disconnected(old, DISCONNECT_WAIT_MS)
    if (this.closed) throw new PunctualError('ILLEGAL_STATE', 'the producer was closed while it was being replaced')
    await this.connect(true)
  }

  /**
   * At a stop whose last transaction failed: aborts it if the producer can, so that read-committed
   * readers need not wait out its timeout; a producer that cannot leaves it to that timeout, or to the
   * next producer of its id.
   */
  async abortAtStop(): Promise<void> {
    this.sink.discard()
    const client = this.current()
    try {
      await promised('aborting the transaction', (cb) => client.abortTransaction(ABORT_TIMEOUT_MS, cb), ABORT_TIMEOUT_MS)
    } catch (err) {
      this.logger.warn({ code: (err as { code?: number }).code }, `the last transaction could not be aborted (${(err as Error).message}); it ends at its timeout`)
    }
  }

  /** Disconnects the producer (an open transaction is left to its timeout, or to the next producer of the id). */
  async close(): Promise<void> {
    this.closed = true
    const client = this.client
    this.client = undefined
    if (client !== undefined && !(await disconnected(client, DISCONNECT_WAIT_MS))) this.logger.warn({}, 'the producer did not disconnect in time')
  }

  private current(): ProducerClient {
    if (this.client === undefined) throw new PunctualError('ILLEGAL_STATE', 'the producer is closed')
    return this.client
  }

  /**
   * The producer's reports: librdkafka's lines on the logger; a fatal error (a fenced transactional
   * producer) fails the transaction under exactly-once and stops the runtime at least once; a record not
   * delivered in time fails its transaction; a record the broker refuses (a timestamp out of its range,
   * too large) would be refused again: that stops the runtime.
   */
  private watch(client: ProducerClient): void {
    const log = new ClientLog(this.logger, 'producer')
    client.on('event.log', (line) => log.line(line))
    client.on('event.error', (err: ClientError) => {
      if (client !== this.client) return
      if (err.isFatal !== true) return log.error(err)
      const error = new PunctualError('ILLEGAL_STATE', `the Kafka producer ${this.transactionalId} failed: ${err.message}`, { cause: err })
      if (this.exactlyOnce) this.events.transactionFailed(Object.assign(error, { isFatal: true }))
      else this.events.failed(error)
    })
    client.on('delivery-report', (err, report) => {
      if (!err || client !== this.client) return
      const where = report?.topic === undefined ? '' : ` to ${report.topic}-${report.partition ?? '?'}`
      if (this.exactlyOnce && (err.code === MESSAGE_TIMED_OUT || err.code === PURGED)) {
        if (!this.undelivered && err.code === MESSAGE_TIMED_OUT) this.logger.warn({ code: err.code }, `a record could not be written${where}: ${err.message}; its transaction will be aborted`)
        this.undelivered = true
      } else {
        // At least once, a record the producer gave up on stops the instance: its input is processed again
        // from the last commit by the partitions' next owner. A timeout says where the record went.
        const why = err.code === MESSAGE_TIMED_OUT ? ` (the Kafka cluster at ${this.config.bootstrapServers} did not take it within the producer's message.timeout.ms)` : ''
        this.events.failed(new PunctualError('ILLEGAL_STATE', `a record could not be written${where}: ${err.message}${why}`, { cause: err }))
      }
    })
  }
}
