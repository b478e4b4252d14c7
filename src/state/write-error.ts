import { PunctualError } from '../errors.js'

/** A failed write of the checkpoint store, as the error that stops the runtime: what failed, and why (a full disk said so). */
export function writeError(err: unknown): PunctualError {
  const code = (err as NodeJS.ErrnoException).code
  const message = (err as Error).message
  // lmdb reports a failed write of a full disk as ENOSPC, or as an I/O error; a file size limit as EFBIG.
  const why =
    code === 'ENOSPC' || /MDB_MAP_FULL|No space/i.test(message)
      ? 'the disk or the store is full'
      : /Input\/output error|too large|EFBIG|EIO/i.test(message)
        ? `${message} (is the disk full?)`
        : message
  return new PunctualError('STATE_DIR', `cannot write checkpoints: ${why}`, { cause: err, fatal: true })
}
