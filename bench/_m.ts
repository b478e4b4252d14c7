import { TimerQueue } from '../src/keyed/timer-queue.js'
const keys = 100_000, n = 1_000_000
const keyOf = Array.from({ length: keys }, (_, i) => `key-${i}`)
let x = 42
const r = () => { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; return (x >>> 0) / 4294967296 }
const times = new Float64Array(n), owners = new Uint32Array(n)
for (let i = 0; i < n; i++) { times[i] = Math.floor(r() * 86_400_000); owners[i] = Math.floor(r() * keys) }
for (let round = 0; round < 3; round++) {
  let t0 = performance.now()
  const m = new Map<string, number | number[]>()
  for (let i = 0; i < n; i++) { const k = keyOf[owners[i]!]!; const e = m.get(k); if (e === undefined) m.set(k, i); else if (typeof e === 'number') m.set(k, [e, i]); else e.push(i) }
  const mapMs = performance.now() - t0
  const q = new TimerQueue()
  t0 = performance.now()
  for (let i = 0; i < n; i++) q.add(0, keyOf[owners[i]!]!, times[i]!, i)
  const addMs = performance.now() - t0
  t0 = performance.now()
  let c = 0
  while (q.pollDue(Infinity) !== undefined) c++
  const pollMs = performance.now() - t0
  console.log({ mapMs, addMs, pollMs, c })
}
