/**
 * A value as an error message shows it: numbers as JavaScript writes them (`NaN`, `Infinity`, where
 * JSON.stringify writes `null`), bigints with their `n`, strings quoted, other data as JSON.
 */
export function shownValue(v: unknown): string {
  switch (typeof v) {
    case 'number':
    case 'boolean':
    case 'undefined':
    case 'symbol':
      return String(v)
    case 'bigint':
      return `${v}n`
    case 'function':
      return 'a function'
    default:
      try {
        return JSON.stringify(v) ?? String(v)
      } catch {
        return String(v)
      }
  }
}
