import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import { after, afterEach, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { TestCluster } from './cluster.js'
import { embedded, lines, PARTITIONS, records, until } from './workload.js'

const INSTANCE = fileURLToPath(new URL('./instance.ts', import.meta.url))

/** An instance of the application in a process of its own, and what it last reported. */
class Instance {
  processed = 0
  tasks: string[] = []
  restoring: string[] = []
  readonly exited: Promise<number | null>
  private readonly child: ChildProcess

  constructor(readonly name: string, args: string[]) {
    this.child = spawn(process.execPath, ['--import', 'tsx', INSTANCE, ...args, name], { stdio: ['ignore', 'pipe', 'inherit'], env: process.env })
    createInterface({ input: this.child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      const report = JSON.parse(line) as { processed: number; tasks: string[]; restoring: string[] }
      this.processed = report.processed
      this.tasks = report.tasks
      this.restoring = report.restoring
    })
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)))
  }

  kill(signal: NodeJS.Signals): void {
    this.child.kill(signal)
  }
}

describe('KafkaRuntime failover: instances as processes, one killed with SIGKILL, one added', () => {
  let cluster: TestCluster
  const run = `fo${process.pid}x${Date.now()}`
  const instances: Instance[] = []

  before(async () => {
    cluster = await TestCluster.connect()
  })

  afterEach(() => {
    for (const i of instances.splice(0)) i.kill('SIGKILL')
  })

  after(async () => {
    await cluster.deleteTopics(run)
    await cluster.close()
  })

  for (const guarantee of ['exactly_once_v2', 'at_least_once'] as const) {
    const exactlyOnce = guarantee === 'exactly_once_v2'
    it(`${guarantee} on 3 instances, one killed mid-run and one added later: ${exactlyOnce ? 'the committed output equals a single embedded run' : 'no final window of a single embedded run is missing'}`, async () => {
      const input = `${run}-${guarantee}-in`
      const output = `${run}-${guarantee}-out`
      await cluster.createTopic(input, PARTITIONS)
      await cluster.createTopic(output, PARTITIONS)
      const thirds = [records(4000), records(4000, 4000), records(4000, 8000)] as const
      const expected = await embedded(thirds.flat())
      const args = [`${run}-${guarantee}-app`, input, output, guarantee]
      const start = (name: string): Instance => {
        const i = new Instance(name, args)
        instances.push(i)
        return i
      }
      const total = (): number => instances.reduce((n, i) => n + i.processed, 0)
      const seen = (): string => instances.map((i) => `${i.name}: ${i.processed} records, tasks ${i.tasks.join(' ')}${i.restoring.length === 0 ? '' : `, restoring ${i.restoring.join(' ')}`}`).join('; ')

      await cluster.produce(input, PARTITIONS, thirds[0])
      const [a, b, c] = [start('a'), start('b'), start('c')]
      await until('three instances share the tasks', () => [a, b, c].every((i) => i.tasks.length > 0) && a.tasks.length + b.tasks.length + c.tasks.length === PARTITIONS, 90_000, seen)
      // The second third arrives in small batches, so that the instances are mid-work when one dies.
      const feeding = (async () => {
        for (let i = 0; i < thirds[1].length; i += 250) {
          await cluster.produce(input, PARTITIONS, thirds[1].slice(i, i + 250))
          await new Promise((r) => setTimeout(r, 50))
        }
      })()
      await until('half of the second third is processed', () => total() >= 6000, 90_000, seen)

      // The instance with the most tasks dies without a word: its open transaction is aborted, its tasks
      // go to the others, restored from what it last committed.
      const victim = [a, b, c].sort((x, y) => y.tasks.length - x.tasks.length)[0] as Instance
      victim.kill('SIGKILL')
      assert.equal(await victim.exited, null)
      instances.splice(instances.indexOf(victim), 1)
      const d = start('d')
      await feeding
      await cluster.produce(input, PARTITIONS, thirds[2])

      const survivors = instances.slice()
      await until('every task runs again, on the three live instances', () => survivors.reduce((n, i) => n + i.tasks.length, 0) === PARTITIONS && d.tasks.length > 0, 90_000, seen)
      let written = 0
      let missing: string[] = []
      await until(
        'the output holds every final window of the embedded run',
        async () => {
          const out = lines(await cluster.readAll(output, PARTITIONS))
          written = out.length
          const windows = new Set(out.map((l) => l.slice(0, l.indexOf('='))))
          missing = expected.filter((l) => !windows.has(l.slice(0, l.indexOf('='))))
          return missing.length === 0
        },
        90_000,
        () => `${written} written, ${missing.length} of ${expected.length} windows missing (${missing.slice(0, 5).join(', ')}, ...); ${seen()}`,
      )
      for (const i of survivors) i.kill('SIGTERM')
      for (const i of survivors) assert.equal(await i.exited, 0, `${i.name} stopped cleanly`)
      instances.length = 0
      const out = lines(await cluster.readAll(output, PARTITIONS))
      if (exactlyOnce) {
        const left = new Map<string, number>()
        for (const l of expected) left.set(l, (left.get(l) ?? 0) + 1)
        const extra: string[] = []
        for (const l of out) {
          const n = left.get(l) ?? 0
          if (n === 0) extra.push(l)
          else left.set(l, n - 1)
        }
        const missing = [...left].filter(([, n]) => n > 0).map(([l]) => l)
        assert.deepEqual({ extra, missing }, { extra: [], missing: [] }, 'the committed output is the embedded run\'s, each final window once')
      }
      else {
        // Records since the victim's last commit were processed again: their windows may be written twice,
        // with counts that include them twice, but none is missing.
        const windows = new Set(out.map((l) => l.slice(0, l.indexOf('='))))
        assert.deepEqual(expected.filter((l) => !windows.has(l.slice(0, l.indexOf('=')))), [])
      }
    })
  }
})
