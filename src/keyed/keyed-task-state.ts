import { PunctualError } from '../errors.js'
import { checkedCacheEntries } from '../state/stores.js'
import type { StoreKey } from '../processor/api.js'
import type { DropReason } from '../processor/errors.js'
import type { ExpiredEntry, StateDescriptor, StateKind, TimeDomain } from './api.js'
import { ListStateTable, MapStateTable, ValueStateTable } from './keyed-state.js'
import type { KeyedStateOnDisk, StateHost, StateTable } from './keyed-state.js'
import { MAX_TIMER_OWNERS } from './timer-queue.js'
import { TimerService } from './timer-service.js'
import type { TimerRecord, TimerTargets } from './timer-service.js'
import { compileTtl, sameTtl } from './ttl.js'

/** Keyed state and timers of one task, as a checkpoint carries them. */
export interface KeyedSnapshot {
  readonly timers: readonly TimerRecord[]
  /** Per state, `node/state`: its kind and entries. */
  readonly states: Readonly<Record<string, { readonly kind: StateKind; readonly entries: ReadonlyArray<[StoreKey, unknown]> }>>
}

/** What changed in a task's keyed state and timers since the last commit (durable mode). */
export interface KeyedChanges {
  /** Per changed key of a state: its entries now, or undefined when it has none left. */
  readonly states: ReadonlyArray<{ readonly state: string; readonly kind: StateKind; readonly key: StoreKey; readonly entries: unknown }>
  readonly timers: ReadonlyArray<TimerChange>
}

export interface TimerChange {
  readonly added: boolean
  readonly record: TimerRecord
}

/** Where a commit that takes keyed state later (`takeChangesLater`) gets each changed entry. */
export type KeyedEntryOut = (state: string, kind: StateKind, key: StoreKey, entries: unknown) => void

/** Keyed changes taken for a commit that encodes the state entries later. */
export interface KeyedChangesLater {
  /** Taken now (timer records do not change). */
  readonly timers: readonly TimerChange[]
  /** Changed state entries taken, to be handed over. */
  readonly states: number
  /** Hands state entries not handed yet to the commit until `deadline` (performance.now()); true when all are. */
  handSome(deadline: number): boolean
}

/**
 * What keyed state and timers need of a keyed processor node (the task's `KeyedProcessorNode`): its name
 * and timer owner index, its current key, and the callbacks that fire timers and report expiries with
 * the key set.
 */
export interface KeyedNodeHandle {
  readonly name: string
  readonly owner: number
  currentKey(): StoreKey
  fireTimer(key: StoreKey, timestamp: number, domain: TimeDomain): void
  expired(entry: ExpiredEntry<StoreKey>): void
}

/**
 * Everything keyed a task owns: the timer service, the keyed nodes (owners of user timers) and their
 * state tables (owners of TTL timers). It routes fired timers and reports callback errors.
 */
export class KeyedTaskState implements TimerTargets {
  readonly timerService: TimerService
  private readonly nodes: KeyedNodeHandle[] = []
  private readonly tables: StateTable[] = []
  private readonly tableByName = new Map<string, StateTable>()
  private pendingStates: KeyedSnapshot['states']
  private tracking = false
  /** Entries TTL cleanup removed (values, map entries, list elements), for metrics. */
  expiredEntries = 0

  constructor(
    onProcessingTimerAdded: () => void,
    private readonly onError: (reason: DropReason, error: unknown, where: string, processorName?: string) => void,
    restore: KeyedSnapshot | undefined,
    /**
     * Where a state's committed entries are, in a durable run: the state loads a key's entries when it is
     * first used, and keys beyond its cache leave memory once their changes are durable.
     */
    private readonly stateDisk?: (state: string) => KeyedStateOnDisk | undefined,
  ) {
    this.timerService = new TimerService(this, onProcessingTimerAdded)
    this.pendingStates = restore?.states ?? {}
  }

