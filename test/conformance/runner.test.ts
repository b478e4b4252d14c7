import assert from 'node:assert/strict'
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { main } from '../../src/cli/main.js'

const SCENARIOS = new URL('../../conformance/scenarios/', import.meta.url).pathname

async function cli(...args: string[]): Promise<{ code: number; out: string[]; err: string[] }> {
  const out: string[] = []
  const err: string[] = []
  const code = await main(['node', 'punctual', ...args], { out: (l) => out.push(l), err: (l) => err.push(l) })
  return { code, out, err }
}

function scenarioFile(content: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), 'punctual-scenario-'))
  const file = join(dir, 'case.json')
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content))
  return file
}

const wallScenario = {
  name: 'wall',
  topology: { kind: 'punctuate', schedules: [{ id: 'p', type: 'wall', intervalMs: 10 }] },
  steps: [{ advanceWallClockMs: 5 }, { advanceWallClockMs: 5 }, { advanceWallClockMs: 35 }],
  expect: [
    { step: 1, punctuation: 'p', ts: 10 },
    { step: 2, punctuation: 'p', ts: 45 },
  ],
}

describe('punctual scenario run', () => {
  it('passes every punctuate scenario of conformance/scenarios with --check', async () => {
    const r = await cli('scenario', 'run', SCENARIOS, '--check', '--kinds', 'punctuate')
    assert.equal(r.code, 0, r.out.join('\n'))
    assert.match(r.out.at(-1) ?? '', /^5 passed, 0 failed, \d+ skipped$/)
  })

  it('passes every keyed-timers scenario of conformance/scenarios with --check', async () => {
    const r = await cli('scenario', 'run', SCENARIOS, '--check', '--kinds', 'keyed-timers')
    assert.equal(r.code, 0, r.out.join('\n'))
    assert.match(r.out.at(-1) ?? '', /^3 passed, 0 failed, \d+ skipped$/)
  })

  it('prints outputs as JSON lines in FORMAT field order', async () => {
    const r = await cli('scenario', 'run', scenarioFile(wallScenario))
    assert.equal(r.code, 0)
    assert.deepEqual(r.out, ['{"step":1,"punctuation":"p","ts":10}', '{"step":2,"punctuation":"p","ts":45}'])
  })

  it('--check exits 1 with a readable diff on a mismatch', async () => {
    const r = await cli('scenario', 'run', scenarioFile({ ...wallScenario, expect: [{ step: 1, punctuation: 'p', ts: 11 }] }), '--check')
    assert.equal(r.code, 1)
    const text = r.out.join('\n')
    assert.match(text, /- \{"step":1,"punctuation":"p","ts":11\}/)
    assert.match(text, /\+ \{"step":1,"punctuation":"p","ts":10\}/)
  })

  it('supports schedule and cancel steps', async () => {
    const file = scenarioFile({
      name: 'sc',
      topology: { kind: 'punctuate', schedules: [] },
      steps: [{ schedule: { id: 'x', type: 'stream', intervalMs: 10 } }, { record: { key: 'k', value: 'v', ts: 3 } }, { cancel: 'x' }, { record: { key: 'k', value: 'v', ts: 30 } }],
    })
    const r = await cli('scenario', 'run', file)
    assert.deepEqual(r.out, ['{"step":1,"punctuation":"x","ts":3}'])
  })

  it('runs recordsFromFile steps, stamping the line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'punctual-scenario-'))
    writeFileSync(join(dir, 'records.jsonl'), ['{"key":"k","value":"v","ts":5}', '{"key":"k","value":"v","ts":-1}', '{"key":"k","value":"v","ts":12}'].join('\n'))
    writeFileSync(
      join(dir, 's.json'),
      JSON.stringify({ name: 'f', topology: { kind: 'punctuate', schedules: [{ id: 'p', type: 'stream', intervalMs: 10 }] }, steps: [{ recordsFromFile: 'records.jsonl' }] }),
    )
    const r = await cli('scenario', 'run', join(dir, 's.json'))
    assert.deepEqual(r.out, ['{"step":0,"line":0,"punctuation":"p","ts":5}', '{"step":0,"line":2,"punctuation":"p","ts":12}'])
  })

  it('exits 2 naming the field of a malformed scenario', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ ...wallScenario, steps: 'no' }, /field "steps" must be an array/],
      [{ ...wallScenario, topology: { kind: 'sorcery' } }, /field "topology.kind" is unknown: "sorcery"/],
      [{ ...wallScenario, steps: [{ record: { key: 'k', value: 'v' } }] }, /field "steps\[0\].record.ts" must be an integer/],
      [{ ...wallScenario, topology: { kind: 'punctuate', schedules: [{ id: 'p', type: 'wall', intervalMs: 0 }] } }, /intervalMs must be an integer >= 1, got 0/],
      ['{not json', /is not valid JSON/],
      [
        { name: 'j', topology: { kind: 'stream-stream-join', join: 'inner', windows: { timeDifferenceMs: 1 } }, steps: [{ record: { topic: 'middle', key: 'k', value: 'v', ts: 1 } }] },
        /field "steps\[0\].record.topic" must be one of "left", "right" for kind stream-stream-join, got "middle"/,
      ],
      [{ name: 'j', topology: { kind: 'stream-stream-join', join: 'cross', windows: { timeDifferenceMs: 1 } }, steps: [] }, /field "topology.join" must be "inner", "left" or "outer"/],
      [{ ...wallScenario, timestampExtractor: { from: 'key' } }, /field "timestampExtractor.from" must be one of ts, value, wallClock, got "key"/],
      [{ ...wallScenario, timestampExtractor: { from: 'value', onInvalid: 'guess' } }, /field "timestampExtractor.onInvalid" must be one of fail, logAndSkip, usePartitionTime, useWallClock, got "guess"/],
      [{ ...wallScenario, timestampExtractor: { from: 'wallClock', onInvalid: 'fail' } }, /field "timestampExtractor.onInvalid" does not apply with from "wallClock"/],
    ]
    for (const [content, message] of cases) {
      const r = await cli('scenario', 'run', scenarioFile(content))
      assert.equal(r.code, 2)
      assert.match(r.err.join('\n'), message)
    }
  })

  it('passes every scenario of conformance/scenarios with --check', async () => {
    const r = await cli('scenario', 'run', SCENARIOS, '--check')
    assert.equal(r.code, 0, r.out.join('\n'))
    assert.equal(r.out.at(-1), `${readdirSync(SCENARIOS).filter((f) => f.endsWith('.json')).length} passed, 0 failed`)
  })

  it('with several files and --check prints one line per failing file and a summary', async () => {
    const good = scenarioFile(wallScenario)
    const bad = scenarioFile({ ...wallScenario, expect: [] })
    const r = await cli('scenario', 'run', good, bad, '--check')
    assert.equal(r.code, 1)
    assert.equal(r.out.length, 2)
    assert.match(r.out[0]!, /^FAIL case.json: outputs differ/)
    assert.equal(r.out[1], '1 passed, 1 failed')
  })
})
