import { PunctualError } from '../errors.js'
import type { Logger } from '../util/logger.js'
import { ClientLog } from './client-logs.js'
import type { ReportingClient } from './client-supplier.js'

/**
 * Sends a consumer's own reports to the logger (`ClientLog`): librdkafka's log lines at the level of
 * their severity, its errors as warnings, each text once a minute. It retries connections itself; a
 * fatal error stops the runtime through `fail` (none: logged only, as a restore consumer's, whose
 * failures reach the runtime through its reader).
 */
export function watchReports(client: ReportingClient, name: string, logger: Logger, fail?: (err: Error) => void): void {
  const log = new ClientLog(logger, name)
  client.on('event.log', (line) => log.line(line))
  client.on('event.error', (err) => {
    if (err.isFatal === true && fail !== undefined) fail(new PunctualError('ILLEGAL_STATE', `the Kafka ${name} failed: ${err.message}`, { cause: err }))
    else log.error(err)
  })
}
