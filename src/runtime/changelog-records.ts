import type { KeyedChanges, KeyedSnapshot } from '../keyed/keyed-task-state.js'
import type { StateKind } from '../keyed/api.js'
import type { TimerRecord } from '../keyed/timer-service.js'
import type { StoreKey } from '../processor/api.js'
import type { TaskCheckpoint } from '../processor/internal/task-config.js'
import { PunctualError } from '../errors.js'
import { decodeStoreKey, defaultStoreCodec, encodeStoreKey, packValue, storeCodec, unpackValue } from '../state/changelog-codec.js'
import type { StoreCodec } from '../state/changelog-codec.js'
import type { StoreBuilder } from '../state/stores.js'
import type { ChangelogRecord } from './changelog.js'

/**
 * punctual's own stores in a task's changelog, beside the task's state stores (whose names cannot start
 * with `punctual.`):
 * - `punctual.task`: stream time (`streamTime`), each punctuation's last fire time (`lastFire/<name>`),
 *   each input's next offset (`position/<topic>:<partition>`); values are numbers.
 * - `punctual.timers`: one record per pending timer, keyed by (kind, domain, timestamp, owner, key)
 *   (`timerKey`), the value its registration sequence number (the firing order of equal timestamps).
 * - `punctual.state.<processor>/<state>`: one record per key of a keyed state, the value its kind and
 *   entries with their access times (what TTL needs).
 */
export const TASK_STORE = 'punctual.task'
export const TIMER_STORE = 'punctual.timers'
export const KEYED_STATE_STORE_PREFIX = 'punctual.state.'

const STREAM_TIME = 'streamTime'
const LAST_FIRE = 'lastFire/'
const POSITION = 'position/'

/**
 * Turns a task's commits and checkpoints into changelog records, and records back into a checkpoint.
 * One per sub-topology: it knows the serdes of its stores.
 */
export class TaskChangelogCodec {
  private readonly codecs = new Map<string, StoreCodec>()

  constructor(stores: readonly StoreBuilder[]) {
    for (const s of stores) this.codecs.set(s.name, storeCodec(s.name, s.keySerde, s.valueSerde))
  }

  /**
   * The records of one commit: the clocks and positions that differ from `previous` (the last commit's
   * checkpoint; everything when undefined), then the keyed state, timer and store changes.
   */
  commitRecords(
    previous: TaskCheckpoint | undefined,
    now: TaskCheckpoint,
    keyed: KeyedChanges | undefined,
    stores: ReadonlyMap<string, ReadonlyArray<readonly [StoreKey, unknown]>>,
  ): ChangelogRecord[] {
    const out: ChangelogRecord[] = []
    if (now.streamTime !== previous?.streamTime) out.push(meta(STREAM_TIME, now.streamTime))
    diffNumbers(LAST_FIRE, previous?.lastFires, now.lastFires, out)
    diffNumbers(POSITION, previous?.positions, now.positions, out)
    for (const c of keyed?.states ?? []) {
      out.push({ store: KEYED_STATE_STORE_PREFIX + c.state, key: encodeStoreKey(c.key), value: c.entries === undefined ? null : packValue([c.kind, c.entries]) })
    }
    for (const { added, record } of keyed?.timers ?? []) out.push({ store: TIMER_STORE, key: timerKey(record), value: added ? timerValue(record.seq) : null })
    for (const [name, changes] of stores) {
      const codec = this.codec(name)
      for (const [key, value] of changes) out.push({ store: name, key: codec.encodeKey(key), value: value === undefined ? null : codec.encodeValue(value) })
    }
    return out
  }

  /** A whole checkpoint as records: what the compacted changelog of the task holds. */
  checkpointRecords(checkpoint: TaskCheckpoint): ChangelogRecord[] {
    const keyed: KeyedChanges | undefined =
      checkpoint.keyed === undefined
        ? undefined
        : {
            states: Object.entries(checkpoint.keyed.states).flatMap(([state, { kind, entries }]) => entries.map(([key, e]) => ({ state, kind, key, entries: e }))),
            timers: checkpoint.keyed.timers.map((record) => ({ added: true, record })),
          }
    const stores = new Map(Object.entries(checkpoint.stores ?? {}))
    return this.commitRecords(undefined, checkpoint, keyed, stores)
  }

