import type { Database, Key, RootDatabase } from 'lmdb'
import { writeKey } from 'ordered-binary'

/** Bytes per journal chunk (one lmdb value) at most; an op larger than this gets a chunk of its own size. */
const CHUNK_BYTES = 1 << 20
/**
 * A commit's first chunk: each next one is 4 times larger, up to CHUNK_BYTES, so that a small commit
 * (a few entries every commit interval) does not take a mebibyte it holds until it is applied.
 */
const FIRST_CHUNK_BYTES = 1 << 14
/** Room a key may need (lmdb keys are at most 1,978 bytes; ordered-binary writes no more). */
const KEY_ROOM = 4096
/** The value length that marks a removal. */
const REMOVED = 0xffffffff
/** A sealed commit's marker: [seq, SEALED] sorts before its chunks [seq, 0..]. */
const SEALED = -1

/**
 * The write-ahead journal of the checkpoint store's commits. A commit can change hundreds of thousands of
 * keyed entries, and lmdb-js queues each put on the main thread (about a microsecond and a half here,
 * besides encoding): queued in one event turn, that held the event loop for tens of milliseconds, and
 * every wall-clock punctuation due then waited. Through the journal, a commit writes its ops as a few
 * large values (`[seq, chunk]`), then, in the turn that makes it durable, one small marker (`[seq,
 * SEALED]`) beside its other writes; only then are the ops applied to the keyed database, a slice per
 * event turn, in as many lmdb transactions as that takes, and the journal entries deleted with the last.
 * A process that stops in between leaves a sealed commit that the next open applies again (puts and
 * removals of whole values: applying twice is applying once), and an unsealed one that it drops.
 */
export class CommitJournal {
  private seq = 0

  private constructor(
    private readonly journal: Database<Buffer, number[]>,
    /** The keyed database, binary: ops are applied as the bytes the journal holds. */
    private readonly target: Database<Buffer, Key>,
  ) {}

  /**
   * Opens the journal (database `journalName`) of the database `targetName` in `env` and finishes what a
   * stopped process left (`recover`).
   */
  static open(env: RootDatabase, targetName: string, journalName = 'journal', targetKeys: { keyEncoding?: 'binary' } = {}): CommitJournal {
    // The target opened as its owner opens it (`targetKeys`): a second handle of one database with
    // another key encoding changes how lmdb-js reads keys through the first.
    const journal = new CommitJournal(env.openDB<Buffer, number[]>({ name: journalName, encoding: 'binary' }), env.openDB<Buffer, Key>({ name: targetName, encoding: 'binary', ...targetKeys }))
    journal.recover(env)
    return journal
  }

  /**
   * Applies every sealed commit in the journal (in commit order) and drops unsealed ones, in one
   * synchronous transaction; returns how many commits it applied.
   */
  private recover(env: RootDatabase): number {
    const commits = new Map<number, { sealed: boolean; chunks: Buffer[]; keys: number[][] }>()
    for (const { key, value } of this.journal.getRange()) {
      const seq = key[0] as number
      let c = commits.get(seq)
      if (c === undefined) commits.set(seq, (c = { sealed: false, chunks: [], keys: [] }))
      c.keys.push(key)
      if (key[1] === SEALED) c.sealed = true
      else c.chunks.push(Buffer.from(value))
    }
    if (commits.size === 0) return 0
    let applied = 0
    env.transactionSync(() => {
      for (const c of commits.values()) {
        if (c.sealed) {
          for (const chunk of c.chunks) applyOps(this.target, chunk, 0, Infinity, undefined, true)
          applied++
        }
        for (const k of c.keys) this.journal.removeSync(k)
      }
    })
    return applied
  }

  /** A new commit's journal write. */
  begin(): JournalWrite {
    return new JournalWrite(this.journal, this.target, ++this.seq)
  }
}

/**
 * One commit's ops: encoded into chunks as they are added, sealed, then applied a slice at a time.
 * Keys are ordered-binary (what lmdb writes for a key), values the keyed database's own encoding.
 */
export class JournalWrite {
  private readonly chunks: Buffer[] = []
  private chunk: Buffer | undefined
  private used = 0
  private ops = 0
  private nextChunkBytes = FIRST_CHUNK_BYTES
  /** Where `apply` stands: chunk index and byte offset. */
  private applyChunk = 0
  private applyAt = 0

  constructor(
    private readonly journal: Database<Buffer, number[]>,
    private readonly target: Database<Buffer, Key>,
    private readonly seq: number,
  ) {}

  /** Ops added so far. */
  get size(): number {
    return this.ops
  }

  /** Puts `value` (already encoded) at `key`. */
  put(key: Key, value: Uint8Array): void {
    const chunk = this.room(KEY_ROOM + 6 + value.length)
    const keyEnd = writeKey(key, chunk, this.used + 2)
    checkKeySize(key, keyEnd - this.used - 2)
    chunk.writeUInt16LE(keyEnd - this.used - 2, this.used)
    chunk.writeUInt32LE(value.length, keyEnd)
    chunk.set(value, keyEnd + 4)
    this.used = keyEnd + 4 + value.length
    this.ops++
  }

