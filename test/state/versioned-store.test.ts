import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from '../helpers/fc.js'
import { freshStateDir } from '../helpers/durable.js'
import { EmbeddedRuntime, Serdes, silentLogger, Stores, Topology } from '../../src/index.js'
import type { ProcessorContext, StoreKey, VersionedKeyValueStore, VersionedRecord } from '../../src/index.js'
import { persistentStore } from '../../src/state/persistent-store.js'
import { PersistentVersionedKeyValueStore, PUT_RETURN_CODE_NOT_PUT } from '../../src/state/versioned-store.js'

type Op = { readonly op: 'put'; readonly key: string; readonly value: string | null; readonly ts: number } | { readonly op: 'delete'; readonly key: string; readonly ts: number } | { readonly op: 'get'; readonly key: string; readonly asOf?: number }

/**
 * A model of Kafka Streams' versioned store contract (KIP-889, VersionedKeyValueStore's javadoc): every
 * version ever accepted kept in a list; writes older than the largest timestamp minus the history
 * retention refused; reads that old answered by the latest version only, when it is old enough.
 */
class Model {
  private readonly versions = new Map<string, Array<{ ts: number; value: string | null }>>()
  private observed = -1
  constructor(private readonly history: number) {}

  put(key: string, value: string | null, ts: number): number {
    if (ts < this.observed - this.history) return PUT_RETURN_CODE_NOT_PUT
    this.observed = Math.max(this.observed, ts)
    const list = (this.versions.get(key) ?? []).filter((v) => v.ts !== ts)
    list.push({ ts, value })
    list.sort((a, b) => a.ts - b.ts)
    this.versions.set(key, list)
    const next = list.find((v) => v.ts > ts)
    return next === undefined ? -1 : next.ts
  }

  delete(key: string, ts: number): VersionedRecord<string> | undefined {
    if (ts < this.observed - this.history) return undefined
    const existing = this.get(key, ts)
    this.put(key, null, ts)
    return existing
  }

  get(key: string, asOf?: number): VersionedRecord<string> | undefined {
    const list = this.versions.get(key) ?? []
    const latest = list[list.length - 1]
    if (latest === undefined) return undefined
    if (asOf === undefined) return latest.value === null ? undefined : { value: latest.value, timestamp: latest.ts }
    if (asOf < this.observed - this.history) return latest.value !== null && latest.ts <= asOf ? { value: latest.value, timestamp: latest.ts } : undefined
    const i = list.findLastIndex((v) => v.ts <= asOf)
    const v = list[i]
    if (v === undefined || v.value === null) return undefined
    const next = list[i + 1]
    return next === undefined ? { value: v.value, timestamp: v.ts } : { value: v.value, timestamp: v.ts, validTo: next.ts }
  }
}

const opsArb = fc.array(
  fc.oneof(
    fc.record({ op: fc.constant('put' as const), key: fc.constantFrom('a', 'b'), value: fc.option(fc.constantFrom('x', 'y', 'z'), { nil: null, freq: 5 }), ts: fc.integer({ min: 0, max: 50 }) }),
    fc.record({ op: fc.constant('delete' as const), key: fc.constantFrom('a', 'b'), ts: fc.integer({ min: 0, max: 50 }) }),
    fc.record({ op: fc.constant('get' as const), key: fc.constantFrom('a', 'b') }),
    fc.record({ op: fc.constant('get' as const), key: fc.constantFrom('a', 'b'), asOf: fc.integer({ min: 0, max: 55 }) }),
  ),
  { maxLength: 60 },
)

function apply(store: Pick<VersionedKeyValueStore<string, string>, 'put' | 'delete' | 'get'>, op: Op): unknown {
  if (op.op === 'put') return store.put(op.key, op.value, op.ts)
  if (op.op === 'delete') return store.delete(op.key, op.ts)
  return op.asOf === undefined ? store.get(op.key) : store.get(op.key, op.asOf)
}

