/** Percentiles of a sample (nearest-rank), for benchmark reports. */
export function percentiles(values: number[]): { p50: number; p99: number; max: number; count: number } {
  const sorted = Float64Array.from(values).sort()
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? NaN
  return { p50: at(0.5), p99: at(0.99), max: sorted[sorted.length - 1] ?? NaN, count: sorted.length }
}

/** Wall clock with sub-millisecond resolution, so lateness is not rounded to whole milliseconds. */
export const preciseClock = { now: (): number => performance.timeOrigin + performance.now() }

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** The run whose `value` is the median (the upper middle one of an even count). */
export function median<T>(runs: readonly T[], value: (x: T) => number): T {
  return [...runs].sort((a, b) => value(a) - value(b))[runs.length >> 1] as T
}

/** Java's String.hashCode of each output line, summed: equal outputs give equal hashes, in any order (as Bench.java computes it). */
export function javaHash(lines: readonly string[]): number {
  let sum = 0
  for (const s of lines) {
    let h = 0
    for (let i = 0; i < s.length; i++) h = (Math.imul(31, h) + s.charCodeAt(i)) | 0
    sum = (sum + h) | 0
  }
  return sum
}
