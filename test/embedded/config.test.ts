import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { validateEmbeddedConfig } from '../../src/embedded/config.js'

describe('embedded runtime config', () => {
  it('commits every 100 ms, and a durable run also every 20,000 records, by default (docs/runtime.md)', () => {
    const c = validateEmbeddedConfig({ applicationId: 'a' })
    assert.equal(c.commitIntervalMs, 100)
    assert.equal(c.commitMaxRecords, 20_000)
  })

  it('refuses a commitMaxRecords below 1, naming it', () => {
    assert.throws(() => validateEmbeddedConfig({ applicationId: 'a', commitMaxRecords: 0 }), /commitMaxRecords/)
  })
})
