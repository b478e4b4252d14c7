import { spawn, spawnSync } from 'node:child_process'
import type { ChildProcessWithoutNullStreams } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

/** What the harness answers for one scenario. */
export interface ReferenceResult {
  readonly outputs?: Array<Record<string, unknown>>
  readonly notComparable?: string
  readonly failed?: string
}

const HERE = fileURLToPath(new URL('.', import.meta.url))

/** Newest modification time under a directory (the harness sources). */
function newest(path: string): number {
  const s = statSync(path)
  if (!s.isDirectory()) return s.mtimeMs
  return Math.max(0, ...readdirSync(path).map((f) => newest(join(path, f))))
}

/**
 * Builds the Kafka Streams harness when its sources changed (offline first, so runs after the first
 * reuse Maven's local repository), then runs one JVM that answers scenario after scenario.
 */
export function buildHarness(): void {
  const jar = join(HERE, 'target', 'classes', 'punctual', 'reference', 'Harness.class')
  if (existsSync(jar) && existsSync(join(HERE, 'target', 'lib')) && statSync(jar).mtimeMs >= Math.max(newest(join(HERE, 'src')), newest(join(HERE, 'pom.xml')))) return
  for (const offline of [true, false]) {
    const r = spawnSync('mvn', ['-q', '-B', ...(offline ? ['-o'] : []), 'package', '-DskipTests'], { cwd: HERE, stdio: offline ? 'ignore' : ['ignore', 2, 2] }) // build output on stderr: stdout carries results
    if (r.status === 0) return
  }
  throw new Error('the Kafka Streams harness did not build (mvn package in conformance/kafka-streams)')
}

export class ReferenceHarness {
  private readonly waiting: Array<(r: ReferenceResult) => void> = []

  private constructor(private readonly child: ChildProcessWithoutNullStreams) {
    createInterface({ input: child.stdout }).on('line', (line) => this.waiting.shift()?.(JSON.parse(line) as ReferenceResult))
  }

  static async start(): Promise<ReferenceHarness> {
    buildHarness()
    const cp = `${join(HERE, 'target', 'classes')}:${join(HERE, 'target', 'lib', '*')}`
    const child = spawn('java', ['-cp', cp, 'punctual.reference.Harness'], { stdio: ['pipe', 'pipe', 'pipe'] })
    child.stderr.resume()
    return new ReferenceHarness(child)
  }

  /** Runs one scenario: a file, or a scenario object (recordsFromFile resolved against `dir`). */
  run(request: { file: string } | { scenario: unknown; dir?: string }): Promise<ReferenceResult> {
    return new Promise((resolve) => {
      this.waiting.push(resolve)
      this.child.stdin.write(`${JSON.stringify(request)}\n`)
    })
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.child.once('exit', () => resolve())
      this.child.stdin.end()
    })
  }
}

type Event = Record<string, unknown>

/**
 * What the comparison leaves aside, each a known limit of the reference rather than a semantic choice:
 * - punctuations of one check with the same due time: Kafka Streams' punctuation queue is a priority
 *   queue on due time alone, so its tie order is arbitrary (SEMANTICS 2 says registration order); runs of
 *   punctuations with the same step and timestamp are compared sorted by id;
 * - records emitted during a step that then stops with an error: Kafka Streams' test driver drops the
 *   output of a step that throws, so both sides keep only the error for that step.
 */
export function comparable(ours: readonly Event[], theirs: readonly Event[]): [string[], string[]] {
  const norm = (events: readonly Event[], errorStep: number | undefined): string[] => {
    const kept = events.filter((e) => errorStep === undefined || e.step !== errorStep || e.error !== undefined)
    const out: Event[] = []
    for (let i = 0; i < kept.length; ) {
      let j = i + 1
      const e = kept[i] as Event
      if (e.punctuation !== undefined) while (j < kept.length && kept[j]?.punctuation !== undefined && kept[j]?.step === e.step && kept[j]?.ts === e.ts) j++
      out.push(...kept.slice(i, j).sort((a, b) => String(a.punctuation ?? '').localeCompare(String(b.punctuation ?? ''))))
      i = j
    }
    return out.map((x) => JSON.stringify(x))
  }
  const lastOurs = ours[ours.length - 1]
  const lastTheirs = theirs[theirs.length - 1]
  const errorStep = lastOurs?.error !== undefined && lastTheirs?.error !== undefined && lastOurs.step === lastTheirs.step ? (lastOurs.step as number) : undefined
  return [norm(ours, errorStep), norm(theirs, errorStep)]
}
