/**
 * Which processor node an exception came from. A record passes down a chain of nodes in nested calls,
 * so the exception unwinds through every ancestor before the task sees it: the innermost node marks it
 * and the ones above leave the mark alone. A WeakMap keeps the error object as the user threw it.
 */
const thrownInNode = new WeakMap<object, string>()

/** Marks `err` as thrown in node `name` unless a node below already did; returns it for rethrowing. */
export function markFailedNode(err: unknown, name: string): unknown {
  if (typeof err === 'object' && err !== null && !thrownInNode.has(err)) thrownInNode.set(err, name)
  return err
}

/** The node that threw `err`, if a node marked it (a thrown primitive cannot be marked). */
export function failedNodeOf(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null ? thrownInNode.get(err) : undefined
}
