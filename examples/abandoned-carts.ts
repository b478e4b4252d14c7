// The README's keyed-timers example, compiled and tested (test/examples.test.ts).
import { StateDescriptors, Topology } from '../src/index.js'
import type { KeyedProcessor, KeyedProcessorContext, ExpiredEntry, StreamRecord, Timer, ValueState } from '../src/index.js'

const HOUR = 3_600_000
const lastOrder = StateDescriptors.value<number>('last-order', {
  ttl: { ttlMs: 24 * HOUR, timeDomain: 'event', update: 'onCreateAndWrite', visibility: 'neverReturnExpired' },
})

export class AbandonedCarts implements KeyedProcessor<string, string, string, string> {
  private ctx!: KeyedProcessorContext<string, string, string>
  private last!: ValueState<number>

  init(ctx: KeyedProcessorContext<string, string, string>): void {
    this.ctx = ctx
    this.last = ctx.getState(lastOrder)
  }

  process(record: StreamRecord<string, string>): void {
    const previous = this.last.value()
    if (previous !== undefined) this.ctx.timers.deleteEventTimeTimer(previous + HOUR)
    this.last.update(record.timestamp)
    this.ctx.timers.registerEventTimeTimer(record.timestamp + HOUR) // one pending timer per customer
  }

  onTimer(timer: Timer<string>): void {
    // The current key is timer.key; state reads and timers refer to it.
    this.ctx.forward({ key: timer.key, value: 'cart abandoned', timestamp: timer.timestamp, headers: [] })
  }

  onExpire(entry: ExpiredEntry<string>): void {
    // TTL cleanup removed the customer's state (a day without orders, in event time).
    this.ctx.forward({ key: entry.key, value: 'forgotten', timestamp: entry.expiredAt, headers: [] })
  }
}

export const cartsTopology = (): Topology =>
  new Topology().addSource('orders', 'orders').addKeyedProcessor('carts', () => new AbandonedCarts(), 'orders').addSink('out', 'cart-alerts', {}, 'carts')
