import { spawn } from 'node:child_process'

/** What a small-heap child prints last: its results, the wrong ones, the first wrong one, the most heap used. */
export interface SmallHeapReport {
  readonly results?: number
  readonly wrong?: number
  readonly firstWrong?: string
  readonly peakHeap?: number
  readonly error?: string
}

/** Runs a fixture app with `--max-old-space-size=heapMb` through tsx; resolves with its exit code and last JSON line. */
export function runSmallHeapChild(app: string, heapMb: number, args: readonly string[]): Promise<{ code: number | null; report: SmallHeapReport | undefined; stderr: string }> {
  const child = spawn(process.execPath, [`--max-old-space-size=${heapMb}`, '--import', 'tsx', app, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
  return new Promise((resolve) => {
    child.on('exit', (code) => {
      const line = stdout.trim().split('\n').pop()
      resolve({ code, report: line === undefined || line === '' ? undefined : (JSON.parse(line) as SmallHeapReport), stderr: stderr.slice(-2000) })
    })
  })
}