  /** The owner index the next keyed node gets. */
  nextOwner(): number {
    return this.nodes.length
  }

  addNode(node: KeyedNodeHandle): void {
    if (this.nodes.length === MAX_TIMER_OWNERS) throw new PunctualError('INVALID_CONFIG', `keyed processor "${node.name}": a task holds at most ${MAX_TIMER_OWNERS} keyed processors`)
    this.nodes.push(node)
  }

  /** Registers (or finds) a state of `node`; `ttlNow` tells the time of a TTL's domain. */
  stateTable(node: KeyedNodeHandle, descriptor: StateDescriptor<StateKind, unknown>, ttlNow: (domain: TimeDomain) => number): StateTable {
    const where = `keyed processor "${node.name}" state "${descriptor.name}"`
    if (typeof descriptor.name !== 'string' || descriptor.name.length === 0) {
      throw new PunctualError('INVALID_CONFIG', `keyed processor "${node.name}": a state needs a non-empty name, got ${JSON.stringify(descriptor.name)}`)
    }
    const ttl = compileTtl(descriptor.ttl, where)
    const cacheEntries = checkedCacheEntries(where, descriptor.cacheEntries)
    const fullName = `${node.name}/${descriptor.name}`
    const existing = this.tableByName.get(fullName)
    if (existing !== undefined) {
      if (existing.kind !== descriptor.kind) throw new PunctualError('INVALID_CONFIG', `${where} is already registered as ${existing.kind} state, not ${descriptor.kind}`)
      if (!sameTtl(existing.ttl, ttl)) throw new PunctualError('INVALID_CONFIG', `${where} is already registered with a different TTL config`)
      return existing
    }
    const id = this.tables.length
    if (id === MAX_TIMER_OWNERS) throw new PunctualError('INVALID_CONFIG', `${where}: a task holds at most ${MAX_TIMER_OWNERS} keyed states`)
    const host = this.stateHost(node, ttlNow, id, ttl?.domain ?? 'processing')
    const table: StateTable =
      descriptor.kind === 'value'
        ? new ValueStateTable(id, descriptor.name, 'value', ttl, host)
        : descriptor.kind === 'map'
          ? new MapStateTable(id, descriptor.name, 'map', ttl, host)
          : new ListStateTable(id, descriptor.name, 'list', ttl, host)
    const saved = this.pendingStates[fullName]
    if (saved !== undefined) {
      if (saved.kind !== descriptor.kind) throw new PunctualError('INVALID_CONFIG', `${where}: the checkpoint holds ${saved.kind} state under this name, not ${descriptor.kind}`)
      table.restore(saved.entries)
    }
    const onDisk = this.stateDisk?.(fullName)
    if (onDisk !== undefined) {
      if (onDisk.kind !== undefined && onDisk.kind !== descriptor.kind) throw new PunctualError('INVALID_CONFIG', `${where}: the checkpoint holds ${onDisk.kind} state under this name, not ${descriptor.kind}`)
      table.attach(onDisk.disk, onDisk.kind !== undefined, cacheEntries)
    }
    if (this.tracking) table.trackChanges()
    this.tables.push(table)
    this.tableByName.set(fullName, table)
    return table
  }

  /** Durable mode: from now on, record what changes so commits can write only that. */
  trackChanges(): void {
    this.tracking = true
    this.timerService.trackChanges()
    for (const t of this.tables) t.trackChanges()
  }

  takeChanges(): KeyedChanges {
    const states: Array<{ state: string; kind: StateKind; key: StoreKey; entries: unknown }> = []
    for (const [name, table] of this.tableByName) {
      for (const key of table.takeChanged()) states.push({ state: name, kind: table.kind, key, entries: table.snapshotKey(key) })
    }
    return { states, timers: this.takeTimerChanges() }
  }

