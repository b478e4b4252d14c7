// A serde of your own and event time from the payload: orders arrive as "id;customer;cents;placedAtMs"
// text, are read into objects by a custom serde (a line it cannot read is bad input: the error handler
// logs it and skips it), take their event time from `placedAtMs`, and are summed per customer in
// hourly windows, final results only.
import { BufferConfig, Consumed, Serdes, StreamsBuilder, Suppressed, TimeWindows, UsePartitionTimeOnInvalidTimestamp } from 'punctual'
import type { Serde, Windowed } from 'punctual'

export interface Order {
  readonly id: string
  readonly customer: string
  readonly cents: number
  readonly placedAtMs: number
}

/**
 * Orders as text lines. `serialize` takes the value first (and the topic second, unused here), so a
 * one-parameter function is the value's serializer; `deserialize` likewise takes the bytes first.
 */
export const orderSerde: Serde<Order> = {
  name: 'OrderLine',
  serialize: (order) => (order === null ? null : Buffer.from(`${order.id};${order.customer};${order.cents};${order.placedAtMs}`, 'utf8')),
  deserialize(bytes, topic) {
    if (bytes === null) return null
    const [id, customer, cents, placedAtMs] = Buffer.from(bytes).toString('utf8').split(';')
    if (id === undefined || customer === undefined || !/^\d+$/.test(cents ?? '') || placedAtMs === undefined) {
      throw new Error(`not an order line on ${topic}: ${JSON.stringify(Buffer.from(bytes).toString('utf8'))}`)
    }
    return { id, customer, cents: Number(cents), placedAtMs: Number(placedAtMs) }
  },
}

const HOUR = 3_600_000

export function orderTotals() {
  const builder = new StreamsBuilder()
  builder
    .stream(
      'orders',
      // An order without a valid placedAtMs (say, "later") takes the largest time read so far.
      Consumed.with(Serdes.String(), orderSerde).withTimestampExtractor(new UsePartitionTimeOnInvalidTimestamp<string, Order>((r) => r.value.placedAtMs)),
    )
    .selectKey((_id, order) => order.customer)
    .groupByKey({ keySerde: Serdes.String(), valueSerde: orderSerde })
    .windowedBy(TimeWindows.ofSizeWithNoGrace(HOUR))
    .aggregate(() => 0, (_customer, order, cents) => cents + order.cents, { name: 'hourly-totals', valueSerde: Serdes.Long() })
    .suppress(Suppressed.untilWindowCloses<Windowed<string>, number>(BufferConfig.unbounded()))
    .toStream()
    .map((w: Windowed<string>, cents: number | null) => ({ key: `${w.key} ${new Date(w.window.start).toISOString().slice(11, 16)}`, value: cents }))
    .to('hourly-totals', { keySerde: Serdes.String(), valueSerde: Serdes.Long() })
  return builder.build()
}
