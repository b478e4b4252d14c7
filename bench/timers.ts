import { TimerService } from '../src/keyed/timer-service.js'

export interface TimerThroughput {
  readonly timers: number
  readonly keys: number
  readonly registerPerSecond: number
  readonly firePerSecond: number
  /** Register and fire, together: timers / (register time + fire time). */
  readonly registerAndFirePerSecond: number
  readonly deletePerSecond: number
}

/**
 * The way timers are used in a stream: stream time advances, each record registers a timer some way
 * ahead (here up to an hour), and timers fire as stream time passes them. Register + fire, interleaved.
 */
export function timerStreaming(timers = 1_000_000, keys = 100_000, stepMs = 10, horizonMs = 3_600_000): { timers: number; keys: number; perSecond: number; maxPending: number } {
  const random = rng(7)
  const keyOf = Array.from({ length: keys }, (_, i) => `key-${i}`)
  const owners = new Uint32Array(timers)
  const ahead = new Float64Array(timers)
  for (let i = 0; i < timers; i++) {
    owners[i] = Math.floor(random() * keys)
    ahead[i] = 1 + Math.floor(random() * horizonMs)
  }
  const { ts, fired } = service()
  let maxPending = 0
  // Sampling the pending count scans the queue: its time is taken out of the measurement.
  let samplingMs = 0
  const t0 = performance.now()
  for (let i = 0; i < timers; i++) {
    const now = i * stepMs
    ts.registerUser('event', 0, keyOf[owners[i]!]!, now + ahead[i]!)
    if (ts.nextDue('event') <= now) ts.advance('event', now)
    if ((i & 0xffff) === 0) {
      const s0 = performance.now()
      maxPending = Math.max(maxPending, ts.userTimerCount('event', 0))
      samplingMs += performance.now() - s0
    }
  }
  ts.advance('event', Infinity)
  const ms = performance.now() - t0 - samplingMs
  if (ts.userTimerCount('event', 0) !== 0 || fired() === 0) throw new Error(`timers left pending after the end (${fired()} fired)`)
  return { timers, keys, perSecond: (timers / ms) * 1000, maxPending }
}

export interface TimerMemory {
  readonly timers: number
  readonly keys: number
  readonly bytesPerTimer: number
}

/** Deterministic pseudo-random numbers (xorshift), so every run registers the same timers. */
function rng(seed: number): () => number {
  let x = seed | 0 || 1
  return () => {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    return (x >>> 0) / 4294967296
  }
}

function service(): { ts: TimerService; fired: () => number } {
  let fired = 0
  const ts = new TimerService(
    {
      onUserTimer: () => {
        fired++
      },
      onTtlTimer: () => {},
    },
    () => {},
  )
  return { ts, fired: () => fired }
}

/** Event-time timers through the task timer service (the structure every keyed processor uses). */
export function timerThroughput(timers = 1_000_000, keys = 100_000): TimerThroughput {
  const random = rng(42)
  const keyOf = Array.from({ length: keys }, (_, i) => `key-${i}`)
  const times = new Float64Array(timers)
  const owners = new Uint32Array(timers)
  for (let i = 0; i < timers; i++) {
    times[i] = Math.floor(random() * 86_400_000)
    owners[i] = Math.floor(random() * keys)
  }
  const distinct = new Set<number>()
  for (let i = 0; i < timers; i++) distinct.add(owners[i]! * 86_400_000 + times[i]!)
  const pending = distinct.size
  const { ts, fired } = service()
  let t0 = performance.now()
  for (let i = 0; i < timers; i++) ts.registerUser('event', 0, keyOf[owners[i]!]!, times[i]!)
  const registerMs = performance.now() - t0
  t0 = performance.now()
  ts.advance('event', 86_400_000)
  const fireMs = performance.now() - t0
  if (fired() !== pending || ts.userTimerCount('event', 0) !== 0) throw new Error(`fired ${fired()} of ${pending}`)

  const d = service().ts
  for (let i = 0; i < timers; i++) d.registerUser('event', 0, keyOf[owners[i]!]!, times[i]!)
  t0 = performance.now()
  for (let i = timers - 1; i >= 0; i--) d.deleteUser('event', 0, keyOf[owners[i]!]!, times[i]!)
  const deleteMs = performance.now() - t0
  if (d.userTimerCount('event', 0) !== 0) throw new Error('delete left timers behind')

  return {
    timers,
    keys,
    registerPerSecond: (timers / registerMs) * 1000,
    firePerSecond: (pending / fireMs) * 1000,
    registerAndFirePerSecond: (timers / (registerMs + fireMs)) * 1000,
    deletePerSecond: (timers / deleteMs) * 1000,
  }
}

/**
 * Heap used per pending timer (needs node --expose-gc). Collects several times with pauses in between:
 * the memory of freed array buffers (the queue's grown-out arrays) is given back after a collection, not
 * in it, and a single gc() left the figure anywhere between 30 and 92 bytes at 1 M timers.
 */
export async function timerMemory(timers: number, keys = 100_000): Promise<TimerMemory> {
  const keyOf = Array.from({ length: keys }, (_, i) => `key-${i}`)
  // Typed arrays live outside the V8 heap: count them (arrayBuffers) as well as heap used.
  const used = (): number => {
    const m = process.memoryUsage()
    return m.heapUsed + m.arrayBuffers
  }
  await settle()
  const before = used()
  const { ts } = service()
  // Distinct timestamps per key, so every registration is a pending timer.
  for (let i = 0; i < timers; i++) ts.registerUser('event', 0, keyOf[i % keys]!, Math.floor(i / keys) * 1000 + (i % 997))
  await settle()
  const after = used()
  if (ts.userTimerCount('event', 0) !== timers) throw new Error('expected every timer pending')
  return { timers, keys, bytesPerTimer: (after - before) / timers }
}

async function settle(): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc
  for (let i = 0; i < 3; i++) {
    gc?.()
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
