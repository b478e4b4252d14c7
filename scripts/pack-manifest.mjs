#!/usr/bin/env node
// `npm pack` / `npm publish`: the repository's package.json lists the Kafka client as an optional dependency,
// so that a clone installs it where it can and installs anyway where it cannot. A user's install must not pull
// it in (it is an optional peer dependency: only the Kafka runtime needs it). `strip` (prepack) removes the
// optional dependencies from package.json, keeping the original beside it; `restore` (postpack) puts it back.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs'

const manifest = 'package.json'
const kept = '.package.json.before-pack'
const mode = process.argv[2]
if (mode === 'strip') {
  // A pack that failed after stripping left the original aside: start from it.
  if (existsSync(kept)) renameSync(kept, manifest)
  const text = readFileSync(manifest, 'utf8')
  const pkg = JSON.parse(text)
  writeFileSync(kept, text)
  delete pkg.optionalDependencies
  writeFileSync(manifest, `${JSON.stringify(pkg, null, 2)}\n`)
} else if (mode === 'restore') {
  if (existsSync(kept)) renameSync(kept, manifest)
} else {
  console.error('usage: pack-manifest.mjs strip|restore')
  process.exit(2)
}
