import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Named, PunctualError, Serdes, StreamsBuilder } from '../../src/index.js'
import type { GlobalKTable, KStream, KTable } from '../../src/index.js'

const str = { keySerde: Serdes.String(), valueSerde: Serdes.String() }

/** The names of a topology's nodes, as its description shows them. */
function nodes(b: StreamsBuilder): string[] {
  return [...b.build().describe().matchAll(/(?:Source|Processor|Sink): (\S+)/g)].map((m) => m[1] ?? '')
}

/** Asserts that `build` is refused with an INVALID_TOPOLOGY error whose message matches each pattern. */
function refused(build: () => unknown, ...patterns: RegExp[]): void {
  assert.throws(build, (e: unknown) => {
    assert.ok(e instanceof PunctualError, `a PunctualError, got ${String(e)}`)
    assert.equal(e.code, 'INVALID_TOPOLOGY')
    for (const p of patterns) assert.match(e.message, p)
    return true
  })
}

/** A value given the way a JavaScript caller (or a cast) could: the compiler does not see it. */
const untyped = <T>(value: unknown): T => value as T

describe("Named (Kafka Streams' Named): the one way to name an operation's node", () => {
  it('Named.as(name) is the plain object { name }, which is accepted as well', () => {
    assert.deepEqual(Named.as('valid-orders'), { name: 'valid-orders' })
    assert.equal(JSON.stringify(Named.as('x')), '{"name":"x"}')
    const b = new StreamsBuilder()
    b.stream<string, string>('in', str).filter(() => true, { name: 'plain' }).to('out', str)
    assert.ok(nodes(b).includes('plain'))
  })

  it('a name given with Named.as reaches the node of each operation, as the topology describes it', () => {
    const b = new StreamsBuilder()
    const orders: KStream<string, string> = b.stream<string, string>('orders', str)
    const other = b.stream<string, string>('more-orders', str)
    const regions: KTable<string, string> = b.table<string, string>('regions', str)
    const customers = b.table<string, string>('customers', str)
    const global: GlobalKTable<string, string> = b.globalTable<string, string>('countries', str)
    orders
      .filter((_k, v) => v !== '', Named.as('non-empty'))
      .filterNot((_k, v) => v === 'test', Named.as('no-tests'))
      .mapValues((v) => v.trim(), Named.as('trimmed'))
      .peek(() => {}, Named.as('seen'))
      .merge(other, Named.as('all-orders'))
      .flatMapValues((v) => [v], Named.as('each'))
      .join(global, (k) => k, (v, c) => `${v}@${c}`, Named.as('with-country'))
      .map((k, v) => ({ key: v, value: k }), Named.as('swapped'))
      .flatMap((k, v) => [{ key: k, value: v }], Named.as('spread'))
      .selectKey((_k, v) => v, Named.as('by-value'))
      .toTable(Named.as('latest'))
      .filter((_k, v) => v !== '', Named.as('table-non-empty'))
      .filterNot((_k, v) => v === 'x', Named.as('table-no-x'))
      .mapValues((v) => v.toUpperCase(), Named.as('upper'))
      .join(regions, (v, r) => `${v}/${r}`, Named.as('with-region'))
      .leftJoin(customers, (v, c) => `${v}/${c ?? '-'}`, Named.as('with-customer'))
      .outerJoin(regions, (v, r) => `${v ?? '-'}/${r ?? '-'}`, Named.as('either'))
      .toStream(Named.as('changes'))
      .process(() => ({ process() {} }), Named.as('custom'))
    const branches = orders
      .split(Named.as('route-'))
      .branch((_k, v) => v.startsWith('a'), Named.as('a'))
      .defaultBranch(Named.as('rest'))
    assert.deepEqual(Object.keys(branches).sort(), ['route-a', 'route-rest'])
    const names = nodes(b)
    const expected = ['non-empty', 'no-tests', 'trimmed', 'seen', 'all-orders', 'each', 'with-country', 'swapped', 'spread', 'by-value', 'latest']
    expected.push('table-non-empty', 'table-no-x', 'upper', 'with-region', 'with-region-join-this', 'with-region-join-other', 'with-customer', 'either', 'changes', 'custom', 'route-a', 'route-rest')
    for (const name of expected) assert.ok(names.includes(name), `a node named ${name} in ${JSON.stringify(names)}`)
  })

  it('a bare string where a Named belongs does not compile, and is refused at run time naming the operation and the string', () => {
    const b = new StreamsBuilder()
    const stream = b.stream<string, string>('in', str)
    const table = b.table<string, string>('tab', str)
    // @ts-expect-error a name is a Named, not a string
    refused(() => stream.filter(() => true, 'valid'), /^KStream\.filter: /, /Named\.as\("valid"\)/, /the string "valid"/)
    refused(() => stream.mapValues((v) => v, untyped('upper')), /^KStream\.mapValues: /, /"upper"/)
    refused(() => stream.merge(stream, untyped('both')), /^KStream\.merge: /, /"both"/)
    refused(() => stream.split(untyped('route-')), /^KStream\.split: /, /"route-"/)
    refused(() => stream.split().branch(() => true, untyped('a')), /^BranchedKStream\.branch: /, /"a"/)
    refused(() => stream.toTable(untyped('latest')), /^KStream\.toTable: /, /"latest"/)
    refused(() => table.toStream(untyped('changes')), /^KTable\.toStream: /, /"changes"/)
    refused(() => table.mapValues((v) => v, untyped('mapped')), /^KTable\.mapValues: /, /"mapped"/)
    // A third argument that is not an object makes a foreign-key join; its error tells how a table-table join is named.
    refused(() => table.join(table, (v, w) => v + w, untyped<Named>('pairs')), /^join: the joiner must be a function, got string "pairs"/, /Named\.as\("pairs"\)/)
    refused(() => table.outerJoin(table, (v, w) => `${v}${w}`, untyped('pairs')), /^KTable\.outerJoin: /, /"pairs"/)
  })

  it('a Named without a non-empty string name is refused, naming the operation', () => {
    const b = new StreamsBuilder()
    const stream = b.stream<string, string>('in', str)
    refused(() => stream.peek(() => {}, { name: '' }), /^KStream\.peek: /, /non-empty string, got ""/)
    refused(() => stream.peek(() => {}, untyped({ name: 7 })), /^KStream\.peek: /, /got 7/)
    refused(() => stream.selectKey((k) => k, untyped(42)), /^KStream\.selectKey: /, /must be a Named/, /got 42/)
    refused(() => Named.as(''), /^Named\.as: /)
  })

  it('a name given is the node’s name, and takes no generated number', () => {
    const named = new StreamsBuilder()
    named.stream<string, string>('in', str).mapValues((v) => v, Named.as('m')).to('out', str)
    const unnamed = new StreamsBuilder()
    unnamed.stream<string, string>('in', str).mapValues((v) => v).to('out', str)
    assert.deepEqual(nodes(named), ['KSTREAM-SOURCE-0000000000', 'm', 'KSTREAM-SINK-0000000001'])
    assert.deepEqual(nodes(unnamed), ['KSTREAM-SOURCE-0000000000', 'KSTREAM-MAPVALUES-0000000001', 'KSTREAM-SINK-0000000002'])
  })
})