  /**
   * Takes the changes for a commit that hands each changed state entry to `out` later: as `handSome`
   * reaches it, or before anything reads or changes it (copy on write). Taking costs nothing per key.
   */
  takeChangesLater(out: KeyedEntryOut): KeyedChangesLater {
    const tables = [...this.tableByName]
    let states = 0
    for (const [name, table] of tables) states += table.takeChangedLater((key, entries) => out(name, table.kind, key, entries))
    let next = 0
    return {
      timers: this.takeTimerChanges(),
      states,
      handSome: (deadline) => {
        for (; next < tables.length; next++) if (!(tables[next] as [string, StateTable])[1].encodeTaken(deadline)) return false
        return true
      },
    }
  }

  private takeTimerChanges(): TimerChange[] {
    const nodeNames = this.nodes.map((n) => n.name)
    const tableNames = this.tableNames()
    return this.timerService.takeChanges().map((c) => ({
      added: c.added,
      record: { kind: c.kind, domain: c.domain, timestamp: c.timestamp, seq: c.seq, owner: (c.kind === 'user' ? nodeNames : tableNames)[c.owner] as string, key: c.key },
    }))
  }

  /** The changes last taken are durable. */
  committed(): void {
    for (const t of this.tables) t.committed()
  }

  private tableNames(): string[] {
    const names: string[] = []
    for (const [name, t] of this.tableByName) names[t.id] = name
    return names
  }

  onUserTimer(owner: number, key: StoreKey, timestamp: number, domain: TimeDomain): void {
    const node = this.nodes[owner] as KeyedNodeHandle
    try {
      node.fireTimer(key, timestamp, domain)
    } catch (err) {
      if (err instanceof PunctualError && err.fatal) throw err
      this.onError('timer', err, `${domain}-time timer ${timestamp} of key ${String(key)}`, node.name)
    }
  }

  onTtlTimer(owner: number, key: StoreKey, _timestamp: number, _domain: TimeDomain, now: number): void {
    const table = this.tables[owner] as StateTable
    try {
      table.cleanup(key, now)
    } catch (err) {
      this.onError('timer', err, `TTL cleanup of state "${table.name}" for key ${String(key)}`)
    }
  }

  /** Restores timers (after processors registered their states in init). */
  restoreTimers(records: readonly TimerRecord[]): void {
    const nodeIndex = new Map(this.nodes.map((n, i) => [n.name, i]))
    const tableIndex = new Map([...this.tableByName].map(([name, t]) => [name, t.id]))
    // A timer whose node or state no longer exists is dropped: nothing could handle it.
    const known = records.filter((r) => (r.kind === 'user' ? nodeIndex.has(r.owner) : tableIndex.has(r.owner)))
    this.timerService.restore(known, (n) => nodeIndex.get(n) as number, (n) => tableIndex.get(n) as number)
    this.pendingStates = {}
  }

  snapshot(): KeyedSnapshot {
    const states: Record<string, { kind: StateKind; entries: Array<[StoreKey, unknown]> }> = {}
    for (const [name, t] of this.tableByName) states[name] = { kind: t.kind, entries: t.snapshot() }
    const timers = this.timerService.snapshot(
      this.nodes.map((n) => n.name),
      this.tableNames(),
    )
    return { timers, states }
  }

  nodeByName(name: string): KeyedNodeHandle | undefined {
    return this.nodes.find((n) => n.name === name)
  }

  /** What a state table of `node` needs: its current key, the time of its TTL's domain, its TTL timers. */
  private stateHost(node: KeyedNodeHandle, ttlNow: (domain: TimeDomain) => number, owner: number, domain: TimeDomain): StateHost {
    const timers = this.timerService
    return {
      currentKey: () => node.currentKey(),
      ttlNow: () => ttlNow(domain),
      registerTtlTimer: (key, at) => timers.registerTtl(domain, owner, key, at),
      deleteTtlTimer: (key, at) => timers.deleteTtl(domain, owner, key, at),
      expired: (entry) => {
        this.expiredEntries++
        node.expired(entry)
      },
    }
  }
}
