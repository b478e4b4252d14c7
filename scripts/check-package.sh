#!/usr/bin/env bash
# Installs the packed package into a fresh app, as a user would (npm pack, npm install the tarball), then
# type-checks the README's code and every docs/*.md example strictly against the published typings and runs
# the README's minimal app with `punctual run`. Needs the npm registry for the app's other dependencies.
#
# The rule for docs/*.md: a doc's ```ts blocks, in order, form one module, so a later fragment uses what an
# earlier one imported or declared (`declare const topology: Topology` states what a fragment takes as
# given). Every ```ts block compiles; what is not a program (shell, output, signatures) goes in ```sh,
# ```text or a bare fence. No other fence is allowed, so TypeScript cannot slip past under ```typescript.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
app="$(mktemp -d)"
trap 'rm -rf "$app" "$root"/punctual-*.tgz' EXIT
tarball="$root/$(npm pack --silent | tail -1)"
cd "$app"
npm init -y >/dev/null
npm pkg set type=module
npm install --no-audit --no-fund --loglevel=error "$tarball" tsx typescript@~5.9.3 @types/node@20 >/dev/null
cat > tsconfig.json <<'JSON'
{ "compilerOptions": { "target": "ES2022", "module": "NodeNext", "moduleResolution": "NodeNext", "strict": true, "noEmit": true, "skipLibCheck": false, "types": ["node"] } }
JSON
# The README's blocks: the minimal app, the tour (processor, test driver, DSL, joins, queries).
node - "$root/README.md" <<'JS'
const { readFileSync, writeFileSync } = await import('node:fs')
const blocks = [...readFileSync(process.argv[2], 'utf8').matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1])
writeFileSync('app.ts', blocks[0])
const imports = "import { BufferConfig, EmbeddedRuntime, JoinWindows, Materialized, Produced, QueryableStoreTypes, StreamsBuilder, Suppressed, TimeWindows, silentLogger } from 'punctual'\nimport type { Windowed } from 'punctual'\n"
writeFileSync('tour.ts', imports + blocks[1] + blocks[2] + '\nconst builder = new StreamsBuilder()\n' + blocks[3] + blocks[4] + blocks[5])
JS
# Each docs/X.md becomes the module docs/X.ts: its ```ts blocks' lines in place, every other line blank (so
# tsc's line and column numbers are the doc's), then `export {}` (a module even without an import).
mkdir docs
node - "$root/docs" <<'JS'
const { readdirSync, readFileSync, writeFileSync } = await import('node:fs')
const counts = []
for (const doc of readdirSync(process.argv[2]).filter((f) => f.endsWith('.md')).sort()) {
  let fence = null // the open fence's language, or null outside a fence
  let blocks = 0
  const lines = readFileSync(`${process.argv[2]}/${doc}`, 'utf8').split('\n').map((line, i) => {
    const open = line.match(/^ *```(.*)$/)
    if (fence === null && open) {
      fence = open[1].trim()
      if (!['ts', 'sh', 'text', ''].includes(fence)) throw new Error(`docs/${doc}:${i + 1}: fence \`\`\`${fence}: use ts (checked), sh, text or none`)
      if (fence === 'ts') blocks++
      return ''
    }
    if (fence !== null && /^ *```\s*$/.test(line)) fence = null
    return fence === 'ts' ? line : ''
  })
  if (fence !== null) throw new Error(`docs/${doc}: a fence is not closed`)
  if (blocks > 0) writeFileSync(`docs/${doc.replace(/\.md$/, '.ts')}`, lines.join('\n') + '\nexport {}\n')
  counts.push(`${doc} ${blocks}`)
}
console.log(`docs' ts blocks checked: ${counts.join(', ')}`)
JS
# A published package runs nothing at install: no lifecycle script that npm would run (or ask to approve), and
# it pulls in no Kafka client (an optional peer dependency; the repository's optional dependency is for a clone).
node -e "const p = require('./node_modules/punctual/package.json'); const s = p.scripts ?? {}; const run = ['preinstall', 'install', 'postinstall', 'prepare'].filter((k) => k in s); if (run.length) { console.error('the package runs scripts at install: ' + run.join(', ')); process.exit(1) } if (p.optionalDependencies !== undefined) { console.error('the package has optional dependencies: ' + Object.keys(p.optionalDependencies).join(', ')); process.exit(1) }"
[ ! -e "$root/.package.json.before-pack" ] || { echo "npm pack left package.json stripped (.package.json.before-pack remains)" >&2; exit 1; }
npx tsc -p .
tour="$(npx tsx tour.ts)"
[ "$tour" = "1 [ [ '/home', 1 ] ]" ] || { echo "the README's query printed '$tour', not \"1 [ [ '/home', 1 ] ]\"" >&2; exit 1; }
out="$(npx punctual run app.ts --state-dir ./state 2>/dev/null)"
[ "$out" = "k HELLO" ] || { echo "the README's app printed '$out', not 'k HELLO'" >&2; exit 1; }
npx punctual scenario run node_modules/punctual/conformance/scenarios --check | tail -1
# The live page's static files ship beside the bundle: the installed package serves them.
cat > live.mjs <<'JS'
import { EmbeddedRuntime, Topology, silentLogger } from 'punctual'
const rt = new EmbeddedRuntime(new Topology().addSource('in', 'input'), { applicationId: 'pkg', logger: silentLogger, metrics: { port: 0 } })
await rt.start()
const { pageUrl } = await rt.metricsAddress()
for (const [path, text] of [['', '<title>punctual</title>'], ['live.js', 'EventSource'], ['topology.svg', 'Source: in']]) {
  const body = await (await fetch(pageUrl + path)).text()
  if (!body.includes(text)) throw new Error(`${pageUrl}${path} does not serve the live page's file`)
}
await rt.stop()
JS
node live.mjs
echo "package check: installed from the tarball, README and docs code type-checks, the README app runs, the live page is served"
