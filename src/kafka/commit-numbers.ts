/**
 * At least once, a task's commits are numbered. Every changelog record of commit n carries n in the
 * header `punctual.commit`; the commit's offsets carry a mark in their metadata once every record is
 * acknowledged: `punctual.commit=n`, then `;void=a-b,c-d` for numbers whose records a restore left out.
 * A restore applies a numbered record only if the group's mark covers it (`covers`): n at most the
 * mark's, and in no void range. Records of a commit a crash cut short are so left out at once and at
 * every later restore, even once later commits pass their numbers.
 */
export const COMMIT_HEADER = 'punctual.commit'
const PREFIX = 'punctual.commit='
const VOID = ';void='
/**
 * Void ranges a mark keeps: each comes from a crash during a commit's flush. Past this many, the oldest
 * goes (its records were most likely compacted away by then), which keeps the mark far below Kafka's
 * offset.metadata.max.bytes (4,096 by default).
 */
const MAX_VOIDS = 64

/** What the group's offsets of a task say: its last complete commit, and numbers to leave out. */
export interface CommitMark {
  readonly n: number
  readonly voids: ReadonlyArray<readonly [from: number, to: number]>
}

export const NO_COMMIT: CommitMark = { n: 0, voids: [] }

/** The header value of commit `n`: six bytes, big-endian. */
export function commitHeaderValue(n: number): Buffer {
  const b = Buffer.allocUnsafe(6)
  b.writeUIntBE(n, 0, 6)
  return b
}

export function readCommitHeader(value: Uint8Array): number | undefined {
  return value.byteLength === 6 ? Buffer.from(value.buffer, value.byteOffset, 6).readUIntBE(0, 6) : undefined
}

export function formatCommitMark(mark: CommitMark): string {
  const voids = mark.voids.length === 0 ? '' : `${VOID}${mark.voids.map(([a, b]) => `${a}-${b}`).join(',')}`
  return `${PREFIX}${mark.n}${voids}`
}

/** The mark in an offset's metadata; undefined when it has none (never committed at least once) or it is malformed. */
export function parseCommitMark(metadata: string | undefined): CommitMark | undefined {
  if (metadata === undefined || !metadata.startsWith(PREFIX)) return undefined
  const [head, ranges] = metadata.slice(PREFIX.length).split(VOID) as [string, string | undefined]
  const n = number(head)
  if (n === undefined) return undefined
  const voids: Array<[number, number]> = []
  for (const range of ranges === undefined || ranges === '' ? [] : ranges.split(',')) {
    const [a, b] = range.split('-')
    const from = number(a)
    const to = number(b)
    if (from === undefined || to === undefined || from > to) return undefined
    voids.push([from, to])
  }
  return { n, voids }
}

/** Whether the record of commit `n` belongs to a complete commit by this mark. */
export function covers(mark: CommitMark, n: number): boolean {
  if (n > mark.n) return false
  for (const [from, to] of mark.voids) if (n >= from && n <= to) return false
  return true
}

/**
 * The mark a task goes on from after a restore that left out records numbered up to `highestLeftOut`
 * (0: none): its next commit is numbered past them, and they stay void.
 */
export function afterRestore(mark: CommitMark, highestLeftOut: number): CommitMark {
  if (highestLeftOut <= mark.n) return mark
  const voids = [...mark.voids, [mark.n + 1, highestLeftOut] as const].slice(-MAX_VOIDS)
  return { n: highestLeftOut, voids }
}

function number(text: string | undefined): number | undefined {
  if (text === undefined || !/^\d+$/.test(text)) return undefined
  const n = Number(text)
  return Number.isSafeInteger(n) ? n : undefined
}
