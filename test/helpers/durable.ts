import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { EmbeddedRuntime, silentLogger } from '../../src/index.js'
import type { Topology } from '../../src/index.js'

/** A state directory path in a new temporary folder (the runtime creates the directory itself). */
export const freshStateDir = (): string => join(mkdtempSync(join(tmpdir(), 'punctual-durable-')), 'state')

/**
 * Feeds `records` (key, timestamp; value 'v', topic 'in') to one in-memory run, and in three thirds to
 * three durable runs on one state directory (a commit every 7 records); returns both outputs. `build`
 * gets the part: 'whole' for the in-memory run, 0 to 2 for the durable ones (a restart may change the
 * topology).
 */
export async function oneRunAndThree(
  applicationId: string,
  build: (out: string[], part: 'whole' | 0 | 1 | 2) => Topology,
  records: ReadonlyArray<readonly [string, number]>,
): Promise<{ once: string[]; resumed: string[] }> {
  const once: string[] = []
  const whole = new EmbeddedRuntime(build(once, 'whole'), { applicationId, logger: silentLogger })
  await whole.start()
  for (const [k, ts] of records) whole.producer('in').send(k, 'v', ts)
  await whole.stop()
  const dir = freshStateDir()
  const resumed: string[] = []
  const third = Math.ceil(records.length / 3)
  for (const part of [0, 1, 2] as const) {
    const rt = new EmbeddedRuntime(build(resumed, part), { applicationId, stateDir: dir, commitMaxRecords: 7, logger: silentLogger })
    await rt.start()
    for (const [k, ts] of records.slice(part * third, part * third + third)) rt.producer('in').send(k, 'v', ts)
    await rt.stop()
  }
  return { once, resumed }
}