  /** Removes `key`. */
  remove(key: Key): void {
    const chunk = this.room(KEY_ROOM + 6)
    const keyEnd = writeKey(key, chunk, this.used + 2)
    checkKeySize(key, keyEnd - this.used - 2)
    chunk.writeUInt16LE(keyEnd - this.used - 2, this.used)
    chunk.writeUInt32LE(REMOVED, keyEnd)
    this.used = keyEnd + 4
    this.ops++
  }

  /**
   * Queues the chunks and the marker: the caller queues its other writes of the commit in the same
   * event turn, so that lmdb commits them with the marker, in one transaction.
   */
  seal(): void {
    this.closeChunk()
    const handled = new Handled()
    for (let i = 0; i < this.chunks.length; i++) handled.add(this.journal.put([this.seq, i], this.chunks[i] as Buffer))
    handled.add(this.journal.put([this.seq, SEALED], EMPTY))
  }

  /**
   * Queues ops on the keyed database until `deadline` (performance.now()); true once every op is queued,
   * together with the deletion of this commit's journal entries (so they are committed after the ops).
   */
  apply(deadline: number): boolean {
    const handled = new Handled()
    while (this.applyChunk < this.chunks.length) {
      const chunk = this.chunks[this.applyChunk] as Buffer
      this.applyAt = applyOps(this.target, chunk, this.applyAt, deadline, handled)
      if (this.applyAt < chunk.length) return false
      this.applyChunk++
      this.applyAt = 0
    }
    for (let i = 0; i < this.chunks.length; i++) handled.add(this.journal.remove([this.seq, i]))
    handled.add(this.journal.remove([this.seq, SEALED]))
    return true
  }

  /** The current chunk, with room for `bytes` more (a new chunk when it has not). */
  private room(bytes: number): Buffer {
    if (this.chunk !== undefined && this.used + bytes <= this.chunk.length) return this.chunk
    this.closeChunk()
    this.chunk = Buffer.allocUnsafe(Math.max(this.nextChunkBytes, bytes))
    this.nextChunkBytes = Math.min(CHUNK_BYTES, this.nextChunkBytes * 4)
    this.used = 0
    return this.chunk
  }

  private closeChunk(): void {
    if (this.chunk === undefined) return
    if (this.used > 0) this.chunks.push(this.chunk.subarray(0, this.used))
    this.chunk = undefined
    this.used = 0
  }
}

const EMPTY = Buffer.alloc(0)
/** lmdb's largest key, in bytes. */
export const MAX_KEY_BYTES = 1978

/**
 * Refuses a key lmdb would refuse when the journal is applied, before the commit is sealed: a sealed
 * commit holding it could never be applied, and every later open would fail on it.
 */
function checkKeySize(key: Key, bytes: number): void {
  if (bytes <= MAX_KEY_BYTES) return
  const parts = Array.isArray(key) ? key : []
  const of = parts[0] === 'kv' ? `a key of store "${String(parts[2])}"` : parts[0] === 's' ? `a key of keyed state "${String(parts[2])}"` : parts[0] === 'T' ? 'a timer key' : 'a key'
  throw new Error(`${of} of task ${String(parts[1])} takes ${bytes} bytes on disk, more than the state directory's limit of ${MAX_KEY_BYTES} (lmdb's): keep store keys shorter`)
}
/** Ops between two looks at the clock. */
const OPS_PER_CHECK = 256

/**
 * The promises of queued writes, each given a handler once. lmdb-js gives the writes of one event turn
 * a few promises (the turn's first write its own), all rejected when their transaction fails; the
 * caller learns of a failure through the environment's `committed`, and an unhandled one would end
 * the process.
 */
export class Handled {
  private last: unknown

  add(written: Promise<unknown> | undefined): void {
    if (written === this.last || written === undefined || typeof written.then !== 'function') return
    this.last = written
    written.then(undefined, ignore)
  }
}

const ignore = (): void => {}

/**
 * Queues a chunk's ops from byte `at` until `deadline`; returns where it stopped (the chunk's length
 * when done). `now`: writes them inside the caller's synchronous transaction instead (recovery: lmdb-js
 * queues its asynchronous writes outside it).
 */
function applyOps(target: Database<Buffer, Key>, chunk: Buffer, at: number, deadline: number, handled?: Handled, now = false): number {
  let n = 0
  while (at < chunk.length) {
    if (++n % OPS_PER_CHECK === 0 && performance.now() >= deadline) return at
    const keyLength = chunk.readUInt16LE(at)
    const key = chunk.subarray(at + 2, at + 2 + keyLength)
    const valueLength = chunk.readUInt32LE(at + 2 + keyLength)
    at += 6 + keyLength
    if (valueLength === REMOVED) {
      if (now) target.removeSync(key)
      else handled?.add(target.remove(key))
    } else {
      const value = chunk.subarray(at, at + valueLength)
      if (now) target.putSync(key, value)
      else handled?.add(target.put(key, value))
      at += valueLength
    }
  }
  return at
}
