import { PunctualError } from '../errors.js'

/**
 * An error as the command line prints it. punctual's own errors are one line: their message says what
 * is wrong and what to do. Anything else comes from the user's code (a TypeError in `topology()`, a
 * rejected `start`) or from below punctual, and its stack is what finds the line at fault; so is the
 * stack of user code that a processing error wraps.
 */
export function describeError(err: unknown): string {
  if (err instanceof PunctualError) {
    const cause = err.cause
    if (err.code === 'PROCESSING' && cause instanceof Error && !(cause instanceof PunctualError)) return `${err.message}\ncaused by ${stackOf(cause)}`
    return err.message
  }
  if (err instanceof Error) return stackOf(err)
  return String(err)
}

function stackOf(err: Error): string {
  return err.stack ?? `${err.name}: ${err.message}`
}