describe('versioned key-value store', () => {
  it('answers as of a time, keeps history for its retention, refuses writes older than that', () => {
    const s = new PersistentVersionedKeyValueStore<string, string>('v', 10)
    assert.equal(s.put('a', 'one', 5), -1)
    assert.equal(s.put('a', 'three', 30), -1)
    assert.equal(s.put('a', 'two', 20), 30)
    assert.deepEqual(s.get('a'), { value: 'three', timestamp: 30 })
    assert.deepEqual(s.get('a', 25), { value: 'two', timestamp: 20, validTo: 30 })
    assert.equal(s.get('a', 4), undefined)
    // 19 is before the history horizon (30 - 10): only the latest version could answer, and it is newer.
    assert.equal(s.get('a', 19), undefined)
    assert.equal(s.put('a', 'late', 19), PUT_RETURN_CODE_NOT_PUT)
    assert.deepEqual(s.delete('a', 35), { value: 'three', timestamp: 30 })
    assert.equal(s.get('a'), undefined)
    assert.deepEqual(s.get('a', 34), { value: 'three', timestamp: 30, validTo: 35 })
  })

  it('matches a model of the contract for random operations', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 20 }), opsArb, (history, ops) => {
        const store = new PersistentVersionedKeyValueStore<string, string>('v', history)
        const model = new Model(history)
        for (const op of ops as Op[]) assert.deepEqual(apply(store, op), apply(model, op), JSON.stringify(op))
      }),
      { numRuns: 500 },
    )
  })

  it('refuses a history retention that is not an integer >= 0, and boolean keys, naming the store', () => {
    assert.throws(() => Stores.persistentVersionedKeyValueStore('prices', -1), /store "prices": historyRetentionMs must be an integer >= 0, got -1/)
    assert.throws(() => Stores.persistentVersionedKeyValueStore('prices', 5, { cacheEntries: -2 }), /store "prices": cacheEntries must be an integer >= 0, got -2/)
    const store = new PersistentVersionedKeyValueStore<StoreKey, string>('prices', 5)
    assert.throws(() => store.put(true, 'x', 1), /versioned store "prices": keys may not be booleans, got true/)
    store.put('k', 'v', 1)
    // The largest timestamp is an entry of its own, not one of the store's keys.
    assert.equal(store.approximateNumEntries(), 1)
  })

  it('lives on disk in a durable run: the builder asks for it, and the store offers the capability', () => {
    const builder = Stores.persistentVersionedKeyValueStore<string, string>('prices', 5)
    assert.equal(builder.persistent, true)
    assert.ok(persistentStore(builder.build()) !== undefined)
  })

  it('is committed and restored with its task: a restarted run answers as one uninterrupted run', async () => {
    // Each record "key value" writes the key's version at the record's time, then reads the key as of
    // 5 ms before: the answers are the output.
    const topology = (out: string[]): Topology =>
      new Topology()
        .addSource<string, string>('in', 'in', { keySerde: Serdes.String(), valueSerde: Serdes.String() })
        .addProcessor<string, string, never, never>(
          'p',
          () => {
            let store: VersionedKeyValueStore<string, string>
            return {
              init: (ctx: ProcessorContext<never, never>) => void (store = ctx.getStateStore('prices')),
              process: (r) => {
                store.put(r.key, r.value === '-' ? null : r.value, r.timestamp)
                out.push(JSON.stringify(store.get(r.key, r.timestamp - 5) ?? 'none'))
              },
            }
          },
          'in',
        )
        .addStateStore(Stores.persistentVersionedKeyValueStore<string, string>('prices', 20), 'p')
    const input: Array<[string, string, number]> = Array.from({ length: 60 }, (_, i) => [`k${i % 3}`, i % 7 === 0 ? '-' : `v${i}`, i * 2 + (i % 4 === 0 ? -6 : 0)])
    const once: string[] = []
    const whole = new EmbeddedRuntime(topology(once), { applicationId: 'versioned-once', logger: silentLogger })
    await whole.start()
    for (const [k, v, ts] of input) whole.producer<string, string>('in').send(k, v, Math.max(0, ts))
    await whole.stop()
    const dir = freshStateDir()
    const resumed: string[] = []
    for (let part = 0; part < 3; part++) {
      const rt = new EmbeddedRuntime(topology(resumed), { applicationId: 'versioned-resumed', stateDir: dir, commitMaxRecords: 7, logger: silentLogger })
      await rt.start()
      for (const [k, v, ts] of input.slice(part * 20, part * 20 + 20)) rt.producer<string, string>('in').send(k, v, Math.max(0, ts))
      await rt.stop()
    }
    assert.deepEqual(resumed, once)
    assert.ok(once.some((l) => l !== '"none"'), 'some reads find a version')
  })
})
