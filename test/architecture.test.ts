// The layers of docs/architecture.md are enforced by lint: a wrong import fails `npm run lint`.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { ESLint } from 'eslint'

const eslint = new ESLint({ cwd: fileURLToPath(new URL('..', import.meta.url)) })

async function restricted(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath })
  return (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message)
}

describe('layers enforced by lint', () => {
  it('refuses an engine module importing a runtime, the test kit or the command line', async () => {
    assert.equal((await restricted('src/keyed/x.ts', "import { EmbeddedRuntime } from '../embedded/embedded-runtime.js'\nexport const r = EmbeddedRuntime\n")).length, 1)
    assert.equal((await restricted('src/state/x.ts', "import { EmbeddedRuntime } from '../embedded/embedded-runtime.js'\nexport const r = EmbeddedRuntime\n")).length, 1)
    assert.match((await restricted('src/processor/internal/x.ts', "import { TopologyTestDriver } from '../../testing/test-driver.js'\nexport const d = TopologyTestDriver\n"))[0] ?? '', /engine does not know/)
  })

  it('refuses a task reading the embedded log: it reads through InputPartition', async () => {
    assert.match((await restricted('src/processor/internal/x.ts', "import { PartitionLog } from '../../embedded/log/partition-log.js'\nexport const l = PartitionLog\n"))[0] ?? '', /InputPartition/)
  })

  it('refuses the shared runtime importing either runtime, and each runtime the other', async () => {
    assert.match((await restricted('src/runtime/x.ts', "import { EmbeddedRuntime } from '../embedded/embedded-runtime.js'\nexport const r = EmbeddedRuntime\n"))[0] ?? '', /both runtimes share/)
    assert.match((await restricted('src/runtime/x.ts', "import { TopicRegistry } from '../embedded/log/topics.js'\nexport const t = TopicRegistry\n"))[0] ?? '', /both runtimes share/)
    assert.match((await restricted('src/runtime/x.ts', "import { KafkaRuntime } from '../kafka/kafka-runtime.js'\nexport const r = KafkaRuntime\n"))[0] ?? '', /both runtimes share/)
    assert.match((await restricted('src/embedded/x.ts', "import { KafkaRuntime } from '../kafka/kafka-runtime.js'\nexport const r = KafkaRuntime\n"))[0] ?? '', /not the Kafka runtime/)
    assert.match((await restricted('src/embedded/log/x.ts', "import { KafkaRuntime } from '../../kafka/kafka-runtime.js'\nexport const r = KafkaRuntime\n"))[0] ?? '', /embedded runtime's log/)
    assert.match((await restricted('src/kafka/x.ts', "import { EmbeddedRuntime } from '../embedded/embedded-runtime.js'\nexport const r = EmbeddedRuntime\n"))[0] ?? '', /not the embedded runtime/)
    assert.match((await restricted('src/kafka/x.ts', "import { TopicRegistry } from '../embedded/log/topics.js'\nexport const t = TopicRegistry\n"))[0] ?? '', /not the embedded runtime/)
  })

  it('refuses the engine importing the shared runtime or either runtime', async () => {
    for (const folder of ['processor', 'keyed', 'windows', 'suppress', 'joins', 'dsl', 'state', 'query']) {
      for (const path of ['../runtime/task-loop.js', '../embedded/embedded-runtime.js', '../embedded/log/topics.js', '../kafka/kafka-runtime.js']) {
        assert.equal((await restricted(`src/${folder}/x.ts`, `import { X } from '${path}'\nexport const x = X\n`)).length, 1, `src/${folder} importing ${path}`)
      }
    }
  })

  it('refuses keyed state, windows, suppression and joins importing the task that runs them', async () => {
    assert.match((await restricted('src/keyed/x.ts', "import { StreamTask } from '../processor/internal/task.js'\nexport const t = StreamTask\n"))[0] ?? '', /processor\/internal\) uses them/)
    assert.equal((await restricted('src/suppress/x.ts', "import { ProcessorNode } from '../processor/internal/nodes.js'\nexport const n = ProcessorNode\n")).length, 1)
    assert.equal((await restricted('src/joins/x.ts', "import { ProcessorNode } from '../processor/internal/nodes.js'\nexport const n = ProcessorNode\n")).length, 1)
    assert.equal((await restricted('src/joins/x.ts', "import { EmbeddedRuntime } from '../embedded/embedded-runtime.js'\nexport const r = EmbeddedRuntime\n")).length, 1)
  })

  it('refuses time and util importing the layers above them, and the topics importing state', async () => {
    assert.equal((await restricted('src/time/x.ts', "import { Topology } from '../processor/topology.js'\nexport const t = Topology\n")).length, 1)
    assert.equal((await restricted('src/util/x.ts', "import { systemClock } from '../time/clock.js'\nexport const c = systemClock\n")).length, 1)
    assert.equal((await restricted('src/embedded/log/x.ts', "import { Stores } from '../../state/stores.js'\nexport const s = Stores\n")).length, 1)
    assert.equal((await restricted('src/embedded/log/x.ts', "import { TaskLoop } from '../../runtime/task-loop.js'\nexport const l = TaskLoop\n")).length, 1)
    assert.equal((await restricted('src/state/x.ts', "import { DurableLog } from '../embedded/log/durable-log.js'\nexport const l = DurableLog\n")).length, 1)
  })

  it('refuses the public processor API importing what runs it', async () => {
    assert.equal((await restricted('src/processor/api.ts', "import { StreamTask } from './internal/task.js'\nexport const t = StreamTask\n")).length, 1)
  })

  it('accepts the imports the layers allow', async () => {
    assert.deepEqual(await restricted('src/runtime/x.ts', "import { StreamTask } from '../processor/internal/task.js'\nexport const t = StreamTask\n"), [])
    assert.deepEqual(await restricted('src/keyed/x.ts', "import { Alarm } from '../time/alarm.js'\nexport const a = Alarm\n"), [])
    assert.deepEqual(await restricted('src/embedded/x.ts', "import { TaskLoop } from '../runtime/task-loop.js'\nexport const l = TaskLoop\n"), [])
    assert.deepEqual(await restricted('src/kafka/x.ts', "import { TaskLoop } from '../runtime/task-loop.js'\nexport const l = TaskLoop\n"), [])
    assert.deepEqual(await restricted('src/embedded/log/x.ts', "import { RecordPartitioner } from '../../processor/partitioner.js'\nexport const p = RecordPartitioner\n"), [])
    assert.deepEqual(await restricted('src/testing/x.ts', "import { TopicRegistry } from '../embedded/log/topics.js'\nexport const t = TopicRegistry\n"), [])
    assert.deepEqual(await restricted('src/cli/x.ts', "import { KafkaRuntime } from '../kafka/kafka-runtime.js'\nexport const r = KafkaRuntime\n"), [])
  })
})
