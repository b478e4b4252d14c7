#!/usr/bin/env node
// Thin launcher: the CLI is compiled to dist/ by `npm run build` (a packed package ships it built; a
// clone builds it with `npm run build`, which `npm test` runs first).
let cli
try {
  cli = await import('../dist/cli/main.js')
} catch (err) {
  if (err?.code !== 'ERR_MODULE_NOT_FOUND' || !String(err.message).includes('dist')) throw err
  console.error('punctual: the CLI is not built here (no dist/): run `npm run build` in the punctual folder first')
  process.exit(2)
}

cli.main(process.argv).then(
  (code) => {
    process.exitCode = code
  },
  (err) => {
    console.error(err instanceof Error ? err.message : err)
    process.exitCode = 2
  },
)