  codec(store: string): StoreCodec {
    return this.codecs.get(store) ?? defaultStoreCodec
  }
}

/**
 * Rebuilds a task from its changelog records, fed in order, as they arrive: each record is decoded and
 * folded into the task's state at once (the last value of each key wins, a tombstone deletes it), so
 * memory holds the task's state, not its records or history; `checkpoint()` hands it over.
 */
export class ChangelogRestorer {
  private streamTime: number | undefined
  private readonly lastFires = new Map<string, number>()
  private readonly positions = new Map<string, number>()
  /** Pending timers by their record key's bytes. */
  private readonly timers = new Map<string, TimerRecord>()
  /** Per keyed state (`<processor>/<state>`): its kind and entries by key. */
  private readonly states = new Map<string, { kind: StateKind; entries: Map<StoreKey, unknown> }>()
  /** Per state store: entries by their key's bytes (the store's serde decides what keys are equal). */
  private readonly stores = new Map<string, Map<string, [StoreKey, unknown]>>()
  /** The keyed state of the last record's store: records of one store mostly come together. */
  private lastStateStore = ''
  private lastState: { kind: StateKind; entries: Map<StoreKey, unknown> } | undefined
  private count = 0

  constructor(
    private readonly codec: TaskChangelogCodec,
    /** Stores whose records are counted and not kept: they read their entries elsewhere (on disk). */
    private readonly elsewhere: (store: string) => boolean = () => false,
  ) {}

  /** Records applied so far. */
  get applied(): number {
    return this.count
  }

  apply(record: ChangelogRecord): void {
    this.count++
    const { store, value } = record
    if (store === TIMER_STORE) {
      const id = bytesId(record.key)
      if (value === null) this.timers.delete(id)
      else this.timers.set(id, decodeTimer(record))
    } else if (store.startsWith(KEYED_STATE_STORE_PREFIX)) {
      if (this.elsewhere(store)) return
      this.applyKeyed(store, decodeStoreKey(record.key), value)
    } else if (store === TASK_STORE) {
      this.applyTask(decodeStoreKey(record.key) as string, value === null ? undefined : (unpackValue(value) as number))
    } else if (!this.elsewhere(store)) {
      let entries = this.stores.get(store)
      if (entries === undefined) this.stores.set(store, (entries = new Map()))
      const id = bytesId(record.key)
      if (value === null) entries.delete(id)
      else {
        const codec = this.codec.codec(store)
        entries.set(id, [codec.decodeKey(record.key), codec.decodeValue(value)])
      }
    }
  }

  applyAll(records: Iterable<ChangelogRecord>): this {
    for (const r of records) this.apply(r)
    return this
  }

  /** The task's checkpoint as the records applied so far leave it; undefined when they leave nothing. */
  checkpoint(): TaskCheckpoint | undefined {
    const states: Record<string, { kind: StateKind; entries: Array<[StoreKey, unknown]> }> = {}
    for (const [name, { kind, entries }] of this.states) if (entries.size > 0) states[name] = { kind, entries: [...entries] }
    const stores: Record<string, Array<[StoreKey, unknown]>> = {}
    for (const [name, entries] of this.stores) if (entries.size > 0) stores[name] = [...entries.values()]
    // Equal timestamps fire in registration order, which the sequence numbers keep.
    const timers = [...this.timers.values()].sort((a, b) => a.timestamp - b.timestamp || a.seq - b.seq)
    const keyed: KeyedSnapshot | undefined = timers.length === 0 && Object.keys(states).length === 0 ? undefined : { timers, states }
    const any = this.streamTime !== undefined || this.lastFires.size > 0 || this.positions.size > 0 || keyed !== undefined || Object.keys(stores).length > 0
    if (!any) return undefined
    return { streamTime: this.streamTime, lastFires: Object.fromEntries(this.lastFires), positions: Object.fromEntries(this.positions), ...(keyed === undefined ? {} : { keyed }), stores }
  }

