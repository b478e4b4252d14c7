import { tmpdir } from 'node:os'
import { join } from 'node:path'

let counter = 0

/** A fresh directory path under the system temp dir, for an application that set no state directory. */
export function temporaryStateDir(applicationId: string): string {
  return join(tmpdir(), 'punctual', `${applicationId}-${process.pid}-${Date.now()}-${counter++}`)
}
