import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { EmbeddedRuntime, Serdes, silentLogger, StreamsBuilder } from '../../src/index.js'
import type { TaskEvent } from '../../src/index.js'
import { ManualClock } from '../../src/testing/index.js'

describe("task lifecycle events (runtime.on('task'))", () => {
  it('assigned and running at start; revoked; assigned again, restoring from its changelog records, then running', async () => {
    const b = new StreamsBuilder()
    b.stream<string, string>('input').groupByKey().count({ name: 'counts' })
    const rt = new EmbeddedRuntime(b.build(), { applicationId: 'events', clock: new ManualClock(0), topics: { input: { partitions: 2 } }, logger: silentLogger })
    const events: string[] = []
    const show = (e: TaskEvent): string =>
      e.type === 'restoring' ? `${e.taskId} restoring from ${e.from} (${e.restored} read, ${e.remaining} to go)` : e.type === 'running' ? `${e.taskId} running (${e.restored} restored)` : `${e.taskId} ${e.type}`
    rt.on('task', (e) => void events.push(show(e)))
    await rt.start()
    assert.deepEqual(events, ['0_0 assigned', '0_1 assigned', '0_0 running (0 restored)', '0_1 running (0 restored)'])
    const input = rt.producer('input', { keySerde: Serdes.String(), valueSerde: Serdes.String() })
    for (let i = 0; i < 20; i++) input.send(`k${i}`, 'v', i)
    await rt.idle()
    const onOne = rt.metrics().tasks.find((t) => t.taskId === '0_1')?.processedRecords ?? 0
    assert.ok(onOne > 0, 'some keys on partition 1')

    events.length = 0
    await rt.revokeTasks(['0_1'])
    await rt.assignTasks(['0_1'])
    await rt.idle()
    assert.equal(events[0], '0_1 revoked')
    assert.equal(events[1], '0_1 assigned')
    assert.match(events[2] ?? '', /^0_1 restoring from changelog \(0 read, \d+ to go\)$/)
    // One changelog record per key of the task, and its clocks and position.
    assert.match(events.at(-1) ?? '', /^0_1 running \(\d+ restored\)$/)
    const restored = Number(/\((\d+) restored\)/.exec(events.at(-1) ?? '')?.[1])
    assert.ok(restored >= onOne, `${restored} records restored for ${onOne} keys`)
    await rt.stop()
  })
})