  private applyKeyed(store: string, key: StoreKey, value: Uint8Array | null): void {
    let state = store === this.lastStateStore ? this.lastState : this.states.get(store.slice(KEYED_STATE_STORE_PREFIX.length))
    if (value === null) {
      state?.entries.delete(key)
    } else {
      const [kind, entries] = unpackValue(value) as [StateKind, unknown]
      if (state === undefined) this.states.set(store.slice(KEYED_STATE_STORE_PREFIX.length), (state = { kind, entries: new Map() }))
      state.entries.set(key, entries)
    }
    this.lastStateStore = state === undefined ? '' : store
    this.lastState = state
  }

  private applyTask(key: string, value: number | undefined): void {
    if (key === STREAM_TIME) this.streamTime = value
    else if (key.startsWith(LAST_FIRE)) setOrDelete(this.lastFires, key.slice(LAST_FIRE.length), value)
    else if (key.startsWith(POSITION)) setOrDelete(this.positions, key.slice(POSITION.length), value)
    else throw corrupt(TASK_STORE, `unknown key ${JSON.stringify(key)}`)
  }
}

function setOrDelete(map: Map<string, number>, key: string, value: number | undefined): void {
  if (value === undefined) map.delete(key)
  else map.set(key, value)
}

/** A record key's bytes as a string (one character per byte), to compare keys by their bytes. */
function bytesId(key: Uint8Array): string {
  // Records' keys are Buffers (ours, and a Kafka client's): no view to make for most.
  return asBuffer(key).toString('latin1')
}

function meta(key: string, value: number | undefined): ChangelogRecord {
  return { store: TASK_STORE, key: encodeStoreKey(key), value: value === undefined ? null : packValue(value) }
}

function diffNumbers(prefix: string, before: Readonly<Record<string, number>> | undefined, now: Readonly<Record<string, number>>, out: ChangelogRecord[]): void {
  for (const [name, value] of Object.entries(now)) if (before?.[name] !== value) out.push(meta(prefix + name, value))
  if (before !== undefined) for (const name of Object.keys(before)) if (!(name in now)) out.push(meta(prefix + name, undefined))
}

/**
 * A timer's record key, bytes laid out by hand (a timer is the most frequent record of a task with
 * timers, and MessagePack cost two decodes per timer): a flags byte (1: TTL, 2: processing time), the
 * timestamp as a big-endian double, the owner's UTF-8 length (2 bytes) and bytes, then the timer key as
 * `encodeStoreKey` writes it. Equal timers give equal bytes.
 */
export function timerKey(r: TimerRecord): Uint8Array {
  const key = encodeStoreKey(r.key)
  const ownerLength = Buffer.byteLength(r.owner, 'utf8')
  const out = Buffer.allocUnsafe(11 + ownerLength + key.length)
  out[0] = (r.kind === 'ttl' ? 1 : 0) | (r.domain === 'processing' ? 2 : 0)
  out.writeDoubleBE(r.timestamp, 1)
  out.writeUInt16BE(ownerLength, 9)
  out.write(r.owner, 11, 'utf8')
  out.set(key, 11 + ownerLength)
  return out
}

/** A timer record's value: its registration sequence number, a big-endian double. */
function timerValue(seq: number): Uint8Array {
  const out = Buffer.allocUnsafe(8)
  out.writeDoubleBE(seq, 0)
  return out
}

export function decodeTimer(r: ChangelogRecord): TimerRecord {
  const key = asBuffer(r.key)
  const value = asBuffer(r.value as Uint8Array)
  const ownerEnd = key.length >= 11 ? 11 + key.readUInt16BE(9) : Infinity
  if (key[0]! > 3 || ownerEnd >= key.length || value.length !== 8) throw corrupt(TIMER_STORE, 'a timer record is malformed')
  return {
    kind: (key[0]! & 1) === 1 ? 'ttl' : 'user',
    domain: (key[0]! & 2) === 2 ? 'processing' : 'event',
    owner: key.toString('utf8', 11, ownerEnd),
    key: decodeStoreKey(key.subarray(ownerEnd)),
    timestamp: key.readDoubleBE(1),
    seq: value.readDoubleBE(0),
  }
}

function asBuffer(bytes: Uint8Array): Buffer {
  return bytes instanceof Buffer ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}

function corrupt(store: string, why: string): PunctualError {
  return new PunctualError('DESERIALIZATION', `changelog of ${store}: ${why}`)
}
