import type { NodeDef, Topology } from './topology.js'

const NODE_HEIGHT = 40
const GAP_X = 48
const GAP_Y = 14
const PAD = 16
const TITLE = 24
const CHAR_WIDTH = 7

/** A node's two lines: what it is and its name, then its topics or stores. */
function labels(node: NodeDef): [string, string] {
  if (node.kind === 'source') return [`Source: ${node.name}`, `topics: ${node.topics.join(', ')}`]
  if (node.kind === 'sink') return [`Sink: ${node.name}`, `topic: ${node.topic}`]
  return [`${node.keyed ? 'Keyed processor' : 'Processor'}: ${node.name}`, node.stores.size === 0 ? '' : `stores: ${[...node.stores].join(', ')}`]
}

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
}

/**
 * The topology as an SVG drawing: one frame per sub-topology, its nodes in columns by depth (sources
 * first, each node one column right of its deepest parent), an arrow from each parent to its child. Plain
 * SVG, no script and no external font, so any browser or image viewer shows it.
 */
export function topologySvg(topology: Topology): string {
  const parts: string[] = []
  let y = PAD
  let width = 0
  for (const sub of topology.subtopologies()) {
    const depth = new Map<string, number>()
    for (const node of sub.nodes) depth.set(node.name, node.kind === 'source' ? 0 : Math.max(...node.parents.map((p) => (depth.get(p) ?? 0) + 1)))
    const columns: NodeDef[][] = []
    for (const node of sub.nodes) (columns[depth.get(node.name) as number] ??= []).push(node)
    const columnWidth = columns.map((nodes) => Math.max(...nodes.flatMap((n) => labels(n).map((l) => l.length))) * CHAR_WIDTH + 2 * 10)
    const rows = Math.max(...columns.map((c) => c.length))
    const frameHeight = TITLE + rows * (NODE_HEIGHT + GAP_Y) + GAP_Y
    const frameWidth = columnWidth.reduce((a, b) => a + b, 0) + (columns.length + 1) * GAP_X
    parts.push(`<rect x="${PAD}" y="${y}" width="${frameWidth}" height="${frameHeight}" rx="6" class="frame"/>`)
    parts.push(`<text x="${PAD + 10}" y="${y + 17}" class="title">Sub-topology ${sub.id}</text>`)
    const at = new Map<string, { x: number; y: number; w: number }>()
    let x = PAD + GAP_X
    columns.forEach((nodes, c) => {
      const w = columnWidth[c] as number
      nodes.forEach((node, r) => {
        const ny = y + TITLE + GAP_Y + r * (NODE_HEIGHT + GAP_Y)
        at.set(node.name, { x, y: ny, w })
        const [first, second] = labels(node)
        parts.push(`<g class="node ${node.kind}" data-node="${escape(node.name)}"><rect x="${x}" y="${ny}" width="${w}" height="${NODE_HEIGHT}" rx="4"/>`)
        parts.push(`<text x="${x + 10}" y="${ny + 16}">${escape(first)}</text>${second === '' ? '' : `<text x="${x + 10}" y="${ny + 32}" class="detail">${escape(second)}</text>`}</g>`)
      })
      x += w + GAP_X
    })
    for (const node of sub.nodes) {
      if (node.kind === 'source') continue
      const to = at.get(node.name) as { x: number; y: number }
      for (const parent of node.parents) {
        const from = at.get(parent) as { x: number; y: number; w: number }
        const x1 = from.x + from.w
        const y1 = from.y + NODE_HEIGHT / 2
        const y2 = to.y + NODE_HEIGHT / 2
        parts.push(`<path d="M${x1},${y1} C${x1 + GAP_X / 2},${y1} ${to.x - GAP_X / 2},${y2} ${to.x - 2},${y2}" class="edge" marker-end="url(#arrow)"/>`)
      }
    }
    width = Math.max(width, frameWidth + 2 * PAD)
    y += frameHeight + PAD
  }
  const style = [
    'text { font: 12px monospace; fill: #222 }',
    '.title { font-weight: bold }',
    '.detail { fill: #666 }',
    '.frame { fill: #fafafa; stroke: #bbb }',
    '.node rect { fill: #fff; stroke: #555 }',
    '.source rect { fill: #e8f1fb }',
    '.sink rect { fill: #eaf7ea }',
    '.edge { fill: none; stroke: #555 }',
  ].join(' ')
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${y}" viewBox="0 0 ${width} ${y}">`,
    `<style>${style}</style>`,
    '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>',
    ...parts,
    '</svg>',
    '',
  ].join('\n')
}
