import { invalidConfig } from '../errors.js'
import type { TimeDomain, TtlConfig } from './api.js'

/** A TTL config with defaults filled in; validated once, when the state is registered. */
export interface TtlPolicy {
  readonly ttlMs: number
  readonly refreshOnRead: boolean
  readonly returnExpired: boolean
  readonly domain: TimeDomain
}

export function compileTtl(ttl: TtlConfig | undefined, where: string): TtlPolicy | undefined {
  if (ttl === undefined) return undefined
  if (ttl === null || typeof ttl !== 'object') throw invalidConfig(where, `ttl must be an object, got ${JSON.stringify(ttl)}`)
  if (typeof ttl.ttlMs !== 'number' || !Number.isSafeInteger(ttl.ttlMs) || ttl.ttlMs <= 0) {
    throw invalidConfig(where, `ttl.ttlMs must be an integer >= 1, got ${JSON.stringify(ttl.ttlMs)}`)
  }
  const update = ttl.update ?? 'onCreateAndWrite'
  if (update !== 'onCreateAndWrite' && update !== 'onReadAndWrite') {
    throw invalidConfig(where, `ttl.update must be "onCreateAndWrite" or "onReadAndWrite", got ${JSON.stringify(update)}`)
  }
  const visibility = ttl.visibility ?? 'neverReturnExpired'
  if (visibility !== 'neverReturnExpired' && visibility !== 'returnExpiredIfNotCleanedUp') {
    throw invalidConfig(where, `ttl.visibility must be "neverReturnExpired" or "returnExpiredIfNotCleanedUp", got ${JSON.stringify(visibility)}`)
  }
  const domain = ttl.timeDomain ?? 'processing'
  if (domain !== 'processing' && domain !== 'event') {
    throw invalidConfig(where, `ttl.timeDomain must be "processing" or "event", got ${JSON.stringify(domain)}`)
  }
  return { ttlMs: ttl.ttlMs, refreshOnRead: update === 'onReadAndWrite', returnExpired: visibility === 'returnExpiredIfNotCleanedUp', domain }
}

export function sameTtl(a: TtlPolicy | undefined, b: TtlPolicy | undefined): boolean {
  if (a === undefined || b === undefined) return a === b
  return a.ttlMs === b.ttlMs && a.refreshOnRead === b.refreshOnRead && a.returnExpired === b.returnExpired && a.domain === b.domain
}
