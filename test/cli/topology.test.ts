import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { cli } from '../helpers/cli.js'
import { fileURLToPath } from 'node:url'
import { topologySvg } from '../../src/processor/topology-svg.js'
import { StreamsBuilder } from '../../src/index.js'

const APP = fileURLToPath(new URL('../fixtures/counter-app.ts', import.meta.url))
const root = mkdtempSync(join(tmpdir(), 'punctual-topology-'))
after(() => rmSync(root, { recursive: true, force: true }))

describe('punctual topology APP [--svg FILE]', () => {
  it("prints the app's describe() and draws it", async () => {
    const file = join(root, 'counter.svg')
    const { code, out, err } = await cli('topology', APP, '--svg', file)
    assert.equal(code, 0, err.join('\n'))
    assert.match(out.join('\n'), /^Topologies:\n {3}Sub-topology: 0\n/)
    const svg = readFileSync(file, 'utf8')
    assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/)
    assert.match(svg, />Sub-topology 0</)
  })

  it('a frame per sub-topology, a box per node and an arrow per parent link', () => {
    const b = new StreamsBuilder()
    b.stream<string, string>('clicks')
      .groupBy((_k, v) => v)
      .count({ name: 'per-page' })
      .toStream()
      .to('counts')
    const topology = b.build()
    const svg = topologySvg(topology)
    const subs = topology.subtopologies()
    const nodes = subs.flatMap((s) => s.nodes)
    const links = nodes.reduce((n, node) => n + (node.kind === 'source' ? 0 : node.parents.length), 0)
    assert.equal(subs.length, 2, 'the groupBy repartitions')
    assert.equal((svg.match(/class="frame"/g) ?? []).length, 2)
    assert.equal((svg.match(/<g class="node /g) ?? []).length, nodes.length)
    assert.equal((svg.match(/class="edge"/g) ?? []).length, links)
    for (const node of nodes) assert.ok(svg.includes(`: ${node.name}<`), `${node.name} is drawn`)
    assert.ok(svg.includes('stores: per-page'), 'stores are named')
    assert.ok(!/<text[^>]*>[^<]*[<>&"][^<]*<\/text>/.test(svg.replace(/&(amp|lt|gt|quot);/g, '')), 'text is escaped')
  })

  it('an app module without the app shape: exit 2, naming the command', async () => {
    const { code, err } = await cli('topology', fileURLToPath(new URL('../helpers/collect.ts', import.meta.url)))
    assert.equal(code, 2)
    assert.match(err.join('\n'), /punctual topology: .* must export default/)
  })
})
