// A keyed processor with an event-time timer per customer (an hour after the last order) and state
// that expires a day after it was written (event-time TTL).
// Run it: npx tsx examples/abandoned-carts.ts (on the embedded runtime, in memory).
import { pathToFileURL } from 'node:url'
import { EmbeddedRuntime, StateDescriptors, Topology } from 'punctual'
import type { KeyedProcessor, KeyedProcessorContext, ExpiredEntry, StreamRecord, Timer, ValueState } from 'punctual'

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

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const runtime = new EmbeddedRuntime(cartsTopology(), { applicationId: 'abandoned-carts' })
  runtime.subscribe<string, string>('cart-alerts', (r) => console.log(`${r.timestamp / 60_000} min\t${r.key}\t${r.value}`))
  await runtime.start()
  const orders = runtime.producer<string, string>('orders')
  orders.send('ann', 'order', 0)
  orders.send('ann', 'order', 30 * 60_000) // moves ann's timer to 1:30
  orders.send('bob', 'order', HOUR)
  orders.send('bob', 'order', 90 * 60_000) // stream time 1:30: ann's cart is abandoned
  orders.send('cid', 'order', 26 * HOUR) // bob's cart too, and both are forgotten
  await runtime.stop() // processes what was sent, then closes
}
