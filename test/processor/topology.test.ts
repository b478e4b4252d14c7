import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { PunctualError, Serdes, Stores, Topology } from '../../src/index.js'
import type { ProcessorContext } from '../../src/index.js'
import { TopologyTestDriver } from '../../src/testing/index.js'
import { countingTopology } from '../helpers/counting.js'

const noop = () => ({ process() {} })

describe('Topology validation names the node', () => {
  const cases: Array<[string, () => unknown, RegExp]> = [
    ['duplicate name', () => new Topology().addSource('s', 'a').addSource('s', 'b'), /a node named "s" is already in the topology/],
    ['unknown parent', () => new Topology().addSource('s', 'a').addProcessor('p', noop, 'nope'), /"p": parent "nope" is not in the topology/],
    ['no parent', () => new Topology().addProcessor('p', noop), /"p" needs at least one parent node/],
    ['topic read twice', () => new Topology().addSource('s1', 'a').addSource('s2', 'a'), /source "s2": topic "a" is already read by source "s1"/],
    ['sink as parent', () => new Topology().addSource('s', 'a').addSink('k', 'out', {}, 's').addProcessor('p', noop, 'k'), /parent "k" is a sink/],
    ['store on a source', () => new Topology().addSource('s', 'a').addStateStore(Stores.inMemoryKeyValueStore('st'), 's'), /"s" is not a processor/],
    ['empty topic list', () => new Topology().addSource('s', []), /source "s" needs at least one topic/],
  ]
  for (const [what, build, message] of cases) {
    it(`rejects ${what}`, () => {
      assert.throws(build, (err: unknown) => err instanceof PunctualError && err.code === 'INVALID_TOPOLOGY' && message.test(err.message))
    })
  }
})

describe('Topology structure', () => {
  it('splits unconnected parts into sub-topologies, joined by shared stores', () => {
    const t = new Topology()
      .addSource('s1', 'a')
      .addProcessor('p1', noop, 's1')
      .addSource('s2', 'b')
      .addProcessor('p2', noop, 's2')
      .addSource('s3', 'c')
      .addProcessor('p3', noop, 's3')
      .addStateStore(Stores.inMemoryKeyValueStore('shared'), 'p2', 'p3')
    const subs = t.subtopologies()
    assert.deepEqual(subs.map((s) => s.sourceTopics), [['a'], ['b', 'c']])
  })

  it('describe() prints the graph', () => {
    const t = new Topology()
      .addSource('src', ['in'])
      .addProcessor('upper', noop, 'src')
      .addSink('sink', 'out', {}, 'upper')
    assert.equal(
      t.describe(),
      [
        'Topologies:',
        '   Sub-topology: 0',
        '    Source: src (topics: [in])',
        '      --> upper',
        '    Processor: upper (stores: [])',
        '      --> sink',
        '      <-- src',
        '    Sink: sink (topic: out)',
        '      <-- upper',
        '      serdes: key String, value String',
        '',
      ].join('\n'),
    )
  })
})

describe('processors, forwarding and stores through the test driver', () => {
  it('forwards to all children, or to a named child', () => {
    const t = new Topology()
      .addSource('src', 'in')
      .addProcessor<string, string, string, string>(
        'route',
        () => {
          let ctx: ProcessorContext<string, string>
          return {
            init(c) {
              ctx = c
            },
            process(r) {
              if (r.value.startsWith('x')) ctx.forward(r, 'xs')
              else ctx.forward(r)
            },
          }
        },
        'src',
      )
      .addSink('xs', 'x-out', {}, 'route')
      .addSink('all', 'all-out', {}, 'route')
    const d = new TopologyTestDriver(t)
    const input = d.createInputTopic('in', Serdes.String(), Serdes.String())
    input.pipeInput('k', 'x1', 1)
    input.pipeInput('k', 'y1', 2)
    assert.deepEqual(d.createOutputTopic('x-out', Serdes.String(), Serdes.String()).readKeyValuesToList(), [
      { key: 'k', value: 'x1' },
      { key: 'k', value: 'y1' },
    ])
    assert.deepEqual(d.createOutputTopic('all-out', Serdes.String(), Serdes.String()).readKeyValuesToList(), [{ key: 'k', value: 'y1' }])
  })

  it('forward to an unknown child fails naming the processor and its children', () => {
    const t = new Topology().addSource('src', 'in').addProcessor<string, string, string, string>(
      'p',
      () => {
        let ctx: ProcessorContext<string, string>
        return {
          init(c) {
            ctx = c
          },
          process(r) {
            ctx.forward(r, 'missing')
          },
        }
      },
      'src',
    )
    const errors: string[] = []
    const d = new TopologyTestDriver(t, { errorHandler: (c) => (errors.push(c.message), 'continue') })
    d.createInputTopic('in', Serdes.String(), Serdes.String()).pipeInput('k', 'v', 1)
    assert.match(errors[0] ?? '', /processor "p" has no child named "missing"/)
  })

  it('a store is reachable only from the processors it is connected to', () => {
    const t = countingTopology('in').addProcessor('sneaky', () => ({ init: (c: ProcessorContext) => void c.getStateStore('counts'), process() {} }), 'src')
    assert.throws(() => new TopologyTestDriver(t), /processor "sneaky" is not connected to a state store named "counts"/)
  })

  it('store contents are visible to the test driver, in key order', () => {
    const d = new TopologyTestDriver(countingTopology('in'))
    const input = d.createInputTopic('in', Serdes.String(), Serdes.String())
    for (const k of ['b', 'a', 'b']) input.pipeInput(k, 'v', 1)
    assert.deepEqual([...d.getKeyValueStore<string, number>('counts')!.all()], [
      ['a', 1],
      ['b', 2],
    ])
  })
})

describe('Serdes', () => {
  it('round-trip every built-in serde, with null as a tombstone', () => {
    const cases: Array<[string, { serialize(v: never, t: string): Uint8Array | null; deserialize(b: Uint8Array | null, t: string): unknown }, unknown]> = [
      ['String', Serdes.String(), 'héllo'],
      ['JSON', Serdes.JSON(), { a: [1, 2], b: null }],
      ['Double', Serdes.Double(), -1.25],
      ['Integer', Serdes.Integer(), -123456],
      ['Long', Serdes.Long(), 2 ** 53 - 1],
      ['Bytes', Serdes.Bytes(), Uint8Array.from([1, 2, 3])],
    ]
    for (const [name, serde, value] of cases) {
      assert.deepEqual(serde.deserialize(serde.serialize(value as never, 't'), 't'), value, name)
      assert.equal(serde.deserialize(serde.serialize(null as never, 't'), 't'), null, `${name} null`)
    }
  })

  it('rejects bytes of the wrong length and values out of range', () => {
    assert.throws(() => Serdes.Integer().deserialize(Uint8Array.from([1]), 't'), /Integer expects 4 bytes, got 1 on topic t/)
    assert.throws(() => Serdes.Integer().serialize(2 ** 40, 't'), /not a 32-bit integer/)
    assert.throws(() => Serdes.Long().serialize(0.5, 't'), /not a safe integer/)
  })
})
