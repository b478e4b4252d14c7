import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { freshStateDir } from '../helpers/durable.js'
import { EmbeddedRuntime, Serdes, silentLogger, StreamsBuilder, TimeWindows } from '../../src/index.js'
import type { Topology } from '../../src/index.js'
import { runJoin } from '../helpers/join-driver.js'
import type { SideInput } from '../helpers/join-driver.js'

type JoinType = 'inner' | 'left'
/** `orders` values are `customer:item` (no colon, or nothing before it: no customer); `customers` are keyed by customer. */
type Input = SideInput<'orders' | 'customers'>

const str = { keySerde: Serdes.String(), valueSerde: Serdes.String() }
const joined = (order: string | null, customer: string | null): string => `${order}+${customer}`
const customerOf = (order: string): string | null => {
  const at = order.indexOf(':')
  return at <= 0 ? null : order.slice(0, at)
}

function topology(type: JoinType, out: (line: string) => void, name?: string): Topology {
  const b = new StreamsBuilder()
  const orders = b.table<string, string>('orders', str)
  const customers = b.table<string, string>('customers', str)
  const options = name === undefined ? undefined : { name }
  const result = type === 'inner' ? orders.join(customers, customerOf, joined, options) : orders.leftJoin(customers, customerOf, joined, options)
  result.toStream().process(() => ({ process: (r) => out(`${r.key}:${r.value}@${r.timestamp}`) }))
  return b.build()
}

function run(type: JoinType, inputs: readonly Input[]): string[] {
  return runJoin((out) => topology(type, out), inputs)
}

/**
 * The foreign-key join of KIP-213 as Kafka Streams emits it, from the tables' contents alone (no topics,
 * no hashes): an order update answers with its customer's current value at the later of the two
 * timestamps; an inner join says nothing for an order that had no customer and still finds none, and a
 * tombstone when its customer changes to one it cannot find, goes away, or the order is deleted; a left
 * join answers every update, joined with null when there is no customer. A customer update answers each
 * order that names it, in order key order, at the customer update's own timestamp.
 */
function model(type: JoinType, inputs: readonly Input[]): string[] {
  const orders = new Map<string, string>()
  const customers = new Map<string, { v: string; ts: number }>()
  const out: string[] = []
  const emit = (key: string, value: string | null, ts: number): void => {
    out.push(`${key}:${value}@${ts}`)
  }
  for (const r of inputs) {
    if (r.side === 'customers') {
      if (r.value === null) customers.delete(r.key)
      else customers.set(r.key, { v: r.value, ts: r.ts })
      const subscribers = [...orders].filter(([, v]) => customerOf(v) === r.key).map(([k]) => k)
      for (const k of subscribers.sort()) {
        emit(k, r.value !== null || type === 'left' ? joined(orders.get(k) as string, r.value) : null, r.ts)
      }
      continue
    }
    const old = orders.get(r.key) ?? null
    if (r.value === null) orders.delete(r.key)
    else orders.set(r.key, r.value)
    const oldFk = old === null ? null : customerOf(old)
    const newFk = r.value === null ? null : customerOf(r.value)
    const at = (fk: string | null): number => Math.max(r.ts, (fk === null ? undefined : customers.get(fk))?.ts ?? r.ts)
    const customer = newFk === null ? undefined : customers.get(newFk)
    if (type === 'left') {
      if (old === null && r.value === null) continue
      emit(r.key, r.value === null && customer === undefined ? null : joined(r.value, customer?.v ?? null), at(newFk))
      continue
    }
    if (r.value === null || newFk === null) {
      if (oldFk !== null) emit(r.key, null, at(oldFk))
    } else if (oldFk !== null && oldFk !== newFk) {
      emit(r.key, customer === undefined ? null : joined(r.value, customer.v), at(newFk))
    } else if (customer !== undefined) {
      emit(r.key, joined(r.value, customer.v), at(newFk))
    }
  }
  return out
}

