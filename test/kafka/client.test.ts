import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { PunctualError } from '../../src/errors.js'
import { KAFKA_CLIENT_INSTALL, loadKafkaClient, loadOptional } from '../../src/kafka/client.js'

describe('the Kafka client, an optional peer dependency', () => {
  it('a missing client fails with the command that installs it', async () => {
    await assert.rejects(loadOptional('@punctual-test/not-installed', 'the Kafka runtime', KAFKA_CLIENT_INSTALL), (err: unknown) => {
      assert.ok(err instanceof PunctualError)
      assert.equal(err.code, 'DEPENDENCY_MISSING')
      assert.match(err.message, /the Kafka runtime needs @punctual-test\/not-installed, which is not installed: npm install @confluentinc\/kafka-javascript \(without internet access: CKJS_LINKING=dynamic npm install/)
      return true
    })
  })

  it('loads once installed (a dev dependency here), once per process', async () => {
    const client = await loadKafkaClient()
    assert.equal(typeof client.KafkaJS.Kafka, 'function')
    assert.equal(await loadKafkaClient(), client)
  })
})
