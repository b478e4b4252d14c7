import { writeFileSync } from 'node:fs'
import { PunctualError } from '../errors.js'
import type { Io } from './scenario-command.js'
import { loadApp } from './run-command.js'
import { topologySvg } from '../processor/topology-svg.js'

/** `punctual topology APP [--svg FILE]`: prints the app's `describe()`; draws it with --svg. Returns the exit code. */
export async function topologyCommand(path: string, opts: { svg?: string }, io: Io): Promise<number> {
  let topology
  try {
    topology = (await loadApp(path, 'topology')).topology()
  } catch (err) {
    if (!(err instanceof PunctualError)) throw err
    io.err(err.message)
    return 2
  }
  io.out(topology.describe().trimEnd())
  if (opts.svg !== undefined) {
    writeFileSync(opts.svg, topologySvg(topology))
    io.err(`punctual topology: drawn to ${opts.svg}`)
  }
  return 0
}