const inputsArb = fc.array(
  fc.oneof(
    fc.record({
      side: fc.constant<'orders'>('orders'),
      key: fc.constantFrom('o1', 'o2', 'o3'),
      value: fc.option(
        fc.tuple(fc.constantFrom('A', 'B', 'C', ''), fc.constantFrom('x', 'y')).map(([c, item]) => (c === '' && item === 'y' ? item : `${c}:${item}`)),
        { nil: null, freq: 4 },
      ),
      ts: fc.integer({ min: 0, max: 60 }),
    }),
    fc.record({
      side: fc.constant<'customers'>('customers'),
      key: fc.constantFrom('A', 'B', 'C'),
      value: fc.option(fc.constantFrom('ann', 'bob'), { nil: null, freq: 4 }),
      ts: fc.integer({ min: 0, max: 60 }),
    }),
  ),
  { maxLength: 50 },
)

describe('foreign-key table-table joins (KIP-213)', () => {
  const inputs: Input[] = [
    { side: 'orders', key: 'o1', value: 'A:x', ts: 5 },
    { side: 'customers', key: 'A', value: 'ann', ts: 3 },
    { side: 'orders', key: 'o2', value: 'A:y', ts: 7 },
    { side: 'customers', key: 'A', value: 'amy', ts: 9 },
    { side: 'orders', key: 'o1', value: 'B:x', ts: 4 },
    { side: 'customers', key: 'B', value: 'bob', ts: 2 },
    { side: 'orders', key: 'o2', value: 'y', ts: 10 },
    { side: 'customers', key: 'A', value: null, ts: 11 },
    { side: 'orders', key: 'o1', value: null, ts: 12 },
  ]

  it('an inner join follows both tables, answers a customer update for every order naming it, and retracts what no longer joins', () => {
    assert.deepEqual(run('inner', inputs), [
      'o1:A:x+ann@3',
      'o2:A:y+ann@7',
      'o1:A:x+amy@9',
      'o2:A:y+amy@9',
      // o1 moves to customer B, not there yet: its result is retracted.
      'o1:null@4',
      'o1:B:x+bob@2',
      // o2 names no customer any more.
      'o2:null@10',
      'o1:null@12',
    ])
  })

  it('a left join keeps every order, joined with null while its customer is missing', () => {
    assert.deepEqual(run('left', inputs), [
      'o1:A:x+null@5',
      'o1:A:x+ann@3',
      'o2:A:y+ann@7',
      'o1:A:x+amy@9',
      'o2:A:y+amy@9',
      'o1:B:x+null@4',
      'o1:B:x+bob@2',
      'o2:y+null@10',
      'o1:null@12',
    ])
  })

  it('matches the model for random updates and deletions of both tables', () => {
    fc.assert(
      fc.property(fc.constantFrom<JoinType>('inner', 'left'), inputsArb, (type, records) => {
        assert.deepEqual(run(type, records), model(type, records))
      }),
      { numRuns: 400 },
    )
  })

  it('names its nodes, store and topics as Kafka Streams does: after TableJoined.name, or numbered as it numbers them', () => {
    const description = topology('inner', () => {}, 'by-customer').describe().toString()
    for (const part of [
      'by-customer-subscription-registration-processor',
      'by-customer-subscription-registration-sink (topic: by-customer-subscription-registration-topic)',
      'by-customer-subscription-receive (stores: [by-customer-subscription-store])',
      'by-customer-subscription-join-foreign',
      'by-customer-foreign-join-subscription',
      'by-customer-subscription-response-source (topics: [by-customer-subscription-response-topic])',
      'by-customer-subscription-response-resolver',
      'by-customer-result',
    ]) {
      assert.ok(description.includes(part), `${part} in:\n${description}`)
    }
    // Without a name, the numbers of Kafka Streams 4.4's describe() of the same topology, tables' stores included.
    const numbered = topology('inner', () => {}).describe().toString()
    for (const part of [
      'KTABLE-SOURCE-0000000002 (stores: [orders-STATE-STORE-0000000000])',
      'KTABLE-SINK-0000000008 (topic: KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic)',
      'KTABLE-SOURCE-0000000009 (topics: [KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic])',
      'KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000011 (stores: [KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010])',
      'KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000012 (stores: [customers-STATE-STORE-0000000003])',
      'KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000013 (stores: [KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010])',
      'KTABLE-SINK-0000000015 (topic: KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic)',
      'KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-0000000017 (stores: [orders-STATE-STORE-0000000000])',
      'KTABLE-FK-JOIN-OUTPUT-0000000018',
      'KTABLE-TOSTREAM-0000000020',
    ]) {
      assert.ok(numbered.includes(part), `${part} in:\n${numbered}`)
    }
  })

  it('refuses a joiner that is not a function, an empty name and a windowed table, naming the operation', () => {
    const b = new StreamsBuilder()
    const orders = b.table<string, string>('orders', str)
    const customers = b.table<string, string>('customers', str)
    assert.throws(() => orders.join(customers, customerOf, 'joiner' as unknown as typeof joined), /join: the joiner must be a function, got string/)
    assert.throws(() => orders.leftJoin(customers, customerOf, joined, { name: '' }), /leftJoin: tableJoined.name must be a non-empty string/)
    const windowed = b.stream<string, string>('w', str).groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(10)).count({ name: 'per-window' })
    assert.throws(() => orders.join(windowed as never, customerOf, joined), /join: windowed table "per-window" cannot be read by key/)
  })

  it('on partitioned topics that are not co-partitioned, each order ends with the join of its current customer', async () => {
    const out: string[] = []
    const rt = new EmbeddedRuntime(topology('inner', (l) => out.push(l)), { applicationId: 'fk', topics: { orders: { partitions: 4 }, customers: { partitions: 3 } }, logger: silentLogger })
    await rt.start()
    const orders = rt.producer<string, string | null>('orders')
    const customers = rt.producer<string, string | null>('customers')
    const expected = new Map<string, string | null>()
    const customerNames = new Map<string, string>()
    for (let c = 0; c < 20; c++) {
      customers.send(`c${c}`, `name${c}`, c)
      customerNames.set(`c${c}`, `name${c}`)
    }
    await rt.idle()
    for (let i = 0; i < 400; i++) {
      const key = `o${i % 60}`
      const customer = `c${(i * 7) % 23}`
      orders.send(key, `${customer}:item${i}`, 100 + i)
      const name = customerNames.get(customer)
      expected.set(key, name === undefined ? null : `${customer}:item${i}+${name}`)
    }
    await rt.idle()
    customers.send('c3', 'renamed', 1000)
    customerNames.set('c3', 'renamed')
    for (const [k, v] of expected) if (v !== null && v.startsWith('c3:')) expected.set(k, `${v.slice(0, v.indexOf('+'))}+renamed`)
    await rt.idle()
    await rt.stop()
    const last = new Map<string, string | null>()
    for (const line of out) {
      const colon = line.indexOf(':')
      const value = line.slice(colon + 1, line.lastIndexOf('@'))
      last.set(line.slice(0, colon), value === 'null' ? null : value)
    }
    for (const [k, v] of expected) assert.equal(last.get(k) ?? null, v, `order ${k}`)
  })

  it('restarts exactly: three durable runs with commits every 7 records give the output of one run fed the same thirds', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom<JoinType>('inner', 'left'), inputsArb, async (type, records) => {
        const feed = async (rt: EmbeddedRuntime, part: readonly Input[]): Promise<void> => {
          for (const r of part) {
            rt.producer<string, string | null>(r.side).send(r.key, r.value, r.ts)
            await rt.idle()
          }
        }
        const thirds = [records.slice(0, records.length / 3), records.slice(records.length / 3, (2 * records.length) / 3), records.slice((2 * records.length) / 3)]
        const once: string[] = []
        const whole = new EmbeddedRuntime(topology(type, (l) => once.push(l)), { applicationId: 'fk-once', logger: silentLogger })
        await whole.start()
        for (const part of thirds) await feed(whole, part)
        await whole.stop()
        const resumed: string[] = []
        const dir = freshStateDir()
        for (const part of thirds) {
          const rt = new EmbeddedRuntime(topology(type, (l) => resumed.push(l)), { applicationId: 'fk-resumed', stateDir: dir, commitMaxRecords: 7, logger: silentLogger })
          await rt.start()
          await feed(rt, part)
          await rt.stop()
        }
        assert.deepEqual(resumed, once)
        assert.deepEqual(once, model(type, records))
      }),
      { numRuns: 25 },
    )
  })
})
