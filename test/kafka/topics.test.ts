import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { PunctualError } from '../../src/errors.js'
import { BufferConfig, Serdes, StreamsBuilder, Suppressed, TimeWindows, Topology } from '../../src/index.js'
import { ensureTopics, waitForTopics } from '../../src/kafka/admin.js'
import type { TopicAdmin } from '../../src/kafka/admin.js'
import type { Windowed } from '../../src/index.js'
import { planTopics } from '../../src/kafka/topics.js'

/** in -> groupBy (repartition) -> count (store "counts") -> out. */
function topology(): Topology {
  const b = new StreamsBuilder()
  b.stream<string, string>('in')
    .groupBy((_k, v) => v, { name: 'by-value', keySerde: Serdes.String() })
    .count({ name: 'counts' })
    .toStream()
    .to('out', { valueSerde: Serdes.JSON() })
  return b.build()
}

function planError(fn: () => unknown): string {
  try {
    fn()
  } catch (err) {
    assert.ok(err instanceof PunctualError)
    assert.equal(err.code, 'INVALID_TOPOLOGY')
    return err.message
  }
  assert.fail('planTopics did not throw')
}

describe('Kafka topics of a topology', () => {
  it("names the application's own topics after it, and sizes them by the tasks of the sub-topology that writes or owns them", () => {
    const plan = planTopics(topology(), 'app', new Map([['in', 4], ['out', 2]]))
    assert.deepEqual(plan.names.get('in'), 'in')
    assert.deepEqual(plan.names.get('by-value-repartition'), 'app-by-value-repartition')
    assert.deepEqual([...plan.partitions], [[0, 4], [1, 4]])
    assert.deepEqual(
      plan.create.map((t) => [t.name, t.partitions, t.config['cleanup.policy'] ?? 'delete']),
      [
        ['app-by-value-repartition', 4, 'delete'],
        ['app-punctual-0-changelog', 4, 'compact'],
        ['app-counts-changelog', 4, 'compact'],
        ['app-punctual-1-changelog', 4, 'compact'],
      ],
    )
    assert.deepEqual([...plan.repartition], ['app-by-value-repartition'], 'the topics whose read records are purged')
  })

  it('sizes a repartition topic read beside a topic of the user by that topic, as Kafka Streams co-partitions them', () => {
    // in (2 partitions) -> selectKey -> join table (8 partitions): the repartition topic takes 8, not 2.
    const b = new StreamsBuilder()
    const table = b.table<string, string>('table', { keySerde: Serdes.String(), valueSerde: Serdes.String() })
    b.stream<string, string>('in', { keySerde: Serdes.String(), valueSerde: Serdes.String() })
      .selectKey((_k, v) => v)
      .join(table, (v, t) => `${v}${t}`, { name: 'lookup' })
      .to('out')
    const plan = planTopics(b.build(), 'app', new Map([['in', 2], ['table', 8], ['out', 1]]))
    assert.deepEqual([...plan.partitions], [[0, 8], [1, 2]], 'the join (with the table) 8 tasks, the re-keying 2')
    assert.deepEqual(plan.create.find((t) => t.name === 'app-lookup-repartition')?.partitions, 8)
  })

  it('names repartition topics and changelogs as Kafka Streams does: after the grouping or the store, and after the store', () => {
    const b = new StreamsBuilder()
    b.stream<string, string>('in')
      .groupBy((_k, v) => v, { keySerde: Serdes.String() })
      .windowedBy(TimeWindows.ofSizeWithNoGrace(1000))
      .count({ name: 'page-counts' })
      .suppress(Suppressed.untilWindowCloses<Windowed<string>, number>(BufferConfig.unbounded()))
      .toStream()
      .to('out', { keySerde: Serdes.JSON(), valueSerde: Serdes.JSON() })
    const plan = planTopics(b.build(), 'app', new Map([['in', 2], ['out', 2]]))
    const names = plan.create.map((t) => t.name)
    assert.ok(names.includes('app-page-counts-repartition'), names.join(', '))
    assert.ok(names.includes('app-page-counts-changelog'), names.join(', '))
    assert.ok(names.some((n) => /^app-KTABLE-SUPPRESS-STATE-STORE-\d{10}-changelog$/.test(n)), names.join(', '))
  })

  it('reports topics that do not exist, and co-partitioned topics of different counts, naming topics and counts', () => {
    const missing = planError(() => planTopics(topology(), 'app', new Map([['in', 4]])))
    assert.match(missing, /these topics do not exist on the cluster: out/)
    const t = new Topology().addSource('s', ['a', 'b']).addSink('k', 'out', {}, 's')
    const mismatch = planError(() => planTopics(t, 'app', new Map([['a', 4], ['b', 3], ['out', 1]])))
    assert.match(mismatch, /sub-topology 0: co-partitioned topics must have the same number of partitions, got a=4, b=3/)
  })

  it('refuses an existing topic of its own with another partition count, and names that cannot be topics', () => {
    const wrong = planError(() => planTopics(topology(), 'app', new Map([['in', 4], ['out', 2], ['app-counts-changelog', 8]])))
    assert.match(wrong, /topic app-counts-changelog has 8 partitions; this application needs 4/)
    const b = new StreamsBuilder()
    b.stream('in').groupByKey().count({ name: 'my store' }).toStream().to('out')
    assert.match(planError(() => planTopics(b.build(), 'app', new Map([['in', 1], ['out', 1]]))), /topic name "app-my store-changelog" is not a legal Kafka topic name/)
    assert.throws(() => planTopics(topology(), 'my app', new Map()), /applicationId "my app": it prefixes topic names/)
  })

  it('creates only the missing topics of its own, changelogs compacted', async () => {
    const topics = new Map([['in', 2], ['out', 2], ['app-punctual-0-changelog', 2]])
    const created: unknown[] = []
    const admin: TopicAdmin = {
      listTopics: async () => [...topics.keys()],
      fetchTopicMetadata: async ({ topics: names }) => names.map((name) => ({ name, partitions: Array.from({ length: topics.get(name) ?? 0 }) })),
      createTopics: async ({ topics: specs }) => {
        created.push(...specs)
        for (const spec of specs) topics.set(spec.topic, spec.numPartitions)
        return true
      },
    }
    await ensureTopics(admin, topology(), 'app')
    assert.deepEqual(created, [
      {
        topic: 'app-by-value-repartition',
        numPartitions: 2,
        // Kept until read, whatever the records' timestamps, as Kafka Streams does.
        configEntries: [
          { name: 'cleanup.policy', value: 'delete' },
          { name: 'retention.ms', value: '-1' },
          { name: 'segment.bytes', value: '52428800' },
        ],
      },
      { topic: 'app-counts-changelog', numPartitions: 2, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] },
      { topic: 'app-punctual-1-changelog', numPartitions: 2, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] },
    ])
  })

  it('waits for topics to show in the metadata, and says which never did', async () => {
    let asked = 0
    const slow: TopicAdmin = {
      listTopics: async () => (++asked >= 3 ? ['a'] : []),
      fetchTopicMetadata: async ({ topics: names }) => names.map((name) => ({ name, partitions: [0, 1] })),
      createTopics: async () => true,
    }
    await waitForTopics(slow, new Map([['a', 2]]))
    assert.equal(asked, 3, 'asked until it showed')
    await assert.rejects(waitForTopics(slow, new Map([['b', 4]]), 0), /does not show these topics after 0 ms: b \(4 partitions\)/)
  })
})
