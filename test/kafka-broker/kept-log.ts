import { createConsoleLogger } from '../../src/index.js'
import type { Logger } from '../../src/util/logger.js'

/** A runtime's log for a test: its lines kept, and printed should the test fail. */
export interface KeptLog {
  readonly logger: Logger
  /** The lines of the test running now. */
  readonly lines: readonly string[]
  /** Runs a test body; on failure, prints the lines kept meanwhile. */
  printingOnFailure(body: () => Promise<void>): Promise<void>
}

/**
 * The log of a test file's runtimes: info lines kept (PUNCTUAL_KAFKA_TEST_DEBUG=1: debug lines, also
 * written to stderr as they come).
 */
export function keptLog(): KeptLog {
  const debug = process.env.PUNCTUAL_KAFKA_TEST_DEBUG === '1'
  const lines: string[] = []
  const logger = createConsoleLogger({
    level: debug ? 'debug' : 'info',
    write: (line) => {
      if (debug) process.stderr.write(`${line}\n`)
      lines.push(line)
    },
  })
  return {
    logger,
    lines,
    async printingOnFailure(body) {
      lines.length = 0
      try {
        await body()
      } catch (err) {
        process.stderr.write(`the runtime's log:\n${lines.join('\n')}\n`)
        throw err
      }
    },
  }
}
