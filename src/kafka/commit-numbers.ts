/**
 * At least once, a task's commits are numbered. Every changelog record of commit n carries n in the
 * header `punctual.commit`; the commit's offsets carry a mark in their metadata once every record is
 * acknowledged: `punctual.commit=n`, then `;void=a-b,c-d` for numbers whose records a restore left out.
 * A restore applies a numbered record only if the group's mark covers it (`covers`): n at most the
 * mark's, and in no void range. Records of a commit a crash cut short are so left out at once and at
 * every later restore, even once later commits pass their numbers.
 *
 * Owner epochs. A member paused past its session timeout (a zombie) does not know yet that its tasks
 * went to another member: when it resumes it writes its next commit's changelog records before its
 * group commit fails (UNKNOWN_MEMBER_ID). Numbered one past its last mark, they would carry the very
 * numbers the new owner uses for its own commits, and once the new owner's mark passes them, a restore
 * would apply them over the newer state (last value wins): a count below the truth, an update lost.
 * Kafka Streams has the same open problem at least once (KAFKA-12693: a zombie's appends interleave with
 * the new owner's in the changelog; only exactly-once fences them). So a commit number is
 * `epoch * 2^28 + seq`: every ownership of a task has its own epoch, and numbers its commits 1, 2, ...
 * within it (`seq`, never 0). A new owner, before it writes anything, makes the group's offsets carry
 * `claimMark(previous)`: the next epoch, none of its commits yet, and everything of the older epochs
 * past the previous mark void (what a zombie may still write). It does so by a strict offset commit,
 * which the group refuses to a fenced member, so two owners never share an epoch and every number a
 * zombie writes afterwards is void. The numbers keep their order (epoch in the high bits) and fit the
 * header's six bytes: epochs 0 to 2^20 - 1, each with 2^28 - 1 commits (`SEQ_MAX`).
 *
 * An owner that uses up its epoch's numbers moves to the next epoch the same way, by a claim the
 * group takes (see `KafkaCommitBackend`). Marks written before epochs existed (small numbers) are marks
 * of epoch 0: their text is unchanged.
 */
import { PunctualError } from '../errors.js'

export const COMMIT_HEADER = 'punctual.commit'
const PREFIX = 'punctual.commit='
const VOID = ';void='
/**
 * Void ranges a mark keeps: each comes from a crash during a commit's flush or from a change of owner.
 * Past this many, the oldest goes (its records were most likely compacted away by then), which keeps
 * the mark far below Kafka's offset.metadata.max.bytes (4,096 by default). A zombie's record whose void
 * went is still left out when a newer owner's record precedes it in its topic (`ChangelogReader`).
 */
const MAX_VOIDS = 64
/** Commits per epoch: the numbers of epoch e are e * EPOCH_SIZE + 1 to e * EPOCH_SIZE + SEQ_MAX. */
export const EPOCH_SIZE = 2 ** 28
export const SEQ_MAX = EPOCH_SIZE - 1
/** The last epoch whose numbers fit the header's six bytes (2^48 - 1 at most). */
export const MAX_EPOCH = 2 ** 20 - 1

/** What the group's offsets of a task say: its last complete commit, and numbers to leave out. */
export interface CommitMark {
  readonly n: number
  readonly voids: ReadonlyArray<readonly [from: number, to: number]>
}

export const NO_COMMIT: CommitMark = { n: 0, voids: [] }

/** The epoch (ownership) of commit number `n`. */
export function epochOf(n: number): number {
  return Math.floor(n / EPOCH_SIZE)
}

/** The commit's place within its epoch: 1 for an owner's first commit, 0 for a claim (no commit yet). */
export function seqOf(n: number): number {
  return n % EPOCH_SIZE
}

/**
 * The mark a new owner of a task commits to the group, by a strict offset commit (one a fenced member
 * cannot make), before it writes anything of the task: the epoch after the previous mark's, with none
 * of its commits yet (n is the epoch's base, a number no commit carries), and the previous mark's
 * numbers past its n void up to the new epoch: whatever a fenced owner writes there is never applied.
 * Its commits are then numbered n + 1, n + 2, ... Claims in a row with no commit in between keep one
 * void range (the bases between them are never written). Throws once the epochs are used up.
 */
export function claimMark(previous: CommitMark): CommitMark {
  const epoch = epochOf(previous.n) + 1
  if (epoch > MAX_EPOCH) {
    throw new PunctualError('ILLEGAL_STATE', `at-least-once commit numbers: the task's ${MAX_EPOCH + 1} owner epochs are used up (its group offsets' mark ${formatCommitMark(previous)})`)
  }
  const n = epoch * EPOCH_SIZE
  if (previous.n + 1 > n - 1) return { n, voids: previous.voids }
  const last = previous.voids.at(-1)
  if (last !== undefined && seqOf(previous.n) === 0 && last[1] === previous.n - 1) {
    return { n, voids: [...previous.voids.slice(0, -1), [last[0], n - 1] as const] }
  }
  return { n, voids: [...previous.voids, [previous.n + 1, n - 1] as const].slice(-MAX_VOIDS) }
}

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

/**
 * The mark in an offset's metadata; undefined when it has none (never committed at least once) or it is
 * malformed. A mark written before epochs (small numbers) reads as a mark of epoch 0.
 */
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

/** A task's mark from its input partitions' offset metadata: the one with the highest number (none: `NO_COMMIT`). */
export function taskMark(metadata: ReadonlyArray<string | undefined>): CommitMark {
  let mark = NO_COMMIT
  for (const text of metadata) {
    const m = parseCommitMark(text)
    if (m !== undefined && m.n > mark.n) mark = m
  }
  return mark
}

/** Whether the record of commit `n` belongs to a complete commit by this mark. */
export function covers(mark: CommitMark, n: number): boolean {
  if (n > mark.n) return false
  for (const [from, to] of mark.voids) if (n >= from && n <= to) return false
  return true
}

/**
 * The mark a task goes on from after a restore that left out records numbered up to `highestLeftOut`
 * (0: none): its next commit is numbered past them, and they stay void. After a claim, what a restore
 * leaves out is of older epochs (the claim's n is past it, and its void covers it): the mark stays the
 * claim's, and the next commit is the epoch's first.
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
