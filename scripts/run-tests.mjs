#!/usr/bin/env node
// Runs every test/**/*.test.ts with node's test runner through tsx, but those under test/kafka-broker, which
// need a broker (`npm run test:kafka`). Node 20's --test takes no globs, so the files are listed here.
// Extra arguments (e.g. a path filter) narrow the list.
// A test that never settles fails after 10 minutes. No --test-force-exit: on Node 24 it ended a file's process
// before its later suites had run, with no failure reported (test/dsl/dsl.test.ts reported 15 to 25 of its 25
// tests), so a file must exit by itself (a failed test that leaves a runtime running keeps its file open until the
// CI's time limit ends the run).
// The tests' temporary directories (state directories, spill files, crash-test runs) go under one folder
// of this run (TMPDIR), removed at the end: a run leaves nothing behind.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, sep } from 'node:path'

function find(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? find(join(dir, e.name)) : e.name.endsWith('.test.ts') ? [join(dir, e.name)] : [],
  )
}

const filters = process.argv.slice(2)
const files = find('test')
  .filter((f) => !f.startsWith(join('test', 'kafka-broker') + sep))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort()
if (files.length === 0) {
  console.error('no test files matched')
  process.exit(1)
}
const scratch = mkdtempSync(join(tmpdir(), 'punctual-tests-'))
const r = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-timeout=600000', ...files], {
  stdio: 'inherit',
  env: { ...process.env, TMPDIR: scratch },
})
rmSync(scratch, { recursive: true, force: true })
process.exit(r.status ?? 1)
