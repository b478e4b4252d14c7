import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { validateKafkaRuntimeConfig } from '../../src/kafka/config.js'
import type { KafkaRuntimeConfig } from '../../src/kafka/config.js'
import { chooseGroupProtocol } from '../../src/kafka/group-protocol.js'
import type { GroupFacts } from '../../src/kafka/streams-group/group-probe.js'

const config = (more: Partial<KafkaRuntimeConfig> = {}) => validateKafkaRuntimeConfig({ applicationId: 'app', bootstrapServers: 'localhost:9092', ...more })

/** A probe answering `facts`, counting its calls. */
function probe(facts: GroupFacts | undefined | Error): { ask: () => Promise<GroupFacts | undefined>; calls: () => number } {
  let calls = 0
  return {
    ask: async () => {
      calls++
      if (facts instanceof Error) throw facts
      return facts
    },
    calls: () => calls,
  }
}

describe('the default group protocol', () => {
  it('is a streams group where the cluster has them and the group is new or a streams group', async () => {
    assert.deepEqual(await chooseGroupProtocol(config(), probe({ streamsGroups: true, groupType: undefined }).ask), { protocol: 'streams', why: 'the cluster has streams groups (KIP-1071) and group app is new' })
    assert.deepEqual(await chooseGroupProtocol(config(), probe({ streamsGroups: true, groupType: 'streams' }).ask), { protocol: 'streams', why: 'group app is a streams group' })
  })

  it('is a consumer group, saying why, where a streams group cannot be', async () => {
    const why = async (c: ReturnType<typeof config>, facts: GroupFacts | undefined | Error, supplied = true) => {
      const choice = await chooseGroupProtocol(c, supplied ? probe(facts).ask : undefined)
      assert.equal(choice.protocol, 'consumer')
      return choice.why
    }
    assert.equal(await why(config(), { streamsGroups: true, groupType: 'consumer' }), 'not a streams group, as group app is a consumer group already, and a group does not change protocol in place')
    assert.equal(await why(config(), { streamsGroups: true, groupType: 'classic' }), 'not a streams group, as group app is a classic group already, and a group does not change protocol in place')
    assert.equal(await why(config(), { streamsGroups: false, groupType: undefined }), 'not a streams group, as the cluster has no streams groups (KIP-1071: Kafka 4.2 and later, with streams groups enabled)')
    assert.equal(await why(config(), undefined), 'not a streams group, as @platformatic/kafka, whose connections a streams group speaks over, is not installed')
    assert.equal(await why(config(), undefined, false), 'not a streams group, as @platformatic/kafka, whose connections a streams group speaks over, is not installed')
    assert.equal(await why(config(), new Error('connection refused')), 'not a streams group, as asking the cluster whether it has streams groups failed (connection refused)')
  })

  it('does not ask the cluster when the settings decide: set, directFetch false, security the connections cannot honour', async () => {
    const p = probe({ streamsGroups: true, groupType: undefined })
    assert.deepEqual(await chooseGroupProtocol(config({ groupProtocol: 'consumer' }), p.ask), { protocol: 'consumer', why: "groupProtocol 'consumer' is set" })
    assert.deepEqual(await chooseGroupProtocol(config({ groupProtocol: 'streams' }), p.ask), { protocol: 'streams', why: "groupProtocol 'streams' is set" })
    assert.deepEqual(await chooseGroupProtocol(config({ directFetch: false }), p.ask), { protocol: 'consumer', why: "not a streams group, as directFetch is false, and a streams group speaks over the direct fetch's connections" })
    const kerberos = await chooseGroupProtocol(config({ client: { 'security.protocol': 'SASL_SSL', 'sasl.mechanisms': 'GSSAPI' } }), p.ask)
    assert.equal(kerberos.protocol, 'consumer')
    assert.match(kerberos.why, /cannot honour the security settings: "sasl.mechanisms" is GSSAPI/)
    assert.equal(p.calls(), 0)
  })
})
