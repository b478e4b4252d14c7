import type { ClientCallback, ClientError } from './client-supplier.js'

/** How long one client call (a transaction step, a flush, a commit) may take before the runtime gives up on it. */
export const CALL_TIMEOUT_MS = 60_000
/**
 * How much longer than the timeout it gave a call waits for the client's callback before it settles as
 * timed out itself: librdkafka can keep a request to a coordinator it lost past the call's timeout
 * (issue 5456), and a callback that never comes would hold a commit, and a stop, for good.
 */
const CALLBACK_GRACE_MS = 5_000
/** librdkafka's "local: timed out". */
export const TIMED_OUT = -185

/** A timeout of this runtime's own, coded as librdkafka's, so that the callers treat both alike. */
function timedOut(what: string, ms: number): ClientError & Error {
  return Object.assign(new Error(`${what}: no answer from the client in ${Math.round(ms / 1000)} s`), { code: TIMED_OUT })
}

/**
 * A client call taking a node-style callback, as a promise that settles within `timeoutMs` plus a grace
 * (or never times out, with `timeoutMs` undefined: calls that librdkafka answers locally).
 */
export function promised(what: string, call: (cb: ClientCallback) => void, timeoutMs?: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined
    if (timeoutMs !== undefined) {
      const bound = timeoutMs + CALLBACK_GRACE_MS
      timer = setTimeout(() => reject(timedOut(what, bound)), bound)
    }
    call((err) => {
      clearTimeout(timer)
      if (!err) resolve()
      else reject(err instanceof Error ? err : Object.assign(new Error(err.message), err))
    })
  })
}

/** Waits for `done` at most `ms`; false when the time ran out (what it waited for may still end later). */
export async function within(done: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const bound = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)))
  try {
    return await Promise.race([done.then(() => true as const, () => true as const), bound])
  } finally {
    clearTimeout(timer)
  }
}

/** Disconnects a client, waiting for it at most `ms` (a callback that never comes must not keep a stop from ending). */
export function disconnected(client: { disconnect(callback: () => void): unknown }, ms: number): Promise<boolean> {
  return within(new Promise<void>((resolve) => client.disconnect(() => resolve())), ms)
}

/**
 * A transaction step again while librdkafka says it may be (a coordinator loading after a broker
 * restart, a broker away for a moment), with growing pauses, for CALL_TIMEOUT_MS at most; `stop` says
 * which retriable errors are not worth another try.
 */
export async function retried(call: () => Promise<void>, stop: (err: unknown) => boolean = () => false): Promise<void> {
  const deadline = Date.now() + CALL_TIMEOUT_MS
  for (let pause = 100; ; pause = Math.min(2 * pause, 2000)) {
    try {
      return await call()
    } catch (err) {
      if (stop(err)) throw err
      if ((err as { isRetriable?: boolean }).isRetriable !== true || Date.now() + pause > deadline) throw err
      await new Promise((resolve) => setTimeout(resolve, pause))
    }
  }
}

/** How long the runtime keeps trying to reach a cluster that is away before it stops, saying so (Kafka Streams' `task.timeout.ms`). */
export const UNREACHABLE_TIMEOUT_MS = 300_000

/**
 * A call tried again, with growing pauses, while it fails for any reason but a fatal one (a broker
 * away, a coordinator not found yet), for `timeoutMs`; then it fails naming the cluster and what it
 * tried, with the last error as its cause.
 */
export async function persistently<T>(what: string, bootstrapServers: string, call: () => Promise<T>, retry: (err: unknown) => boolean = (err) => (err as { isFatal?: boolean }).isFatal !== true, timeoutMs = UNREACHABLE_TIMEOUT_MS): Promise<T> {
  const since = Date.now()
  for (let pause = 250; ; pause = Math.min(2 * pause, 5000)) {
    try {
      return await call()
    } catch (err) {
      if (!retry(err)) throw err
      const waited = Date.now() - since
      if (waited + pause > timeoutMs) {
        throw Object.assign(new Error(`${what}: the Kafka cluster at ${bootstrapServers} did not answer for ${Math.round(waited / 1000)} s (${(err as Error).message})`, { cause: err }), { code: (err as { code?: number }).code })
      }
      await new Promise((resolve) => setTimeout(resolve, pause))
    }
  }
}

/**
 * A transaction step that timed out is not tried again: librdkafka can keep a request to a coordinator
 * it lost waiting past its timeout (issue 5456), and every retry times out the same way. The
 * transaction is aborted instead (marked so), and its tasks go back to their last commit.
 */
export function abortOnTimeout(err: unknown): boolean {
  if ((err as { code?: number }).code !== TIMED_OUT) return false
  ;(err as { isTxnRequiresAbort?: boolean }).isTxnRequiresAbort = true
  return true
}
