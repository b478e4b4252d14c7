import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { PunctualError } from '../../src/errors.js'
import { KAFKA_CLIENT_INSTALL, loadOptional } from '../../src/kafka/client.js'

// Loading the installed client is tested with the broker (test/kafka-broker): its native binding is built
// for the Node.js that installed it, and the unit tests run on a second Node.js in CI too.
describe('the Kafka client, an optional peer dependency', () => {
  it('a missing client fails with the command that installs it', async () => {
    await assert.rejects(loadOptional('@punctual-test/not-installed', 'the Kafka runtime', KAFKA_CLIENT_INSTALL), (err: unknown) => {
      assert.ok(err instanceof PunctualError)
      assert.equal(err.code, 'DEPENDENCY_MISSING')
      assert.match(err.message, /the Kafka runtime needs @punctual-test\/not-installed, which is not installed: npm install @confluentinc\/kafka-javascript \(where its prebuilt binary cannot be downloaded: CKJS_LINKING=dynamic npm install/)
      return true
    })
  })
})
