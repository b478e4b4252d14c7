import { Stores, Topology } from '../../src/index.js'
import type { KeyValueStore } from '../../src/index.js'

/**
 * src (topic `topic`) -> count: counts records per key in the key-value store "counts" and reports
 * each new count. A record whose value is "forget" deletes its key instead.
 */
export function countingTopology(topic: string, onCount: (key: string, n: number) => void = () => {}): Topology {
  return new Topology()
    .addSource('src', topic)
    .addProcessor<string, string>(
      'count',
      () => {
        let store: KeyValueStore<string, number>
        return {
          init(c) {
            store = c.getStateStore('counts')
          },
          process(r) {
            const n = (store.get(r.key) ?? 0) + 1
            if (r.value === 'forget') store.delete(r.key)
            else store.put(r.key, n)
            onCount(r.key, n)
          },
        }
      },
      'src',
    )
    .addStateStore(Stores.inMemoryKeyValueStore<string, number>('counts'), 'count')
}
