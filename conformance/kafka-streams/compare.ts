/**
 * `npm run conformance:kafka-streams`: runs every scenario through punctual and through Kafka Streams'
 * TopologyTestDriver (the harness in this folder) and prints, per scenario: match, expected difference
 * (listed with its reason in expected-differences.json), not comparable (a feature Kafka Streams lacks),
 * or unexpected difference. Exits 1 on an unexpected difference or a harness failure.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { loadScenario, runScenario } from '../../src/conformance/runner.js'
import { comparable, ReferenceHarness } from './harness.js'

const here = fileURLToPath(new URL('.', import.meta.url))
const dir = resolve(process.argv[2] ?? join(here, '../scenarios'))
/**
 * Differences that follow from SEMANTICS.md, each with its reason; `punctualWith` (merged into the
 * topology) is the punctual setting under which the scenario must match Kafka Streams exactly.
 */
const expectedDifferences = JSON.parse(readFileSync(join(here, 'expected-differences.json'), 'utf8')) as Record<string, { reason: string; punctualWith?: Record<string, Record<string, unknown>> }>

const files = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .sort()
const harness = await ReferenceHarness.start()
const rows: Array<[string, string, string]> = []
let unexpected = 0
for (const f of files) {
  const path = join(dir, f)
  const scenario = loadScenario(path)
  const ref = await harness.run({ file: path })
  let verdict: string
  let detail = ''
  if (ref.notComparable !== undefined) {
    verdict = 'not comparable'
    detail = ref.notComparable
  } else if (ref.failed !== undefined) {
    verdict = 'HARNESS FAILED'
    detail = ref.failed
    unexpected++
  } else {
    const [ours, theirs] = comparable(runScenario(scenario, path), ref.outputs ?? [])
    const same = theirs.length === ours.length && theirs.every((l, i) => l === ours[i])
    const listed = expectedDifferences[scenario.name]
    if (same) verdict = listed === undefined ? 'match' : 'MATCH BUT LISTED as an expected difference'
    else if (listed !== undefined) {
      verdict = 'expected difference'
      detail = listed.reason
      if (listed.punctualWith !== undefined) {
        // The listed setting must give Kafka Streams' output exactly.
        const topology: Record<string, unknown> = { ...scenario.topology }
        for (const [k, patch] of Object.entries(listed.punctualWith)) topology[k] = { ...(topology[k] as object), ...patch }
        const [variant] = comparable(runScenario({ ...scenario, topology } as typeof scenario, path), ref.outputs ?? [])
        const matches = variant.length === theirs.length && variant.every((l, i) => l === theirs[i])
        if (matches) verdict = `expected difference; with ${JSON.stringify(listed.punctualWith)}: match`
        else {
          verdict = `UNEXPECTED: with ${JSON.stringify(listed.punctualWith)} still different`
          unexpected++
        }
      }
    } else {
      verdict = 'UNEXPECTED DIFFERENCE'
      unexpected++
      detail = `punctual ${ours.join(' ')} | Kafka Streams ${theirs.join(' ')}`
    }
  }
  rows.push([scenario.name, verdict, detail])
}
await harness.close()
const w0 = Math.max(...rows.map((r) => r[0].length), 8)
const w1 = Math.max(...rows.map((r) => r[1].length), 7)
console.log(`${'scenario'.padEnd(w0)}  ${'verdict'.padEnd(w1)}  detail`)
for (const [name, verdict, detail] of rows) console.log(`${name.padEnd(w0)}  ${verdict.padEnd(w1)}  ${detail}`)
const count = (v: string): number => rows.filter((r) => r[1].startsWith(v)).length
console.log(`\n${count('match')} match, ${count('expected')} expected differences, ${count('not comparable')} not comparable, ${unexpected} unexpected`)
console.log(`kafka-streams: ${rows.length - count('not comparable') - unexpected} passed, ${unexpected} failed, ${count('not comparable')} skipped`)
process.exit(unexpected === 0 ? 0 : 1)
