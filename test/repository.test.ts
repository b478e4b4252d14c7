// The repository stands on its own: a user who clones it has nothing beside it.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

describe('the repository', () => {
  it('reads nothing outside itself: no file refers to a folder beside the clone', () => {
    const files = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' }).split('\n').filter((f) => /\.(ts|mjs|js|json|sh|java|xml)$|^\.ci\//.test(f))
    assert.ok(files.length > 50, 'git lists the tracked files')
    // A file deleted in the working tree (not yet committed) is still listed by git: skip it.
    const offenders = files.filter((f) => existsSync(`${ROOT}/${f}`) && /\.\.\/shared\b|\.\.\/\.\.\/\.\.\/shared\b/.test(readFileSync(`${ROOT}/${f}`, 'utf8')))
    assert.deepEqual(offenders, [])
  })

  it('ships a LICENSE that matches package.json', () => {
    const pkg = JSON.parse(readFileSync(`${ROOT}/package.json`, 'utf8')) as { license: string }
    assert.equal(pkg.license, 'Apache-2.0')
    assert.match(readFileSync(`${ROOT}/LICENSE`, 'utf8'), /Apache License\s+Version 2\.0/)
  })
})
